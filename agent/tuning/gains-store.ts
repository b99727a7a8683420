// Gains an engineer applied to loops over the config's, kept across restarts and reloads like
// the power budget: gains.json in the state directory, written (fsync) before they apply, so a
// restart never runs a loop on gains other than those in force before it. Kept by loop name; a
// reload that removes a loop drops its gains, and says so.
import { join } from "node:path";
import { JsonStateFile, stateFileCheck } from "../../lib/json-state-file.js";
import { arr, num, obj, str, type Infer } from "../../lib/schema-builders.js";
import type { AppliedGains } from "../pod-api.js";

const GAIN = (what: string) => num(0, 1e6, undefined, what);

const GAINS_FILE_SCHEMA = obj(
  {
    loops: arr(
      obj(
        {
          loop: str("loop name", { maxLength: 64 }),
          kp: GAIN("proportional gain"),
          ki: GAIN("integral gain"),
          kd: GAIN("derivative gain"),
          rule: str("the tuning rule they came from, or manual", { maxLength: 32 }),
          by: str("who applied them", { maxLength: 256 }),
          appliedAt: str("when", { maxLength: 40 }),
        },
        "a loop's applied gains",
        ["loop", "kp", "ki", "kd", "rule", "by", "appliedAt"],
      ),
      "loops running gains an engineer applied",
      { maxItems: 128 },
    ),
    savedAt: str("when it was written"),
  },
  "podwarden's applied gains file",
  ["loops", "savedAt"],
);

type GainsFile = Infer<typeof GAINS_FILE_SCHEMA>;
export type AppliedGainsByLoop = ReadonlyMap<string, AppliedGains>;

const checkGainsFile = stateFileCheck<GainsFile>(GAINS_FILE_SCHEMA);

export class GainsStore {
  private readonly store: JsonStateFile<GainsFile> | null;

  constructor(stateDir: string | undefined) {
    this.store = stateDir === undefined ? null : new JsonStateFile(join(stateDir, "gains.json"), checkGainsFile);
  }

  load(): { gains: Map<string, AppliedGains>; problem?: string } {
    const got = this.store?.load() ?? {};
    const gains = new Map<string, AppliedGains>();
    for (const { loop, ...g } of got.value?.loops ?? []) gains.set(loop, g);
    return got.problem === undefined ? { gains } : { gains, problem: got.problem };
  }

  /** Resolves once `gains` is on disk; rejects if it could not be written. Without a state directory it resolves at once. */
  async save(gains: AppliedGainsByLoop): Promise<void> {
    await this.store?.saveInBackground({ loops: [...gains].map(([loop, g]) => ({ loop, ...g })), savedAt: new Date().toISOString() });
  }
}
