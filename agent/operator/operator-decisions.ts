// The operator's decisions as a pod feature: setpoints and Overrides on leases, loop modes,
// manual isolation, maintenance, mission control's power budget, and the leak latches. Each
// decision is saved before it applies (refused, with an alarm, when it cannot be), and all of it
// is put back before the control worker's first tick after a restart or a reload.
import { join } from "node:path";
import * as L from "../../hotpath-as/assembly/layout.js";
import type { LoopMode } from "../../hotpath-as/bank-config.js";
import { monoMs } from "../../lib/clock.js";
import { JsonStateFile } from "../../lib/json-state-file.js";
import { defaultSetpoints } from "../../pod/bank.js";
import { noCoolantLimitKw } from "../../pod/config.js";
import type { CommandLimits, RackLoad } from "../pod-api.js";
import type { AgentConfig, CarriedState, ControlOutputs, PodContext, PodFeature } from "../pod-context.js";
import { LatchStore } from "./latch-store.js";
import { isForce, LoopLeases } from "./loop-leases.js";
import { EMPTY_OPERATOR_STATE, OperatorStore, type OperatorState } from "./operator-state.js";
import { restoreOperatorState } from "./restore-operator.js";

function checkBudgetFile(data: unknown): { podKw: number | null } {
  const kw = (data as { podKw?: unknown } | null)?.podKw;
  if (kw !== null && (typeof kw !== "number" || !Number.isFinite(kw) || kw < 0)) throw new Error("podKw is not a budget");
  return { podKw: kw };
}

export interface OperatorOptions {
  /** the command envelope in force (a tuning reload may change it) */
  limits(): CommandLimits;
  /** a loop taken by an operator (a mode, an Override): a tuning of it ends */
  loopTaken(loop: number, why: string): void;
  /** from the agent this one replaces at a reload */
  carried?: CarriedState;
}

export class OperatorDecisions implements PodFeature {
  readonly name = "operator";
  /** leased setpoints, by loop */
  readonly leases = new LoopLeases();
  /** leased Override outputs, by loop: each sits over the loop's persistent mode */
  readonly overrides = new LoopLeases();
  /** each loop's setpoint in force, and the config's */
  readonly setpoints: number[];
  private readonly spDefault: number[];
  private readonly latches: LatchStore;
  private readonly budgetStore: JsonStateFile<{ podKw: number | null }> | null;
  private readonly store: OperatorStore;
  /** the operator's decisions in force, as last saved */
  private operator: OperatorState = EMPTY_OPERATOR_STATE;
  /** operator changes, one after another: each is computed from the last, saved, then applied */
  private chain: Promise<void> = Promise.resolve();
  private budgetOverrideKw: number | null = null;

  constructor(
    private readonly ctx: PodContext,
    private readonly o: OperatorOptions,
  ) {
    this.spDefault = defaultSetpoints(ctx.config.control, ctx.layout);
    this.setpoints = [...this.spDefault];
    this.latches = new LatchStore(ctx.stateDir);
    this.budgetStore = ctx.stateDir === undefined ? null : new JsonStateFile(join(ctx.stateDir, "power-budget.json"), checkBudgetFile);
    this.store = new OperatorStore(ctx.stateDir);
  }

