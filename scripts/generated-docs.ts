// Which generated sections each doc has, and their content from the code.
import { AGENT_SCHEMA } from "../agent/config/schema.js";
import { MODBUS_SCHEMA } from "../drivers/modbus/config.js";
import { MQTT_INGEST_POINT_SCHEMA } from "../drivers/mqtt-ingest-schema.js";
import { schemaTable } from "../lib/schema-doc.js";
import { SIM_SCHEMA } from "../sim/config.js";
import { FAULT_ACTION_SCHEMA } from "../sim/faults.js";
import { registerMapDocs } from "../sim/devices/register-doc.js";
import { demoAgentConfig } from "../cli/demo-config.js";
import { failSafeTable } from "../pod/fail-safe.js";
import { HMI_SCHEMA } from "../agent/hmi/schema.js";

function failSafeTableOf(c: ReturnType<typeof demoAgentConfig>): string {
  return failSafeTable(c, c.supervisor.escalation);
}

export function generatedDocs(): Record<string, Record<string, string>> {
  const maps = registerMapDocs();
  return {
    "docs/configuration.md": { "agent-config": schemaTable(AGENT_SCHEMA) },
    "docs/safety.md": { "fail-safe-matrix": failSafeTableOf(demoAgentConfig()) },
    "docs/hmi.md": { "hmi-config": schemaTable(HMI_SCHEMA) },
    "docs/drivers.md": {
      "modbus-config": schemaTable(MODBUS_SCHEMA),
      "mqtt-ingest-point": schemaTable(MQTT_INGEST_POINT_SCHEMA),
    },
    "docs/simulator.md": {
      "sim-config": schemaTable(SIM_SCHEMA),
      "fault-actions": schemaTable(FAULT_ACTION_SCHEMA),
      "cdu-registers": maps.cdu,
      "rack-registers": maps.rack,
    },
  };
}
