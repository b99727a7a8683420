// The pod's partial-stroke tests (isolation-stroke.ts is one test): started by an engineer's
// command or by the operator's schedule (partialStroke.intervalH), one valve at a time, with
// their last results kept across restarts (strokes.json in the state directory), so the schedule
// and a stuck valve's Critical alarm survive one.
import { join } from "node:path";
import { JsonStateFile, stateFileCheck } from "../../lib/json-state-file.js";
import { arr, bool, int, obj, oneOf, optional, str, type Infer } from "../../lib/schema-builders.js";
import type { AgentEvent, ProblemReport } from "../pod-api.js";
import { ISO_VALVES, podLeak, rackInterlock, strokeBit, StrokeTest, type IsoValve, type LimitReading, type StrokeOutputs, type StrokeResult, type StrokeStatus } from "./isolation-stroke.js";
import type { PartialStrokeSection } from "./schema.js";

/** While a test runs it is stepped this often, ms: its timing figures are good to about this plus the limit switch's poll period. */
export const STROKE_STEP_MS = 20;
/** A gap between two steps longer than this is a stalled main thread: the test is aborted, not judged on what it missed, ms. */
export const STROKE_STALL_MS = 1000;
/** The schedule is looked at this often, ms. */
const SCHEDULE_MS = 1000;

/** A rack's isolation valves' limit switches, as its config names them. */
export interface RackLimits {
  name: string;
  /** the rack's loop, for its interlock bits */
  loop: number;
  supplyOpenLimit?: string;
  supplyClosedLimit?: string;
  returnOpenLimit?: string;
  returnClosedLimit?: string;
}

// where pod-api.ts reads it without importing this file, which imports pod-api.ts
export type { StrokeStatus } from "./isolation-stroke.js";

export interface StrokeHost {
  readonly racks: readonly RackLimits[];
  outputs(): StrokeOutputs | undefined;
  podFailsafe(): boolean;
  /** a limit switch's good reading, or null */
  limit(pointId: string): LimitReading;
  /**
   * whether this valve's writer ends a hold by itself at its deadline (the leak thread's Modbus
   * TCP outputs); a valve the main thread writes (a serial device, or the leak thread off) is
   * not tested: a stalled main thread would leave its close in force
   */
  holdBounded(rack: number, valve: IsoValve): boolean;
  /**
   * holds (bits) or releases (0) the close of a rack's isolation valves for a test; a hold is
   * released by the writer on its own after `maxMs` whatever this side does (a stalled main
   * thread must not let the valve close all the way)
   */
  setStroke(rack: number, bits: number, maxMs: number): void;
  emit(e: AgentEvent): void;
  reportProblem(id: string, p: ProblemReport): void;
  resolveProblem(id: string): void;
  log(level: "info" | "warn", fields: Record<string, unknown>, message: string): void;
  monoMs(): number;
  wallMs(): number;
}

const RESULT = obj(
  {
    rack: str("rack", { maxLength: 64 }),
    valve: oneOf(ISO_VALVES, undefined, "which valve"),
    state: oneOf(["running", "passed", "failed", "aborted"] as const, undefined, "how it ended"),
    by: str("who started it", { maxLength: 256 }),
    startedAt: str("when", { maxLength: 40 }),
    endedAt: optional(str("when", { maxLength: 40 })),
    reason: optional(str("why it failed or was aborted", { maxLength: 1000 })),
    breakawayMs: optional(int(0, 1e9, undefined, "ms")),
    heldMs: optional(int(0, 1e9, undefined, "ms")),
    returnMs: optional(int(0, 1e9, undefined, "ms")),
    critical: optional(bool(false, "a failure that raises the Critical alarm")),
  },
  "a test's result",
  ["rack", "valve", "state", "by", "startedAt"],
);