  /**
   * Puts back, before the first tick, what held before the restart or reload: leak latches, the
   * power budget and the operator's decisions. A state file that cannot be read is an alarm.
   */
  restore(): void {
    const { ctx } = this;
    const log = ctx.log("agent");
    const control = ctx.control();
    if (this.latches.file === null) log.warn("no state directory: leak latches and operator decisions will not survive a restart (set stateDir or run under systemd with StateDirectory)");
    const restored = this.latches.load();
    if (restored.problem !== undefined) ctx.reportProblem("state:latches", { severity: "Critical", source: "agent", message: `leak latch state: ${restored.problem}; every rack with a leak input is isolated until reset`, untilAcknowledged: true });
    // a budget mission control set before the restart still holds: a pod must not come back
    // drawing more than it was last allowed
    const budget = this.budgetStore?.load();
    if (budget?.problem !== undefined) ctx.reportProblem("state:power-budget", { severity: "Warning", source: "agent", message: `power budget state: ${budget.problem}`, untilAcknowledged: true });
    const budgetKw = this.o.carried?.powerBudgetKw ?? budget?.value?.podKw;
    if (budgetKw !== undefined) {
      this.budgetOverrideKw = budgetKw;
      ctx.supervisor.setPowerBudget(budgetKw);
    }
    const operator = this.store.load();
    if (operator.problem !== undefined) ctx.reportProblem("state:operator", { severity: "Critical", source: "agent", message: `operator state: ${operator.problem}`, untilAcknowledged: true });
    this.operator = restoreOperatorState(this.o.carried?.operator ?? operator.state, {
      layout: ctx.layout,
      limits: this.o.limits(),
      control,
      log,
      setMaintenance: (on) => ctx.supervisor.setMaintenance(on),
      reportProblem: (id, p) => ctx.reportProblem(id, p),
      lease: (loop, value, leftMs, by) => {
        this.leases.set(loop, value, leftMs, monoMs(), by);
        this.setpoints[loop] = value;
      },
      override: (loop, value, leftMs, by) => this.overrides.set(loop, value, leftMs, monoMs(), by),
    });
    for (const name of this.o.carried?.latchedRacks ?? restored.racks) {
      const r = ctx.layout.rackIndex(name);
      if (r !== undefined) {
        control.restoreLatch(r);
        log.warn({ rack: name }, "leak latch restored from before the restart: rack isolated until an authorised reset");
      }
    }
    // Latches unknown (the file damaged, or missing though once written): which racks had a leak
    // cannot be told, so every rack with a leak input starts latched, isolated until an authorised
    // reset. Opening a rack that leaked is the failure this file exists to prevent; keeping a dry
    // one shut costs a reset. The new set is saved at the first supervisor pass.
    if (restored.problem !== undefined && this.o.carried === undefined) {
      const latched = ctx.layout.racks.flatMap((r, i) => (r.leaks.length > 0 ? [i] : []));
      for (const r of latched) control.restoreLatch(r);
      log.error({ racks: latched.map((r) => ctx.layout.racks[r].name) }, "leak latches unknown: every rack with a leak input isolated until an authorised reset");
    }
  }

  /** Leases that ran out go back to the local default or the persistent mode; a new latch is saved. */
  supervise(now: number): void {
    const { ctx } = this;
    const control = ctx.control();
    for (const l of this.leases.expire(now)) {
      // gone from the state in force too; a restart would drop it anyway (its expiry has passed)
      const name = ctx.layout.loopName(l.loop);
      this.operator = { ...this.operator, setpoints: this.operator.setpoints.filter((p) => p.loop !== name) };
      this.setpoints[l.loop] = this.spDefault[l.loop];
      control.setSetpoint(l.loop, this.spDefault[l.loop]);
      ctx.emit({ type: "setpoint.expired", loop: name, value: this.spDefault[l.loop] });
    }
    for (const l of this.overrides.expire(now)) {
      const name = ctx.layout.loopName(l.loop);
      this.operator = { ...this.operator, overrides: this.operator.overrides.filter((o) => o.loop !== name) };
      this.backToOwnMode(l.loop, true);
    }
    // the outputs the pod loop read and wrote just before this pass: not read again here
    const o = ctx.commanded();
    if (o !== undefined) this.saveLatches(o);
  }

  /** A leak latched since the last pass is saved too, and every latch and decision on its way to disk lands. */
  async settle(): Promise<void> {
    const o = this.ctx.outputs();
    if (o !== undefined) this.saveLatches(o);
    await this.latches.settled();
    await this.chain;
  }

  /**
   * Writes the racks latched in `o` to the latch file if the set changed: written and synced off
   * the event loop (a write and rename can wait on the journal for tens of ms). A failed write is
   * alarmed and retried on the next call.
   */
  private saveLatches(o: ControlOutputs): void {
    this.latches.save(this.latched(o))?.then(
      () => this.ctx.resolveProblem("state:latches-write"),
      (err: Error) => this.ctx.reportProblem("state:latches-write", { severity: "Critical", source: "agent", message: `cannot save leak latches: ${err.message}` }),
    );
  }

  private latched(o: ControlOutputs): string[] {
    return this.ctx.config.racks.filter((_, r) => o.rackState[r] !== L.RACK_NORMAL).map((r) => r.name);
  }

  /** The state a structural reload hands to the agent that replaces this one. */
  carryOver(): CarriedState {
    const o = this.ctx.outputs();
    return {
      latchedRacks: o === undefined ? [...(this.o.carried?.latchedRacks ?? [])] : this.latched(o),
      operator: this.operator,
      powerBudgetKw: this.budgetOverrideKw,
    };
  }

  /** New setpoint defaults at a tuning reload: a loop with no lease takes its new one. */
  reconfigure(next: AgentConfig): void {
    defaultSetpoints(next.control, this.ctx.layout).forEach((sp, loop) => {
      this.spDefault[loop] = sp;
      if (this.leases.get(loop) === undefined) {
        this.setpoints[loop] = sp;
        this.ctx.control().setSetpoint(loop, sp);
      }
    });
  }

