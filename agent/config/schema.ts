// The agent's config schema: one JSON Schema that validation, defaults, the config's TypeScript
// type and docs/configuration.md all come from. Units are in the key names. Each section's
// schema lives with the module that owns it (the pod stage: control, racks, cdu; the
// supervisor; the drivers; the uplink; metrics; the HMI; logging); this file puts them together.
import type { ModbusConfig } from "../../drivers/modbus/config.js";
import { MODBUS_SCHEMA } from "../../drivers/modbus/config.js";
import { MQTT_INGEST_SCHEMA, type IngestConfig } from "../../drivers/mqtt-ingest-schema.js";
import { REDFISH_CLIENT_SCHEMA } from "../../drivers/redfish/config.js";
import { obj, optional, str, typed, type Infer } from "../../lib/schema-builders.js";
import { CDU_SCHEMA, CONTROL_SCHEMA, ident, RACKS_SCHEMA } from "../../pod/config.js";
import { HMI_SCHEMA } from "../hmi/schema.js";
import { REDFISH_SCHEMA } from "../redfish/schema.js";
import { LOG_SCHEMA } from "../log-schema.js";
import { METRICS_SCHEMA } from "../ops/metrics-schema.js";
import { RECORDER_SCHEMA } from "../recorder/schema.js";
import { RELEASE_SCHEMA } from "../release/schema.js";
import { CONFIG_PUSH_SCHEMA } from "../config-push/schema.js";
import { PARTIAL_STROKE_SCHEMA, VALVE_HEALTH_SCHEMA } from "../health/schema.js";
import { SUPERVISOR_SCHEMA } from "../supervisor/schema.js";
import { UPLINK_SCHEMA, type UplinkConfig } from "../uplink/schema.js";

export const AGENT_SCHEMA = {
  $id: "podwarden-agent",
  patternProperties: { "^x-": { description: "ignored: a place for YAML anchors" } },
  ...obj(
    {
      site: ident("site id: the second level of every MQTT topic"),
      pod: ident("pod id: the third level of every MQTT topic"),
      stateDir: optional(
        str(
          "directory for state that must survive a restart (leak latches, power budget, spool, replay guard); default $STATE_DIRECTORY, set by systemd's StateDirectory; one daemon per directory, and a reload cannot change it",
          { minLength: 1 },
        ),
      ),
      control: CONTROL_SCHEMA,
      racks: RACKS_SCHEMA,
      cdu: CDU_SCHEMA,
      supervisor: SUPERVISOR_SCHEMA,
      modbus: typed<ModbusConfig>({ ...MODBUS_SCHEMA, default: {} }),
      uplink: optional(typed<UplinkConfig>(UPLINK_SCHEMA)),
      metrics: METRICS_SCHEMA,
      hmi: HMI_SCHEMA,
      redfish: REDFISH_SCHEMA,
      mqttIngest: optional(typed<IngestConfig>(MQTT_INGEST_SCHEMA)),
      redfishClient: REDFISH_CLIENT_SCHEMA,
      recorder: RECORDER_SCHEMA,
      release: RELEASE_SCHEMA,
      configPush: CONFIG_PUSH_SCHEMA,
      valveHealth: VALVE_HEALTH_SCHEMA,
      partialStroke: PARTIAL_STROKE_SCHEMA,
      log: LOG_SCHEMA,
    },
    "a podwarden config",
    ["site", "pod", "racks", "cdu"],
  ),
};

/** The whole config as validation returns it (defaults filled in), derived from the schema. */
export type AgentConfigData = Infer<typeof AGENT_SCHEMA>;
