// Relay autotune and applied gains as a pod feature: the gains an engineer applied before a
// restart feed the control worker's first bank (gains()), tunings are refused or aborted by the
// pod's state, and every tuning ends when the pod goes to fail-safe or stops.
import { podBankSpec, type LoopGains } from "../../pod/bank.js";
import type { AppliedGains, LoopGainsStatus, TuningStatus } from "../pod-api.js";
import { loopSection } from "../../pod/layout.js";
import type { PodContext, PodFeature } from "../pod-context.js";
import { GainsStore } from "./gains-store.js";
import { LoopTunings } from "./loop-tuning.js";

export class TuningFeature implements PodFeature {
  readonly name = "tuning";
  private readonly tunings: LoopTunings;

  constructor(private readonly ctx: PodContext) {
    const log = ctx.log("tuning");
    const { layout } = ctx;
    this.tunings = new LoopTunings(
      {
        // the control worker is created after this feature (its bank takes the gains restored here)
        control: { startTune: (loop) => ctx.control().startTune(loop), stopTune: (loop) => ctx.control().stopTune(loop), tuneState: (loop) => ctx.control().tuneState(loop) },
        layout,
        loopConfig: (loop) => ctx.config.control[loopSection(layout.loopKind(loop))],
        outputs: () => ctx.outputs(),
        loopMode: (loop) => ctx.control().frames.loopMode[loop],
        podFailsafe: () => ctx.supervisor.mode === "Failsafe",
        patchGains: (gains: readonly (LoopGains | undefined)[]) => ctx.control().patch(podBankSpec(ctx.config.control, layout, ctx.config.racks, gains)),
        emit: (e) => ctx.emit(e),
        reportProblem: (id, p) => ctx.reportProblem(id, p),
        log: (level, fields, message) => log[level](fields, message),
      },
      new GainsStore(ctx.stateDir),
    );
  }

  /** The gains applied before the restart, by loop, for the control worker's first bank. */
  restore(): (LoopGains | undefined)[] {
    return this.tunings.restore();
  }

  /** The gains in force, by loop (undefined: the config's), for a bank rebuilt at a tuning reload. */
  gains(): (LoopGains | undefined)[] {
    return this.tunings.byIndex();
  }

  supervise(): void {
    if (this.ctx.supervisor.mode === "Failsafe") this.tunings.tuner.abortAll("the pod went to fail-safe");
  }

  release(reason: string): void {
    this.tunings.tuner.abortAll(`the agent is stopping (${reason})`);
  }

  /** A gains change being saved lands first. */
  settle(): Promise<void> {
    return this.tunings.settled();
  }

  /** A loop taken by an operator (a mode, an Override) ends its tuning. */
  loopTaken(loop: number, why: string): void {
    this.tunings.abort(loop, why);
  }

  startTuning(loop: number, by: string): TuningStatus {
    return this.tunings.start(loop, by);
  }

  abortTuning(loop: number, by: string): TuningStatus | null {
    return this.tunings.abort(loop, `aborted by ${by}`);
  }

  tuningStatus(loop: number): TuningStatus | null {
    return this.tunings.tuner.status(loop);
  }

  applyGains(loop: number, gains: { rule: string } | LoopGains, by: string): Promise<AppliedGains> {
    return this.tunings.apply(loop, gains, by);
  }

  revertGains(loop: number, by: string): Promise<boolean> {
    return this.tunings.revert(loop, by);
  }

  loopGains(loop: number): LoopGainsStatus {
    return this.tunings.status(loop);
  }
}
