// The engineer's tools on a pod's loop gains: relay autotunes (started, aborted, their results)
// and gains applied over the config's (saved before they apply, reverted on request). The agent
// hands this the narrow host it needs and delegates the PodCommander's tuning calls here.
import * as L from "../../hotpath-as/assembly/layout.js";
import type { LoopGains } from "../../pod/bank.js";
import type { LoopTuning as LoopTuningConfig } from "../../pod/config.js";
import { loopSection, type PodLayout } from "../../pod/layout.js";
import { monoMs } from "../../lib/clock.js";
import type { ControlOutputs } from "../control/control-thread.js";
import type { AgentEvent, AppliedGains, LoopGainsStatus, ProblemReport, TuningStatus } from "../pod-api.js";
import { Autotuner, type TuneControl } from "./autotuner.js";
import type { GainsStore } from "./gains-store.js";

export interface TuningHost {
  readonly control: TuneControl;
  readonly layout: PodLayout;
  /** the rack loop's and the pump loop's config now (a reload may change them) */
  loopConfig(loop: number): LoopTuningConfig;
  /** the control thread's outputs now, and the loops' commanded modes */
  outputs(): ControlOutputs | undefined;
  loopMode(loop: number): number;
  podFailsafe(): boolean;
  /** rebuilds the bank with these gains over the config's, by loop index, and patches it in */
  patchGains(gains: readonly (LoopGains | undefined)[]): void;
  emit(e: AgentEvent): void;
  reportProblem(id: string, p: ProblemReport): void;
  log(level: "info" | "warn", fields: Record<string, unknown>, message: string): void;
}

