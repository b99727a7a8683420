// MQTT sensor ingest's config section (`mqttIngest`): its schema and its type, kept apart from
// mqtt-ingest.ts so config checking does not load mqtt.
import { mqttConnectionProperties, type MqttConnectionConfig } from "../lib/mqtt-connection.js";
import { int } from "../lib/schema-builders.js";

export interface IngestPointConfig {
  id: string;
  topic: string;
  /** dotted path into the JSON payload, with [n] for array items; empty = the payload is the number */
  path: string;
  /** path to the sample's source time in the payload; absent = the arrival time */
  timePath?: string;
  /** a numeric source time is epoch milliseconds ("ms") or seconds ("s") */
  timeUnit: "ms" | "s";
  unit?: string;
  staleMs: number;
  scale: number;
  offset: number;
}

export interface IngestConfig extends MqttConnectionConfig {
  protocolVersion: 4 | 5;
  /** a source time further ahead of this controller's wall clock than this is invalid, ms */
  maxClockSkewMs: number;
  points: IngestPointConfig[];
}

export const MQTT_INGEST_POINT_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["id", "topic"],
  properties: {
    id: { type: "string", pattern: "^[A-Za-z][A-Za-z0-9_.-]*$", description: "point id" },
    topic: { type: "string", minLength: 1, description: "topic filter (+ and # allowed)" },
    path: { type: "string", default: "", description: "JSON path: a.b[0].c; empty = bare number payload" },
    timePath: {
      type: "string",
      minLength: 1,
      description: "JSON path to the sample's source time (epoch number, or ISO 8601 with a zone): its age counts from then, and retained messages are used; absent = arrival time, retained messages ignored",
    },
    timeUnit: { enum: ["ms", "s"], default: "ms", description: "unit of a numeric source time (epoch ms or s)" },
    unit: { type: "string", description: "engineering unit" },
    staleMs: { type: "integer", minimum: 10, maximum: 86_400_000, default: 5000, description: "stale after this long without a message, ms" },
    scale: { type: "number", default: 1, description: "engineering = value × scale + offset" },
    offset: { type: "number", default: 0, description: "engineering = value × scale + offset" },
  },
};

export const MQTT_INGEST_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["url", "points"],
  description: "sensors read from MQTT topics",
  properties: {
    ...mqttConnectionProperties("podwarden-<site>-<pod>-ingest"),
    protocolVersion: { enum: [4, 5], default: 5, description: "MQTT 3.1.1 (4) or 5; with 5 the broker is told maxPacketBytes and never delivers a larger message" },
    maxClockSkewMs: int(0, 600_000, 2000, "a source time (points[].timePath) further ahead of this controller's clock than this is invalid, ms"),
    points: { type: "array", items: MQTT_INGEST_POINT_SCHEMA, description: "ingested points" },
  },
};
