// The flight recorder's config section (`recorder`): its schema, and its type derived from it.
import { bool, int, num, obj, type Infer } from "../../lib/schema-builders.js";

export const RECORDER_SCHEMA = obj(
  {
    enabled: bool(true, "keep a ring of every tick's inputs and outputs and write a recording around every trip (needs a state directory: recordings go to <stateDir>/recordings)"),
    preS: num(0.1, 60, 5, "seconds before the trigger kept in a recording"),
    postS: num(0, 60, 2, "seconds after the trigger kept recording before the file is written whole (it is written at once with the pre-trigger window, then again)"),
    decimation: int(1, 1000, 1, "record one tick in this many (1: every tick; a decimated recording cannot be replayed)"),
    maxFiles: int(1, 1000, 20, "recordings kept; beyond this the oldest of those only an operator asked for or only control:overrun tripped are removed first, a trip's only when none of those is left"),
  },
  "the flight recorder (docs/engineering.md)",
);

export type RecorderConfig = Infer<typeof RECORDER_SCHEMA>;
