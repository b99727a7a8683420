// uplink.sparkplug: the Sparkplug B edge node's config keys (kept apart from the edge node so
// config checking loads neither mqtt nor protobufjs).
import { arr, bool, int, obj, optional, str, type Infer } from "../../../lib/schema-builders.js";

// Sparkplug 3.0 §4.1.2, §4.1.4: group, edge node and device ids are UTF-8 strings without the
// characters that MQTT topics give meaning to (+, /, #)
const SPARKPLUG_ID = { pattern: "^[^+/#]+$", minLength: 1, maxLength: 64 };

export const SPARKPLUG_SCHEMA = obj(
  {
    enabled: bool(false, "publish the pod as a Sparkplug B 3.0 edge node (docs/sparkplug.md), on a connection of its own to the uplink's broker"),
    jsonTopics: bool(true, "keep the native JSON topics (podwarden/<site>/<pod>/...) beside Sparkplug; false: Sparkplug only, and then no signed commands"),
    groupId: str("Sparkplug group id (the topic's group_id)", { ...SPARKPLUG_ID, default: "podwarden" }),
    edgeNodeId: optional(str("Sparkplug edge node id (default: the pod's name)", SPARKPLUG_ID)),
    primaryHostId: optional(str("primary host application id: births wait until spBv1.0/STATE/<id> says online, and data is stored while it is offline and replayed as historical", SPARKPLUG_ID)),
    refreshMs: int(0, 86_400_000, 0, "a full NDATA/DDATA refresh of every metric this often, ms (0: by exception only)"),
    maxStoredMessages: int(0, 1_000_000, 10_000, "DATA messages kept while there is no Sparkplug session (broker or primary host away), replayed as historical; the oldest go first beyond it, and the metric Sparkplug/Dropped Messages counts them"),
    rebirthMinMs: int(0, 600_000, 2000, "at most one rebirth per this long, ms: the requests within it are folded into one rebirth at its end (a host that floods Node Control/Rebirth does not flood the broker with births)"),
    maxCommandsPerS: int(1, 1000, 10, "NCMD and DCMD messages taken per second, counted before they are decoded; beyond it they are dropped unread and counted"),
    writableSetpoints: arr(str("a loop name: <rack>.valve, cdu.pump, or cdu.supply with cdu.supplyControl", { pattern: "^[A-Za-z0-9][A-Za-z0-9_.-]*$", maxLength: 80 }), "loops whose setpoint a DCMD may write (Sparkplug commands are unsigned: empty, the default, refuses every write; docs/sparkplug.md says what opting in risks)", {
      default: [],
      uniqueItems: true,
      maxItems: 64,
    }),
    writeLeaseS: int(1, 604_800, 300, "the lease of a setpoint written by DCMD, s (at most the command envelope's maxLeaseS): it lapses back to the configured setpoint"),
  },
  "Sparkplug B edge node (docs/sparkplug.md)",
);

export type SparkplugConfig = Infer<typeof SPARKPLUG_SCHEMA>;