const STROKES_FILE_SCHEMA = obj(
  {
    valves: arr(
      obj(
        {
          rack: str("rack", { maxLength: 64 }),
          valve: oneOf(ISO_VALVES, undefined, "which valve"),
          since: str("when the schedule first saw it (its first test is due an interval later)", { maxLength: 40 }),
          last: optional(RESULT),
        },
        "an isolation valve's test record",
        ["rack", "valve", "since"],
      ),
      "every isolation valve's last partial-stroke test",
      { maxItems: 256 },
    ),
    savedAt: str("when it was written"),
  },
  "podwarden's partial-stroke test records",
  ["valves", "savedAt"],
);
type StrokesFile = Infer<typeof STROKES_FILE_SCHEMA>;
type ValveRecord = StrokesFile["valves"][number];

const checkStrokesFile = stateFileCheck<StrokesFile>(STROKES_FILE_SCHEMA);
const key = (rack: string, valve: IsoValve): string => `${rack}.${valve}`;
export const strokeAlarmId = (rack: string, valve: IsoValve): string => `stroke:${key(rack, valve)}`;

interface Running {
  rack: number;
  valve: IsoValve;
  test: StrokeTest;
  result: StrokeResult;
  /** when it was last stepped, monotonic ms */
  steppedMs: number;
}

export class IsolationStrokes {
  private readonly file: JsonStateFile<StrokesFile> | null;
  private readonly records = new Map<string, ValveRecord>();
  private running: Running | null = null;
  /** the test that ended last, whatever its verdict (an aborted one is in no record) */
  private recent: StrokeResult | null = null;
  private stepTimer: NodeJS.Timeout | undefined;
  private scheduleTimer: NodeJS.Timeout | undefined;
  /** when the schedule last started a test, monotonic ms */
  private lastScheduledMs = -Infinity;
  /** the racks' names, for the leak check of every step */
  private readonly names: string[];

  constructor(
    private readonly host: StrokeHost,
    private readonly config: PartialStrokeSection,
    stateDir: string | undefined,
  ) {
    this.file = stateDir === undefined ? null : new JsonStateFile(join(stateDir, "strokes.json"), checkStrokesFile);
    this.names = host.racks.map((r) => r.name);
  }

  /** Loads the records (a failed valve's Critical alarm is raised again) and starts the schedule. */
  begin(): void {
    const got = this.file?.load() ?? {};
    if (got.problem !== undefined) this.host.reportProblem("state:strokes", { severity: "Warning", source: "agent", message: `partial-stroke test records: ${got.problem}`, untilAcknowledged: true });
    for (const v of got.value?.valves ?? []) {
      const r = this.host.racks.find((x) => x.name === v.rack);
      if (r === undefined || this.openLimitOf(r, v.valve) === undefined) continue; // gone from the config
      this.records.set(key(v.rack, v.valve), v);
      if (v.last !== undefined) this.alarm(v.last);
    }
    if (this.config.intervalH > 0) {
      const now = new Date(this.host.wallMs()).toISOString();
      let added = false;
      for (const { rack, valve } of this.testable()) {
        if (this.records.has(key(rack.name, valve))) continue;
        this.records.set(key(rack.name, valve), { rack: rack.name, valve, since: now });
        added = true;
      }
      if (added) this.save();
      this.scheduleTimer = setInterval(() => this.schedule(), SCHEDULE_MS);
    }
  }

  /** Releases a running test and stops the schedule. */
  end(why: string): void {
    clearInterval(this.scheduleTimer);
    this.abort(why);
  }

  /** Every valve a test can run on: those with an open limit switch. */
  private testable(): { rack: RackLimits; index: number; valve: IsoValve }[] {
    return this.host.racks.flatMap((rack, index) => ISO_VALVES.filter((valve) => this.openLimitOf(rack, valve) !== undefined).map((valve) => ({ rack, index, valve })));
  }

  private openLimitOf(r: RackLimits, v: IsoValve): string | undefined {
    return v === "supply" ? r.supplyOpenLimit : r.returnOpenLimit;
  }

  private closedLimitOf(r: RackLimits, v: IsoValve): string | undefined {
    return v === "supply" ? r.supplyClosedLimit : r.returnClosedLimit;
  }

