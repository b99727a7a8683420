// The agent's config schema: one JSON Schema that validation, defaults and
// docs/configuration.md all come from. Units are in the key names. Each section's schema lives
// with the module that owns it (the pod stage: control, racks, cdu; the supervisor; the drivers;
// the uplink; metrics); this file puts them together.
import { MODBUS_SCHEMA } from "../../drivers/modbus/config.js";
import { MQTT_INGEST_SCHEMA } from "../../drivers/mqtt-ingest-schema.js";
import { UPLINK_SCHEMA } from "../uplink/schema.js";
import { METRICS_SCHEMA } from "../ops/metrics-schema.js";
import { CDU_SCHEMA, CONTROL_SCHEMA, IDENT_SCHEMA, RACKS_SCHEMA } from "../../pod/config.js";
import { SUPERVISOR_SCHEMA } from "../supervisor/schema.js";
import { LOG_SCHEMA } from "../log-schema.js";

export const AGENT_SCHEMA = {
  $id: "podwarden-agent",
  type: "object",
  additionalProperties: false,
  required: ["site", "pod", "racks", "cdu"],
  patternProperties: { "^x-": { description: "ignored: a place for YAML anchors" } },
  properties: {
    site: { ...IDENT_SCHEMA, description: "site id: the second level of every MQTT topic" },
    pod: { ...IDENT_SCHEMA, description: "pod id: the third level of every MQTT topic" },
    stateDir: { type: "string", minLength: 1, description: "directory for state that must survive a restart (leak latches, power budget, spool, replay guard); default $STATE_DIRECTORY, set by systemd's StateDirectory; one daemon per directory, and a reload cannot change it" },
    control: CONTROL_SCHEMA,
    racks: RACKS_SCHEMA,
    cdu: CDU_SCHEMA,
    supervisor: SUPERVISOR_SCHEMA,
    modbus: { ...MODBUS_SCHEMA, default: {} },
    uplink: UPLINK_SCHEMA,
    metrics: METRICS_SCHEMA,
    mqttIngest: MQTT_INGEST_SCHEMA,
    log: LOG_SCHEMA,
  },
};
