// Operator decisions that survive a restart and a reload. A rack an operator isolated for hose
// work must stay isolated when systemd restarts the agent or a SIGHUP rebuilds it: otherwise its
// valves reopen into the open hose. The same holds for every other decision that moves an
// actuator or changes what the pod does: loop modes with their outputs, maintenance, and leased
// setpoints and Overrides (with their expiry on the wall clock, the only clock that survives a
// restart).
//
// The state is kept by name (rack and loop names), not by index, so a reload that reorders or
// removes racks restores what still exists and says what it could not.
import { join } from "node:path";
import { MODE_CODE, type LoopMode } from "../../hotpath-as/bank-config.js";
import { JsonStateFile, stateFileCheck } from "../../lib/json-state-file.js";
import { arr, bool, num, obj, oneOf, optional, str, type Infer } from "../../lib/schema-builders.js";

const LOOP_MODE = oneOf(Object.keys(MODE_CODE) as LoopMode[], undefined, "loop mode");

const OPERATOR_FILE_SCHEMA = obj(
  {
    isolatedRacks: arr(str("rack name", { maxLength: 64 }), "racks isolated by an operator", { maxItems: 64 }),
    loopModes: arr(
      obj({ loop: str("loop name", { maxLength: 64 }), mode: LOOP_MODE, outputPct: optional(num(-1e6, 1e6, undefined, "the output Manual holds")) }, "a loop an operator took out of Automatic (an Override here is from an older file: dropped at restore)", ["loop", "mode"]),
      "loops an operator took out of Automatic",
      { maxItems: 128 },
    ),
    maintenance: bool(false, "maintenance mode"),
    setpoints: arr(
      obj(
        {
          loop: str("loop name", { maxLength: 64 }),
          value: num(-1e6, 1e6, undefined, "the leased setpoint"),
          expiresAtMs: num(0, 1e15, undefined, "when the lease ends, ms since the epoch"),
          by: str("who set it", { maxLength: 256 }),
        },
        "a leased setpoint",
        ["loop", "value", "expiresAtMs", "by"],
      ),
      "leased setpoints",
      { maxItems: 128 },
    ),
    // optional: a file written before Override carried a lease has none
    overrides: optional(
      arr(
        obj(
          {
            loop: str("loop name", { maxLength: 64 }),
            outputPct: num(-1e6, 1e6, undefined, "the output the Override holds"),
            expiresAtMs: num(0, 1e15, undefined, "when the lease ends, ms since the epoch"),
            by: str("who set it", { maxLength: 256 }),
          },
          "a leased Override",
          ["loop", "outputPct", "expiresAtMs", "by"],
        ),
        "loops in a leased Override, over the mode in loopModes",
        { maxItems: 128 },
      ),
    ),
    savedAt: str("when it was written"),
  },
  "podwarden's operator state file",
  ["isolatedRacks", "loopModes", "maintenance", "setpoints", "savedAt"],
);

type OperatorFile = Infer<typeof OPERATOR_FILE_SCHEMA>;
export type OperatorState = Omit<OperatorFile, "savedAt" | "overrides"> & { overrides: NonNullable<OperatorFile["overrides"]> };

export const EMPTY_OPERATOR_STATE: OperatorState = { isolatedRacks: [], loopModes: [], maintenance: false, setpoints: [], overrides: [] };

const checkOperatorFile = stateFileCheck<OperatorFile>(OPERATOR_FILE_SCHEMA);

/**
 * The operator state file, operator.json in the state directory. Each change is written (fsync,
 * off the event loop) before it applies: a decision that could not be saved is refused, so what
 * the pod does is never ahead of what a restart would restore.
 */
export class OperatorStore {
  private readonly store: JsonStateFile<OperatorFile> | null;

  constructor(stateDir: string | undefined) {
    this.store = stateDir === undefined ? null : new JsonStateFile(join(stateDir, "operator.json"), checkOperatorFile);
  }

  get file(): string | null {
    return this.store?.file ?? null;
  }

  load(): { state: OperatorState; problem?: string } {
    const got = this.store?.load() ?? {};
    const v = got.value;
    const state = v === undefined ? EMPTY_OPERATOR_STATE : { isolatedRacks: v.isolatedRacks, loopModes: v.loopModes, maintenance: v.maintenance, setpoints: v.setpoints, overrides: v.overrides ?? [] };
    return got.problem === undefined ? { state } : { state, problem: got.problem };
  }

  /** Resolves once `s` is on disk; rejects if it could not be written. Without a state directory it resolves at once. */
  async save(s: OperatorState): Promise<void> {
    await this.store?.saveInBackground({ ...s, savedAt: new Date().toISOString() });
  }
}

/** The decisions an operator state holds, one per line, for the log at a restore. */
export function describeOperatorState(s: OperatorState): string[] {
  return [
    ...s.isolatedRacks.map((r) => `${r} isolated by an operator`),
    ...s.loopModes.map((l) => `${l.loop} in ${l.mode} at ${l.outputPct} %`),
    ...(s.maintenance ? ["maintenance on"] : []),
    ...s.setpoints.map((p) => `${p.loop} setpoint ${p.value} leased until ${new Date(p.expiresAtMs).toISOString()} by ${p.by}`),
    ...s.overrides.map((o) => `${o.loop} in Override at ${o.outputPct} % leased until ${new Date(o.expiresAtMs).toISOString()} by ${o.by}`),
  ];
}
