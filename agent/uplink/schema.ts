// The uplink's config keys (kept apart from uplink.ts so config checking does not load mqtt).
import { BROKER_URL_PATTERN, mqttConnectionProperties, type MqttConnectionConfig } from "../../lib/mqtt-connection.js";
import { int, num, obj, str } from "../../lib/schema-builders.js";
import { ROLES, type Role } from "../commands/schema.js";
import { SPARKPLUG_SCHEMA, type SparkplugConfig } from "./sparkplug/schema.js";
import type { ConsumerAckConfig } from "./consumer-ack.js";

export interface UplinkConfig extends Omit<MqttConnectionConfig, "url"> {
  /** one broker; or `brokers`, an ordered list (brokerUrls() gives the list either way) */
  url?: string;
  brokers?: string[];
  protocolVersion: 4 | 5;
  telemetryMs: number;
  exception: { enabled: boolean; checkMs: number; defaultDeadband: number; deadbands: Record<string, number> };
  reconnect: { baseMs: number; maxMs: number };
  spool: { maxBytes: number; segmentBytes: number; fsyncMs: number; maxInflight: number };
  consumerAck: ConsumerAckConfig;
  commands: {
    enabled: boolean;
    keys: { id: string; publicKey: string; roles: Role[] }[];
    maxTtlS: number;
    clockSkewS: number;
    rejectionAuditPerS: number;
    maxPerS: number;
  };
  sparkplug: SparkplugConfig;
}

export const UPLINK_SCHEMA = {
  type: "object",
  additionalProperties: false,
  description: "MQTT uplink to mission control (docs/mqtt.md, docs/security.md); give url or brokers",
  properties: {
    ...mqttConnectionProperties("podwarden-<site>-<pod>"),
    url: str("broker URL, e.g. mqtt://127.0.0.1:1883 or mqtts://broker:8883 (a name with several addresses is tried address by address); or give brokers", { pattern: BROKER_URL_PATTERN }),
    brokers: {
      type: "array",
      minItems: 1,
      maxItems: 64,
      uniqueItems: true,
      items: { type: "string", pattern: BROKER_URL_PATTERN },
      description: "brokers in order of preference, instead of url: the pod stays on one while it works and moves to the next when it is lost, unreachable or silent, wrapping round (docs/fleet.md)",
    },
    protocolVersion: { enum: [4, 5], default: 5, description: "MQTT 3.1.1 (4) or 5; request/response correlation (responseTopic, correlationData) needs 5" },
    telemetryMs: int(100, 3_600_000, 1000, "telemetry period, ms"),
    exception: obj(
      {
        enabled: { type: "boolean", default: true, description: "report-by-exception between periodic snapshots" },
        checkMs: int(10, 60_000, 100, "how often points are compared with what was last reported, ms"),
        defaultDeadband: num(0, 1e9, 0.5, "a point is reported when it moves more than this from its last reported value (in its own unit); a quality change is always reported"),
        deadbands: { type: "object", default: {}, additionalProperties: { type: "number", minimum: 0, maximum: 1e9 }, description: "per-point deadbands: {<point id>: deadband}" },
      },
      "report-by-exception telemetry",
    ),
    reconnect: obj(
      {
        baseMs: int(10, 600_000, 500, "first reconnect delay, ms; doubles per failed attempt, with jitter"),
        maxMs: int(10, 3_600_000, 30_000, "longest reconnect delay, ms"),
      },
      "reconnect backoff (exponential with jitter: each wait between half and all of its ceiling)",
    ),
    spool: obj(
      {
        maxBytes: int(65_536, 1e12, 64 * 1024 * 1024, "on-disk store-and-forward spool size limit, bytes (in stateDir/spool)"),
        segmentBytes: int(4096, 1 << 30, 1024 * 1024, "spool segment file size, bytes: the unit the overflow policy drops"),
        fsyncMs: int(0, 60_000, 1000, "fsync the spool this often, ms, off the event loop (0 = after every record, blocking: docs/mqtt.md)"),
        maxInflight: int(1, 65_535, 256, "QoS 1 messages in flight awaiting PUBACK: paces replay"),
      },
      "store-and-forward spool",
    ),
    consumerAck: obj(
      {
        enabled: {
          type: "boolean",
          default: false,
          description:
            "keep each event (the spool's critical class) until mission control's consumer acknowledges it by seq on <base>/ack ({\"events\": n}), not only until the broker's PUBACK: an event a broker acknowledged and then lost is sent again (docs/fleet.md, end-to-end delivery). Needs a consumer that acknowledges (podwarden fleet watch --ack): without one the events stay in the spool until its overflow policy drops them",
        },
        resendAfterS: int(1, 3600, 10, "every held event sent and answered by the broker, and no acknowledgement moving the mark for this long: they are sent again from the oldest, s"),
        maxResendS: int(1, 86_400, 300, "the wait between resends doubles, up to this, s"),
        maxPerS: int(1, 10_000, 50, "acknowledgements read per second, counted before anything is parsed; beyond it they are dropped unread and counted"),
      },
      "mission control's end-to-end acknowledgement of the pod's events",
    ),
    commands: obj(
      {
        enabled: { type: "boolean", default: true, description: "subscribe to request/<command>" },
        keys: {
          type: "array",
          default: [],
          description: "keys allowed to sign commands; each key once, under one id",
          items: {
            type: "object",
            additionalProperties: false,
            required: ["id", "publicKey", "roles"],
            properties: {
              id: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9_.:-]*$", maxLength: 64, description: "key id, as commands name it (keyId)" },
              publicKey: { type: "string", description: "Ed25519 public key: PEM, or the raw 32 bytes in base64 (`podwarden keygen` prints both)" },
              roles: { type: "array", minItems: 1, uniqueItems: true, items: { enum: ROLES }, description: "observer: snapshot; operator: + setpoint, mode, ack-alarm, isolate-rack, return-rack, record; engineer: + reset-leak, power-budget, tune, gains, stroke" },
            },
          },
        },
        maxTtlS: int(1, 86_400, 300, "longest lifetime a command may declare (expiresAt - issuedAt), s"),
        clockSkewS: int(0, 3600, 30, "how far in the future issuedAt may be, s"),
        rejectionAuditPerS: num(0, 10_000, 10, "rejected commands answered and audited one by one per second; beyond it they are counted and summarised (a flood cannot flood the uplink)"),
        maxPerS: int(1, 10_000, 50, "requests taken per second, counted before anything is parsed or verified; beyond it they are dropped unread, counted and summarised (a flood of forged signatures cannot take the main thread from the leak polls)"),
      },
      "signed commands from mission control",
    ),
    sparkplug: SPARKPLUG_SCHEMA,
  },
};

/** The uplink's brokers in order: `brokers`, or the one `url` (the config check requires one of them). */
export function brokerUrls(c: UplinkConfig): string[] {
  return c.brokers ?? (c.url === undefined ? [] : [c.url]);
}