  /** Why a test of `valve` on rack `rack` may not start now, or null. */
  refusal(rack: number, valve: IsoValve): string | null {
    const h = this.host;
    const r = h.racks[rack];
    const openLimit = this.openLimitOf(r, valve);
    if (openLimit === undefined) return `${r.name}'s ${valve} isolation valve has no open limit switch in the config (racks[].points.${valve}IsolationOpenLimit): nothing can see it move`;
    if (!this.host.holdBounded(rack, valve)) return `${r.name}'s ${valve} isolation valve is written by the agent's main thread (a serial device, or control.isolation.leakThread off), which cannot bound a test's close if it stalls: not tested`;
    if (this.running !== null) return `a test of ${key(h.racks[this.running.rack].name, this.running.valve)} is running: one valve at a time`;
    if (h.podFailsafe()) return "the pod is in fail-safe";
    const o = h.outputs();
    if (o === undefined) return "the control loop has produced no outputs yet";
    const leak = podLeak(o, this.names);
    if (leak !== null) return leak;
    const interlock = rackInterlock(o, rack, r.loop, r.name);
    if (interlock !== null) return interlock;
    const open = h.limit(openLimit);
    if (open === null) return `${openLimit} has no good reading`;
    if (open.value !== 1) return `${r.name}'s ${valve} isolation valve is not at its open limit (${openLimit} reads ${open.value}): a test starts from fully open`;
    return null;
  }

  /** Starts a test; throws with the reason when it is refused. */
  start(rack: number, valve: IsoValve, by: string): StrokeResult {
    const why = this.refusal(rack, valve);
    if (why !== null) throw new Error(why);
    const h = this.host;
    const name = h.racks[rack].name;
    const c = this.config;
    const test = new StrokeTest({ holdMs: (c.travelPct / 100) * c.fullStrokeS * 1000, timeoutMs: c.timeoutS * 1000 }, h.monoMs());
    const result: StrokeResult = { rack: name, valve, state: "running", by, startedAt: new Date(h.wallMs()).toISOString() };
    this.running = { rack, valve, test, result, steppedMs: test.startMs };
    // the longest a sound test holds: until the valve is seen to leave (at most the timeout), or the hold
    h.setStroke(rack, strokeBit(valve), Math.max(test.holdMs, test.timeoutMs) + 500);
    h.emit({ type: "stroke.started", rack: name, valve, by });
    h.log("warn", { rack: name, valve, by, travelPct: c.travelPct }, "partial-stroke test started: the isolation valve's close command is held");
    this.stepTimer = setInterval(() => this.step(), STROKE_STEP_MS);
    return { ...result };
  }

  /** Steps the running test: its limit switches, a leak anywhere, the rack's interlocks. Call it on an interlock change too. */
  step(): void {
    const run = this.running;
    if (run === null) return;
    const h = this.host;
    const r = h.racks[run.rack];
    const o = h.outputs();
    const now = h.monoMs();
    // a stalled main thread saw nothing of the valve meanwhile (the leak thread released the hold
    // at its deadline): no verdict on what it missed
    const gap = now - run.steppedMs;
    run.steppedMs = now;
    const stalled = gap > STROKE_STALL_MS ? `the agent's main thread stalled for ${(gap / 1000).toFixed(1)} s during the test: no verdict` : null;
    const stop = stalled ?? (h.podFailsafe() ? "the pod went to fail-safe" : o === undefined ? null : (podLeak(o, this.names) ?? rackInterlock(o, run.rack, r.loop, r.name)));
    if (stop !== null) {
      this.finish(run.test.abort(now, stop));
      return;
    }
    const openLimit = this.openLimitOf(r, run.valve) as string;
    const closedLimit = this.closedLimitOf(r, run.valve);
    const v = run.test.step(now, h.limit(openLimit), closedLimit === undefined ? null : h.limit(closedLimit));
    if (v !== null) this.finish(v);
    else if (!run.test.closing) h.setStroke(run.rack, 0, 0);
  }

  /** Aborts the running test, if any (its close is released at once). */
  abort(why: string): StrokeResult | null {
    const run = this.running;
    if (run === null) return null;
    return this.finish(run.test.abort(this.host.monoMs(), why));
  }