export class LoopTunings {
  readonly tuner: Autotuner;
  private gains = new Map<string, AppliedGains>();
  /** gains changes one after another: each is saved before it applies */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly host: TuningHost,
    private readonly store: GainsStore,
  ) {
    const lay = host.layout;
    this.tuner = new Autotuner(
      host.control,
      // read from the config in force at each start, so a reload's bounds count
      (i) => {
        if (!(i >= 0 && i < lay.loops)) return undefined;
        const t = host.loopConfig(i).autotune;
        return { name: lay.loopName(i), action: lay.loopKind(i) === "pump" ? "reverse" : "direct", amplitude: t.amplitude, cycles: t.cycles };
      },
      { ended: (s) => this.ended(s), now: () => new Date(), monoMs },
    );
  }

  /**
   * Loads the applied gains from before a restart; those for loops that no longer exist are
   * dropped, with an alarm. Returns them by loop index, for the bank the control thread starts with.
   */
  restore(): (LoopGains | undefined)[] {
    const got = this.store.load();
    if (got.problem !== undefined) this.host.reportProblem("state:gains", { severity: "Warning", source: "agent", message: `applied gains state: ${got.problem}`, untilAcknowledged: true });
    const dropped: string[] = [];
    for (const [loop, g] of got.gains) {
      const index = this.host.layout.loopIndex(loop);
      const outside = index === undefined ? null : gainsOutside(g, this.host.loopConfig(index).autotune.gainLimits);
      if (index === undefined) dropped.push(loop);
      else if (outside !== null) dropped.push(`${loop} (${outside})`);
      else {
        this.gains.set(loop, g);
        this.host.log("warn", { loop, kp: g.kp, ki: g.ki, kd: g.kd, rule: g.rule, by: g.by }, "applied gains restored from before the restart");
      }
    }
    if (dropped.length > 0) this.host.reportProblem("state:gains-dropped", { severity: "Warning", source: "agent", message: `applied gains of loops that no longer exist, or outside the gain limits now, were dropped (the config's gains hold): ${dropped.join(", ")}`, untilAcknowledged: true });
    return this.byIndex();
  }

  /** The applied gains by loop index (undefined: the config's). */
  byIndex(): (LoopGains | undefined)[] {
    const lay = this.host.layout;
    return Array.from({ length: lay.loops }, (_, i) => {
      const g = this.gains.get(lay.loopName(i));
      return g === undefined ? undefined : { kp: g.kp, ki: g.ki, kd: g.kd };
    });
  }

  /** Why a tuning of `loop` may not start now, or null. */
  private refusal(loop: number): string | null {
    const h = this.host;
    const name = h.layout.loopName(loop);
    if (h.podFailsafe()) return "the pod is in fail-safe";
    const o = h.outputs();
    if (o === undefined) return "the control loop has produced no outputs yet";
    const leaking = h.layout.racks.filter((_, r) => o.rackState[r] !== L.RACK_NORMAL || (o.rackStatus[r] & L.RS_LEAK_WET) !== 0).map((r) => r.name);
    if (leaking.length > 0) return `a leak or a latched isolation in the pod (${leaking.join(", ")}): a tuning would end at once`;
    const st = o.loopStatus[loop];
    if (st & L.LS_INTERLOCK_LEAK) return `${name}'s rack is isolated`;
    if (st & L.LS_INTERLOCK_FAILSAFE) return `${name} is held in fail-safe (a bad input or command)`;
    const mode = h.loopMode(loop);
    if (mode !== L.MODE_AUTOMATIC && mode !== L.MODE_MANUAL) return `${name} is in ${mode === L.MODE_OVERRIDE ? "Override" : "Disabled"}: put it in Automatic or Manual first`;
    return null;
  }

  /** Starts a relay autotune of `loop`; throws with the reason when it is refused. */
  start(loop: number, by: string): TuningStatus {
    const why = this.refusal(loop);
    if (why !== null) throw new Error(why);
    const s = this.tuner.start(loop, by);
    this.host.emit({ type: "tuning.started", loop: s.loop, by });
    return s;
  }

  /** Aborts the running tuning of `loop`; null when none runs. */
  abort(loop: number, why: string): TuningStatus | null {
    return this.tuner.abort(loop, why);
  }

  private ended(s: TuningStatus): void {
    const r = s.result;
    this.host.emit({
      type: "tuning.ended",
      loop: s.loop,
      state: s.state,
      ...(s.reason === undefined ? {} : { reason: s.reason }),
      ...(r === undefined ? {} : { ku: r.ku, puS: r.puS, recommended: r.recommended }),
    });
    if (s.state === "done") {
      this.host.log("info", { loop: s.loop, ku: r?.ku, puS: r?.puS, fopdt: r?.fopdt, proposals: r?.proposals }, "relay autotune done: apply a proposal with the gains command");
    } else {
      this.host.log("warn", { loop: s.loop, reason: s.reason }, `relay autotune ${s.state}`);
      this.host.reportProblem(`tune:${s.loop}`, { severity: "Warning", source: s.loop, message: `relay autotune of ${s.loop} ${s.state}: ${s.reason ?? "?"}; the loop is back in its mode`, untilAcknowledged: true });
    }
  }

  /** A loop's gains: the config's, and those applied over them. */
  status(loop: number): LoopGainsStatus {
    const name = this.host.layout.loopName(loop);
    const c = this.host.loopConfig(loop);
    return { loop: name, config: { kp: c.kp, ki: c.ki, kd: c.kd }, applied: this.gains.get(name) ?? null };
  }

  /**
   * Applies gains to `loop`: a proposal of its last tuning (`rule`), or gains given by hand.
   * Saved before they apply; a change that cannot be saved is refused, with an alarm. The bank
   * takes them bumplessly (bank-inputs.ts applyPatch).
   */
  apply(loop: number, g: { rule: string } | LoopGains, by: string): Promise<AppliedGains> {
    const name = this.host.layout.loopName(loop);
    let gains: LoopGains;
    let rule: string;
    if ("rule" in g) {
      const last = this.tuner.status(loop);
      const p = last?.state === "done" ? last.result?.proposals.find((x) => x.rule === g.rule) : undefined;
      if (p === undefined) {
        const rules = last?.state === "done" ? (last.result?.proposals.map((x) => x.rule).join(", ") ?? "") : "";
        return Promise.reject(new Error(last?.state !== "done" ? `${name} has no finished tuning since the agent started: tune it, or give kp and ki` : `no proposal by rule "${g.rule}" (the last tuning proposed: ${rules})`));
      }
      gains = { kp: p.kp, ki: p.ki, kd: p.kd };
      rule = p.rule;
    } else {
      gains = { kp: g.kp, ki: g.ki, kd: g.kd };
      rule = "manual";
    }
    const outside = gainsOutside(gains, this.host.loopConfig(loop).autotune.gainLimits);
    if (outside !== null) return Promise.reject(new Error(`${name}: ${outside}: refused (control.${loopSection(this.host.layout.loopKind(loop))}.autotune.gainLimits)`));
    const applied: AppliedGains = { ...gains, rule, by, appliedAt: new Date().toISOString() };
    return this.change((m) => m.set(name, applied)).then(() => {
      this.host.log("warn", { loop: name, ...applied }, "gains applied over the config's");
      return applied;
    });
  }

  /** Puts `loop` back on the config's gains. False when it had none applied. */
  async revert(loop: number, by: string): Promise<boolean> {
    const name = this.host.layout.loopName(loop);
    if (!this.gains.has(name)) return false;
    await this.change((m) => m.delete(name));
    this.host.log("warn", { loop: name, by }, "gains reverted to the config's");
    return true;
  }

  private change(edit: (m: Map<string, AppliedGains>) => void): Promise<void> {
    const run = async (): Promise<void> => {
      const next = new Map(this.gains);
      edit(next);
      try {
        await this.store.save(next);
      } catch (err) {
        const why = (err as Error).message;
        this.host.reportProblem("state:gains-write", { severity: "Warning", source: "agent", message: `a gains change was refused: it could not be saved (${why})`, untilAcknowledged: true });
        throw new Error(`the gains cannot be saved, so they are refused and nothing changed: ${why}`, { cause: err });
      }
      this.gains = next;
      this.host.patchGains(this.byIndex());
    };
    const done = this.chain.then(run, run);
    this.chain = done.catch(() => undefined);
    return done;
  }

  /** Resolves once every gains change asked for has been saved (or refused). */
  async settled(): Promise<void> {
    await this.chain;
  }
}

/** Why gains lie outside a loop's gain limits, or null when they do not. */
export function gainsOutside(g: LoopGains, l: { kpMin: number; kpMax: number; kiMax: number; kdMax: number }): string | null {
  const out: string[] = [];
  if (!(g.kp > 0) || g.kp < l.kpMin || g.kp > l.kpMax) out.push(`kp ${g.kp} is outside [${l.kpMin}, ${l.kpMax}]${g.kp > 0 ? "" : " (kp must be above 0)"}`);
  if (!(g.ki >= 0) || g.ki > l.kiMax) out.push(`ki ${g.ki} is outside [0, ${l.kiMax}]`);
  if (!(g.kd >= 0) || g.kd > l.kdMax) out.push(`kd ${g.kd} is outside [0, ${l.kdMax}]`);
  return out.length === 0 ? null : out.join("; ");
}
