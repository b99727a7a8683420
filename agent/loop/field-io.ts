// The pod's field drivers as one set: started and stopped in order, each actuator write routed to
// the driver that owns the output, and their output states, device health and unconfirmed outputs
// merged. The pod loop (pod-loop.ts) sees only this.
import type { FieldDriver, DeviceHealth, OutputState } from "./field-driver.js";
import type { ProblemReporter } from "../pod-api.js";

export class FieldIo {
  constructor(
    /** in start order: the leak path first, so isolation is served before anything else polls */
    private readonly drivers: readonly FieldDriver[],
    private readonly problems: ProblemReporter,
  ) {}

  async start(): Promise<void> {
    for (const d of this.drivers) await d.start();
  }

  /** In start order too: the leak path stops after the control worker, before the other drivers. */
  async stop(): Promise<void> {
    for (const d of this.drivers) await d.stop();
  }

  private owner(id: string): FieldDriver | undefined {
    return this.drivers.find((d) => d.ownsOutput(id));
  }

  /**
   * Asks for `value` on output `id` from the driver that owns it. False when its writer is the leak
   * thread (it writes from the frames itself); throws when no driver owns it.
   */
  setOutput(id: string, value: number): boolean {
    const d = this.owner(id);
    if (d === undefined) throw new Error(`no field driver owns the output ${id}`);
    return d.setOutput(id, value);
  }

  /** What became of an output's last command, from the driver that owns it. */
  outputState(id: string): OutputState | undefined {
    for (const d of this.drivers) {
      const s = d.outputState(id);
      if (s !== undefined) return s;
    }
    return undefined;
  }

  health(): DeviceHealth[] {
    return this.drivers.flatMap((d) => d.health());
  }

  /** An output its device has not confirmed is a Warning output:<id> while it lasts. */
  alarmOutputs(nowMs: number): void {
    for (const d of this.drivers) {
      for (const [id, p] of d.outputProblems?.(nowMs) ?? []) {
        if (p === null) this.problems.resolveProblem(`output:${id}`);
        else this.problems.reportProblem(`output:${id}`, { severity: "Warning", source: p.device, message: `${id} is not verified on the BMC: ${p.why}` });
      }
    }
  }
}