  private finish(v: Omit<StrokeResult, "rack" | "valve" | "by" | "startedAt">): StrokeResult {
    const run = this.running as Running;
    const h = this.host;
    // released first: nothing below may keep a valve closed
    h.setStroke(run.rack, 0, 0);
    clearInterval(this.stepTimer);
    this.running = null;
    const rounded = (x: number | undefined): number | undefined => (x === undefined ? undefined : Math.round(x));
    const result: StrokeResult = { ...run.result, ...v, endedAt: new Date(h.wallMs()).toISOString() };
    for (const k of ["breakawayMs", "heldMs", "returnMs"] as const) {
      const x = rounded(result[k]);
      if (x === undefined) delete result[k];
      else result[k] = x;
    }
    if (result.critical !== true) delete result.critical;
    this.recent = result;
    h.emit({ type: "stroke.ended", ...result });
    h.log(result.state === "passed" ? "info" : "warn", { ...result }, `partial-stroke test ${result.state}`);
    const k = key(result.rack, result.valve);
    const rec = this.records.get(k);
    // an aborted test says nothing of the valve: the record keeps the last real verdict
    if (result.state !== "aborted") {
      this.records.set(k, { rack: result.rack, valve: result.valve, since: rec?.since ?? result.startedAt, last: result });
      this.save();
      this.alarm(result);
    }
    return result;
  }

  /** The alarm a verdict calls for: Critical for a valve that may not close, Warning for one that went too far, none for a pass. */
  private alarm(r: StrokeResult): void {
    const id = strokeAlarmId(r.rack, r.valve);
    if (r.state === "passed") this.host.resolveProblem(id);
    else if (r.state === "failed") {
      this.host.reportProblem(id, {
        severity: r.critical === true ? "Critical" : "Warning",
        source: r.rack,
        message: `${r.rack} ${r.valve} isolation valve failed its partial-stroke test (${r.endedAt ?? r.startedAt}): ${r.reason ?? "?"}; cleared by a test it passes`,
      });
    }
  }

  /** the last save asked for, settled */
  private saving: Promise<void> = Promise.resolve();

  /** Resolves once every record save asked for has landed (or failed). */
  async settled(): Promise<void> {
    await this.saving;
  }

  private save(): void {
    if (this.file === null) return;
    this.saving = this.file.saveInBackground({ valves: [...this.records.values()], savedAt: new Date(this.host.wallMs()).toISOString() }).then(
      () => this.host.resolveProblem("state:strokes-write"),
      (err: Error) => this.host.reportProblem("state:strokes-write", { severity: "Warning", source: "agent", message: `cannot save the partial-stroke test records (${err.message}): the schedule and a failed valve's alarm will not survive a restart` }),
    );
  }

  /** Starts the most overdue valve's test, if one is due and the pod allows it (a refused one is tried again a gap later). */
  private schedule(): void {
    const h = this.host;
    const now = h.monoMs();
    if (this.running !== null || now - this.lastScheduledMs < this.config.gapS * 1000) return;
    const wall = h.wallMs();
    const intervalMs = this.config.intervalH * 3_600_000;
    let due: { index: number; valve: IsoValve; at: number } | null = null;
    for (const { rack, index, valve } of this.testable()) {
      const rec = this.records.get(key(rack.name, valve));
      if (rec === undefined) continue;
      const at = Date.parse(rec.last?.startedAt ?? rec.since) + intervalMs;
      if (at <= wall && (due === null || at < due.at)) due = { index, valve, at };
    }
    if (due === null) return;
    this.lastScheduledMs = now;
    try {
      this.start(due.index, due.valve, "schedule");
    } catch (err) {
      h.log("warn", { rack: h.racks[due.index].name, valve: due.valve, reason: (err as Error).message }, "scheduled partial-stroke test refused: tried again later");
    }
  }

  /** The running test, the one that ended last, and every valve's last verdict. */
  status(): StrokeStatus {
    return { running: this.running === null ? null : { ...this.running.result }, recent: this.recent, last: [...this.records.values()].flatMap((r) => (r.last === undefined ? [] : [r.last])) };
  }
}
