// Partial-stroke tests of the isolation valves as a pod feature: a narrow host built from the pod
// context, the schedule begun at the start, a test released on any interlock change before the
// actuators are written, and every hold let go when the pod stops.
import { monoMs } from "../../lib/clock.js";
import type { PodContext, PodFeature } from "../pod-context.js";
import type { IsoValve, StrokeResult, StrokeStatus } from "./isolation-stroke.js";
import { IsolationStrokes } from "./isolation-strokes.js";

export class StrokeFeature implements PodFeature {
  readonly name = "partial-stroke";
  private readonly strokes: IsolationStrokes;

  constructor(ctx: PodContext) {
    const c = ctx.config;
    const log = ctx.log("stroke");
    this.strokes = new IsolationStrokes(
      {
        racks: c.racks.map((r, i) => ({
          name: r.name,
          loop: ctx.layout.rackLoops[i],
          supplyOpenLimit: r.points.supplyIsolationOpenLimit,
          supplyClosedLimit: r.points.supplyIsolationClosedLimit,
          returnOpenLimit: r.points.returnIsolationOpenLimit,
          returnClosedLimit: r.points.returnIsolationClosedLimit,
        })),
        outputs: () => ctx.outputs(),
        podFailsafe: () => ctx.supervisor.mode === "Failsafe",
        limit: (id) => {
          const p = ctx.points.get(id);
          return p === undefined || p.quality !== "good" || !Number.isFinite(p.value) ? null : { value: p.value, atMs: p.sourceTimeMs };
        },
        holdBounded: (rack, valve) => ctx.holdBounded(valve === "supply" ? c.racks[rack].outputs.supplyIsolation : c.racks[rack].outputs.returnIsolation),
        setStroke: (rack, bits, maxMs) => ctx.holdIsolation(rack, bits, maxMs),
        emit: (e) => ctx.emit(e),
        reportProblem: (id, p) => ctx.reportProblem(id, p),
        resolveProblem: (id) => ctx.resolveProblem(id),
        log: (level, fields, message) => log[level](fields, message),
        monoMs,
        wallMs: () => Date.now(),
      },
      c.partialStroke,
      ctx.stateDir,
    );
  }

  start(): void {
    this.strokes.begin();
  }

  /** An interlock changed: a test is released on a leak before anything else is written. */
  interlockChanged(): void {
    this.strokes.step();
  }

  /** Released while the writes still go out: a valve held for a test opens again. */
  release(reason: string): void {
    this.strokes.end(`the agent is stopping (${reason})`);
  }

  /** A verdict being saved lands first. */
  settle(): Promise<void> {
    return this.strokes.settled();
  }

  startStroke(rack: number, valve: IsoValve, by: string): StrokeResult {
    return this.strokes.start(rack, valve, by);
  }

  abortStroke(by: string): StrokeResult | null {
    return this.strokes.abort(`aborted by ${by}`);
  }

  strokeStatus(): StrokeStatus {
    return this.strokes.status();
  }
}