  /** The leases in force, for mission control's snapshot. */
  snapshot(): { setpointLeases: unknown[]; overrides: unknown[] } {
    const name = (loop: number): string => this.ctx.layout.loopName(loop);
    const left = (at: number): number => Math.max(0, Math.round(at - monoMs()));
    return {
      setpointLeases: this.leases.all().map((l) => ({ loop: name(l.loop), value: l.value, expiresInMs: left(l.expiresAtMs), by: l.by })),
      overrides: this.overrides.all().map((l) => ({ loop: name(l.loop), outputPct: l.value, expiresInMs: left(l.expiresAtMs), by: l.by })),
    };
  }

  /**
   * Applies one operator decision: `change` computes the new operator state from the one in
   * force, which is saved (fsync, off the event loop) before `apply` runs. A decision that cannot
   * be saved is refused, with an alarm, and changes nothing: a restart would otherwise undo it
   * behind the operator's back (an isolation lifted into an open hose).
   */
  private decide(change: (s: OperatorState) => OperatorState, apply: () => void): Promise<void> {
    const run = async (): Promise<void> => {
      const next = change(this.operator);
      try {
        await this.store.save(next);
      } catch (err) {
        const why = (err as Error).message;
        this.ctx.reportProblem("state:operator-write", { severity: "Warning", source: "agent", message: `an operator decision was refused: it could not be saved (${why})`, untilAcknowledged: true });
        throw new Error(`the decision cannot be saved, so it is refused and nothing changed: ${why}`, { cause: err });
      }
      this.operator = next;
      apply();
    };
    const done = this.chain.then(run, run);
    this.chain = done.catch(() => undefined);
    return done;
  }

  /** Sets a loop's setpoint for leaseMs (inside the configured envelope: the caller checks); saved before it applies. */
  setSetpoint(loop: number, value: number, leaseMs: number, by: string): Promise<void> {
    const name = this.ctx.layout.loopName(loop);
    const expiresAtMs = Date.now() + leaseMs;
    return this.decide(
      (s) => ({ ...s, setpoints: [...s.setpoints.filter((p) => p.loop !== name), { loop: name, value, expiresAtMs, by }] }),
      () => {
        this.leases.set(loop, value, leaseMs, monoMs(), by);
        this.setpoints[loop] = value;
        this.ctx.control().setSetpoint(loop, value);
      },
    );
  }

  /**
   * Sets a loop's persistent mode (and the output Manual holds): it stands until changed, and a
   * restart restores it. Any Override on the loop ends with it. Saved before it applies.
   */
  setLoopMode(loop: number, mode: Exclude<LoopMode, "Override">, value?: number): Promise<void> {
    const name = this.ctx.layout.loopName(loop);
    const entry = { loop: name, mode, ...(value === undefined ? {} : { outputPct: value }) };
    return this.decide(
      (s) => ({ ...s, loopModes: [...s.loopModes.filter((m) => m.loop !== name), ...(mode === "Automatic" ? [] : [entry])], overrides: s.overrides.filter((o) => o.loop !== name) }),
      () => {
        this.overrides.delete(loop);
        this.o.loopTaken(loop, `the loop's mode was set to ${mode}`);
        this.ctx.control().setMode(loop, mode, value);
      },
    );
  }

  /**
   * Overrides a loop's output for leaseMs: a remote value that holds only while its sender keeps
   * renewing it. When the lease runs out the loop goes back to its persistent mode (Automatic, or
   * the Manual an operator at the pod left). Saved before it applies.
   */
  overrideLoop(loop: number, outputPct: number, leaseMs: number, by: string): Promise<void> {
    const name = this.ctx.layout.loopName(loop);
    const expiresAtMs = Date.now() + leaseMs;
    return this.decide(
      (s) => ({ ...s, overrides: [...s.overrides.filter((o) => o.loop !== name), { loop: name, outputPct, expiresAtMs, by }] }),
      () => {
        this.overrides.set(loop, outputPct, leaseMs, monoMs(), by);
        this.o.loopTaken(loop, `the loop was put in Override by ${by}`);
        this.ctx.control().setMode(loop, "Override", outputPct);
      },
    );
  }

  /**
   * Ends a loop's Override before its lease (an engineer's `io force --release`): the loop goes
   * back to its persistent mode. Saved before it applies; false when the loop has no Override.
   */
  async endOverride(loop: number): Promise<boolean> {
    if (this.overrides.get(loop) === undefined) return false;
    const name = this.ctx.layout.loopName(loop);
    await this.decide(
      (s) => ({ ...s, overrides: s.overrides.filter((o) => o.loop !== name) }),
      () => {
        this.overrides.delete(loop);
        this.backToOwnMode(loop, false);
      },
    );
    return true;
  }

