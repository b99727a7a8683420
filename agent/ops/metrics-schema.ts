// The metrics endpoint's config keys (apart from metrics.ts so config checking does not load prom-client).
export interface MetricsConfig {
  enabled: boolean;
  host: string;
  port: number;
}

export const METRICS_SCHEMA = {
  type: "object",
  additionalProperties: false,
  default: {},
  description: "Prometheus metrics and health endpoints",
  properties: {
    enabled: { type: "boolean", default: true, description: "serve /metrics, /healthz and /readyz" },
    host: { type: "string", default: "127.0.0.1", description: "address to bind (loopback by default)" },
    port: { type: "integer", minimum: 0, maximum: 65535, default: 9464, description: "port (0 = ephemeral)" },
  },
};

