// The actuator-health section (`valveHealth`): its schema, and its type derived from it.
import { bool, int, num, obj, type Infer } from "../../lib/schema-builders.js";

export const VALVE_HEALTH_SCHEMA = obj(
  {
    enabled: bool(true, "watch each rack's control valve through its position feedback (racks[].points.valvePositionPct; racks without one are not watched)"),
    positionEpsPct: num(0.05, 10, 0.3, "a position change larger than this is movement, % (above the feedback's resolution and noise)"),
    stuckErrorPct: num(0.5, 100, 5, "a valve whose command is this far from its position, with no movement for stuckS, is stuck, %"),
    stuckS: num(1, 3600, 20, "see stuckErrorPct, s"),
    stickBandWarnPct: num(0.1, 50, 2, "a dead band or stiction wider than this raises the Warning valve:<rack>, %"),
    travelMaxS: num(1, 3600, 30, "a full stroke slower than this raises the Warning valve:<rack>, s"),
    breakaways: int(3, 32, 5, "breakaways (moves after standing still) the dead band or stiction figure is the median of"),
    responseMs: int(0, 10_000, 300, "how long a sound valve's position feedback takes to show a command (the write, the stroke's start, the next poll), ms: only the command it has had this long to answer counts against it"),
  },
  "control-valve health from position feedback (docs/engineering.md, Actuator health)",
);

export type ValveHealthSection = Infer<typeof VALVE_HEALTH_SCHEMA>;
