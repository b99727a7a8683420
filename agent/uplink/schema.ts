// The uplink's config keys (kept apart from uplink.ts so config checking does not load mqtt).
export interface UplinkConfig {
  url: string;
  clientId?: string;
  username?: string;
  password?: string;
  telemetryMs: number;
  keepaliveS: number;
}

/** Broker connection keys, shared by the uplink and MQTT sensor ingest. */
export function mqttConnectionProperties(defaultClientId: string): Record<string, object> {
  return {
    url: { type: "string", description: "broker URL, e.g. mqtt://127.0.0.1:1883" },
    clientId: { type: "string", description: `client id (default ${defaultClientId}); one session per client id` },
    username: { type: "string", description: "user name (${ENV} allowed)" },
    password: { type: "string", description: "password: use ${ENV_VAR}, not a literal" },
  };
}

export const UPLINK_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["url"],
  description: "MQTT uplink to mission control",
  properties: {
    ...mqttConnectionProperties("podwarden-<site>-<pod>"),
    telemetryMs: { type: "integer", minimum: 100, maximum: 3_600_000, default: 1000, description: "telemetry period, ms" },
    keepaliveS: { type: "integer", minimum: 1, maximum: 3600, default: 10, description: "MQTT keepalive, s" },
  },
};