  /** A loop back in its own mode after its Override; `told`: said as `override.expired` (an end the engineer did not ask for). */
  private backToOwnMode(loop: number, told: boolean): void {
    const name = this.ctx.layout.loopName(loop);
    const under = this.persistentMode(name);
    this.ctx.control().setMode(loop, under.mode, under.outputPct);
    if (told) this.ctx.emit({ type: "override.expired", loop: name, mode: under.mode, ...(under.outputPct === undefined ? {} : { outputPct: under.outputPct }) });
  }

  /** The mode a loop returns to when its Override ends: what the operator state holds for it. */
  private persistentMode(name: string): { mode: LoopMode; outputPct?: number } {
    const m = this.operator.loopModes.find((x) => x.loop === name);
    return m === undefined ? { mode: "Automatic" } : m.outputPct === undefined ? { mode: m.mode } : { mode: m.mode, outputPct: m.outputPct };
  }

  /** An operator's isolation of a rack (or its end); saved before it applies. */
  isolateRack(rack: number, isolate: boolean): Promise<void> {
    const name = this.ctx.config.racks[rack].name;
    return this.decide(
      (s) => ({ ...s, isolatedRacks: [...s.isolatedRacks.filter((r) => r !== name), ...(isolate ? [name] : [])] }),
      () => this.ctx.control().setManualIsolate(rack, isolate),
    );
  }

  /** Maintenance is on. */
  maintenance(): boolean {
    return this.ctx.supervisor.maintenance;
  }

  /**
   * Maintenance on or off; saved before it applies. Its end ends every `io force` still held: a
   * loop check needs maintenance, and an output left forced after it would be a pod in normal
   * operation with a loop held by hand (the loop goes back to its own mode, as at a lease's end).
   */
  setMaintenance(on: boolean): Promise<void> {
    const forced = on ? [] : this.overrides.all().filter((l) => isForce(l.by));
    return this.decide(
      (s) => ({ ...s, maintenance: on, overrides: on ? s.overrides : s.overrides.filter((o) => !isForce(o.by)) }),
      () => {
        this.ctx.supervisor.setMaintenance(on);
        for (const l of forced) {
          this.overrides.delete(l.loop);
          this.backToOwnMode(l.loop, true);
        }
      },
    );
  }

  /** Sets mission control's pod power budget (null withdraws it); kept across restarts. Rejects if it cannot be saved. */
  async setPowerBudget(kw: number | null): Promise<void> {
    // on disk first (written and synced off the event loop), so an accepted budget survives a restart
    await this.budgetStore?.saveInBackground({ podKw: kw });
    this.budgetOverrideKw = kw;
    this.ctx.supervisor.setPowerBudget(kw);
  }

  /** What an operator's isolation of the rack would cut the coolant from. */
  rackLoad(rack: number): RackLoad {
    const { config: c, layout } = this.ctx;
    const r = c.racks[rack];
    const p = this.ctx.reading(layout.racks[rack].powerKw, r.points.powerKw);
    return {
      drawKw: p.good ? p.value : null,
      ...(p.good ? {} : { why: p.why ?? "no good reading" }),
      limitKw: noCoolantLimitKw(r) + c.supervisor.noCoolantPower.toleranceKw,
      isolatedByOperator: this.ctx.control().frames.rackManualIsolate[rack] === 1,
    };
  }

  /** The rack is latched for a leak: isolated until an authorised reset, whatever an operator asks. */
  leakLatched(rack: number): boolean {
    const o = this.ctx.outputs();
    return o !== undefined && o.rackState[rack] !== L.RACK_NORMAL;
  }

  /** Requests a leak-latch reset; resolves with the hot path's verdict. */
  async resetLeak(rack: number): Promise<"accepted" | "refused-wet" | "timeout"> {
    const control = this.ctx.control();
    control.requestReset(rack);
    const deadline = monoMs() + 1000;
    const ticks0 = control.ticks;
    while (monoMs() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
      if (control.ticks > ticks0 + 2) {
        const res = control.outputs()?.rackResetResult[rack];
        if (res === L.RESET_ACCEPTED) {
          this.ctx.supervisor.alarms.reset(`leak:${this.ctx.config.racks[rack].name}`);
          return "accepted";
        }
        if (res === L.RESET_REFUSED_WET) return "refused-wet";
      }
    }
    return "timeout";
  }
}
