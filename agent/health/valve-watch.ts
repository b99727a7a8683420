// The control valves' watch as a pod feature: each position sample is judged against the loop's
// command in force, and what is wrong is the Warning valve:<rack> while it lasts. Pure analysis in
// valve-health.ts; this file feeds it and says what it found.
import type { Point } from "../../lib/points.js";
import type { ValveHealthView } from "../../pod/status-view.js";
import type { AgentConfig, PodContext, PodFeature } from "../pod-context.js";
import { ValveHealth } from "./valve-health.js";

export class ValveWatch implements PodFeature {
  readonly name = "valve-health";
  /** each watched rack's control valve, by its position feedback point */
  private readonly valves = new Map<string, { rack: number; health: ValveHealth; reported: string }>();
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly ctx: PodContext) {
    const c = ctx.config;
    if (!c.valveHealth.enabled) return;
    c.racks.forEach((r, i) => {
      if (r.points.valvePositionPct !== undefined) this.valves.set(r.points.valvePositionPct, { rack: i, health: new ValveHealth(c.valveHealth), reported: "" });
    });
  }

  start(): void {
    if (this.valves.size > 0) this.unsubscribe = this.ctx.points.subscribe((p) => this.sample(p));
  }

  /** The valve's position against the command in force (the loop's output at the last pass). */
  private sample(p: Point): void {
    const valve = this.valves.get(p.id);
    if (valve === undefined || p.quality !== "good") return;
    const loop = this.ctx.layout.rackLoops[valve.rack];
    valve.health.sample(p.sourceTimeMs, this.ctx.commanded()?.loopOut[loop] ?? NaN, p.value);
  }

  supervise(): void {
    for (const v of this.valves.values()) {
      const name = this.ctx.config.racks[v.rack].name;
      const problems = v.health.problems();
      // the alarm's words change only when what is wrong does (a figure that wavers between
      // 4.0 and 5.0 % must not re-raise it every pass); the figures live in status and metrics
      const kinds = problems.map((p) => p.kind).join();
      if (kinds === v.reported) continue;
      v.reported = kinds;
      if (problems.length === 0) this.ctx.resolveProblem(`valve:${name}`);
      else this.ctx.reportProblem(`valve:${name}`, { severity: "Warning", source: name, message: `${name} control valve: ${problems.map((p) => p.text).join("; ")}` });
    }
  }

  release(): void {
    this.unsubscribe?.();
  }

  /** New thresholds at a tuning reload; what was learnt of each valve is kept. */
  reconfigure(next: AgentConfig): void {
    for (const v of this.valves.values()) v.health.reconfigure(next.valveHealth);
  }

  /** What the status shows of a rack's control valve (null: not watched). */
  view(rack: number): ValveHealthView | null {
    const id = this.ctx.config.racks[rack].points.valvePositionPct;
    const h = id === undefined ? undefined : this.valves.get(id)?.health;
    if (h === undefined) return null;
    const f = h.figures();
    return { stickBandPct: f.stickBandPct, kind: f.kind, travelS: f.travelS, stuck: f.stuck, trackingErrorPct: f.trackingErrorPct, problems: h.problems().map((p) => p.text) };
  }
}
