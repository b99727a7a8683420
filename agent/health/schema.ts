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

export const PARTIAL_STROKE_SCHEMA = obj(
  {
    travelPct: num(1, 50, 10, "how far a partial-stroke test moves an isolation valve off its open limit, % of a full stroke: the close command is held for this share of fullStrokeS (longer only until the open limit switch is seen to clear)"),
    fullStrokeS: num(0.5, 600, 4, "the isolation valves' full-stroke time as rated, s"),
    timeoutS: num(1, 600, 10, "a valve whose open limit switch has not cleared this long after the close command, or is not made again this long (plus the time the close was held) after the open command, fails its test: Critical alarm stroke:<rack>.<valve>, s"),
    intervalH: num(0, 8760, 0, "test every isolation valve this often, h, one valve at a time; 0: only by command (podwarden stroke, the stroke command)"),
    gapS: num(1, 86_400, 60, "between two scheduled tests, s"),
  },
  "partial-stroke tests of the racks' isolation valves through their limit switches (docs/engineering.md, Actuator health)",
);

export type PartialStrokeSection = Infer<typeof PARTIAL_STROKE_SCHEMA>;
