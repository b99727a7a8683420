// Problems outside the control loops (state files, the uplink's spool) kept until the next
// supervisor pass turns each into an alarm.
import type { Logger } from "./log.js";
import type { ProblemReport, ProblemReporter } from "./pod-api.js";
import type { AlarmManager } from "./supervisor/alarms.js";

export class ProblemRegistry implements ProblemReporter {
  private readonly problems = new Map<string, ProblemReport>();

  constructor(private readonly log: Logger) {}

  /** Raises (message set) or clears (message null) an alarm for a condition outside the loops. */
  reportProblem(id: string, p: ProblemReport): void {
    // a failing write is reported on every attempt (a full disk: each telemetry period); log it
    // once per change of message, not every time
    if (p.message !== null && p.message !== this.problems.get(id)?.message) this.log.error({ alarm: id }, p.message);
    this.problems.set(id, p);
  }

  /** Clears a problem's condition (its alarm then clears after the dwell); a no-op if none is raised. */
  resolveProblem(id: string): void {
    const p = this.problems.get(id);
    if (p !== undefined && p.message !== null) this.problems.set(id, { ...p, message: null });
  }

  /** An operator acknowledged alarm `id`: a one-off problem is thereby resolved. */
  acknowledged(id: string): void {
    if (this.problems.get(id)?.untilAcknowledged === true) this.resolveProblem(id);
  }

  /** Puts every problem's condition into the alarms. */
  updateAlarms(alarms: AlarmManager): void {
    for (const [id, p] of this.problems) alarms.update(id, p.message !== null, { severity: p.severity, source: p.source, message: p.message ?? "resolved" });
  }
}
