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
import { SPARKPLUG_SCHEMA } from "../agent/uplink/sparkplug/schema.js";
import { REDFISH_SCHEMA } from "../agent/redfish/schema.js";
import { REDFISH_DEVICE_SCHEMA } from "../drivers/redfish/config.js";
import { HIL_SCENARIO_SCHEMA } from "../hil/scenario.js";
import { RIG_SCHEMA } from "../hil/rig.js";
import { modelSourceOf, sparkplugModel, type MetricDef } from "../agent/uplink/sparkplug/metrics.js";

function failSafeTableOf(c: ReturnType<typeof demoAgentConfig>): string {
  return failSafeTable(c, c.supervisor.escalation);
}

/** The demo pod's Sparkplug metrics: the node's, the CDU's, and one rack's (every rack has the same). */
function sparkplugMetricTable(c: ReturnType<typeof demoAgentConfig>): string {
  const model = sparkplugModel(modelSourceOf(c, "<sha256 of the config>", "<version>"));
  const row = (where: string, m: Pick<MetricDef, "name" | "type" | "unit" | "alias" | "description" | "setpointLoop">): string =>
    `| ${where} | \`${m.name}\` | ${m.alias ?? "none"} | ${m.type} | ${m.unit ?? ""} | ${m.description}${m.setpointLoop === undefined ? "" : ` (writable when \`${m.setpointLoop}\` is in writableSetpoints)`} |`;
  const rack = model.devices[1];
  return [
    "| device | metric | alias | datatype | unit | what it is |",
    "|---|---|---|---|---|---|",
    row("(node)", { name: "bdSeq", type: "Int64", description: "the session's birth/death sequence number (NBIRTH and NDEATH only)" }),
    row("(node)", { name: "Node Control/Rebirth", type: "Boolean", description: "false in the NBIRTH; an NCMD writing true asks for a new birth set" }),
    ...model.node.map((m) => row("(node)", m)),
    ...model.devices[0].metrics.map((m) => row("CDU", m)),
    ...rack.metrics.map((m) => row(`${rack.id} (each rack)`, m)),
    "",
    `Aliases as numbered for the demo pod (${model.devices.length - 1} racks): node metrics first, then the CDU's, then each rack's in config order. A rack's optional points (\`valvePositionPct\`) add metrics, and shift the aliases after them.`,
  ].join("\n");
}

export function generatedDocs(): Record<string, Record<string, string>> {
  const maps = registerMapDocs();
  return {
    "docs/configuration.md": { "agent-config": schemaTable(AGENT_SCHEMA) },
    "docs/hil.md": { "hil-scenario": schemaTable(HIL_SCENARIO_SCHEMA), "hil-rig": schemaTable(RIG_SCHEMA) },
    "docs/safety.md": { "fail-safe-matrix": failSafeTableOf(demoAgentConfig()) },
    "docs/hmi.md": { "hmi-config": schemaTable(HMI_SCHEMA) },
    "docs/redfish.md": { "redfish-config": schemaTable(REDFISH_SCHEMA), "redfish-client-device": schemaTable(REDFISH_DEVICE_SCHEMA) },
    "docs/sparkplug.md": { "sparkplug-config": schemaTable(SPARKPLUG_SCHEMA), "sparkplug-metrics": sparkplugMetricTable(demoAgentConfig()) },
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
