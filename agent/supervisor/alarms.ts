// Alarm lifecycle: raise, clear after a dwell, acknowledge, latch.
//
// Conditions are evaluated by their owners every supervisor pass (with their own hysteresis);
// this class turns "condition true/false" into alarms that do not chatter: an alarm clears only
// after its condition has stayed false for the dwell, and a latched alarm clears only after an
// authorised reset as well. Every transition is an event.

export type Severity = "Warning" | "Critical";

export interface Alarm {
  id: string;
  severity: Severity;
  message: string;
  /** what raised it: a rack, device or subsystem name */
  source: string;
  latched: boolean;
  acknowledged: boolean;
  acknowledgedBy?: string;
  /** the condition is present now (a latched alarm may outlive its condition) */
  conditionActive: boolean;
  raisedAt: string;
  raisedAtMs: number;
  /** monotonic ms since which the condition has been false, or null */
  clearingSinceMs: number | null;
  /**
   * Held back by maintenance: still listed, logged and published, and still counted in the pod's
   * mode, but flagged so that a dashboard or a pager can hold it back while work is under way.
   */
  suppressed: boolean;
}

/** Which alarms are suppressed now: a rule over what the alarm is, not over its history. */
export type SuppressionRule = (a: Pick<Alarm, "id" | "severity">) => boolean;

export type AlarmEvent =
  | { type: "alarm.raised"; alarm: Alarm }
  | { type: "alarm.cleared"; alarm: Alarm }
  | { type: "alarm.acknowledged"; alarm: Alarm }
  | { type: "alarm.escalated"; alarm: Alarm };

export interface ConditionSpec {
  severity: Severity;
  message: string;
  source: string;
  /** stays active until reset() even after the condition clears */
  latch?: boolean;
}

export class AlarmManager {
  private readonly alarms = new Map<string, Alarm>();
  private readonly resetAllowed = new Set<string>();
  private suppress: SuppressionRule = () => false;

  constructor(
    private readonly dwellMs: number,
    private readonly emit: (e: AlarmEvent) => void,
    private readonly now: () => number,
    private readonly wallNow: () => string = () => new Date().toISOString(),
  ) {}

  /** Reports a condition's state this pass. */
  update(id: string, active: boolean, spec: ConditionSpec): void {
    const a = this.alarms.get(id);
    const now = this.now();
    if (active) {
      if (a === undefined) {
        const alarm: Alarm = {
          id,
          severity: spec.severity,
          message: spec.message,
          source: spec.source,
          latched: spec.latch === true,
          acknowledged: false,
          conditionActive: true,
          raisedAt: this.wallNow(),
          raisedAtMs: now,
          clearingSinceMs: null,
          suppressed: false,
        };
        alarm.suppressed = this.suppress(alarm);
        this.alarms.set(id, alarm);
        this.resetAllowed.delete(id);
        this.emit({ type: "alarm.raised", alarm: { ...alarm } });
        return;
      }
      a.conditionActive = true;
      a.clearingSinceMs = null;
      a.message = spec.message;
      if (a.severity === "Warning" && spec.severity === "Critical") {
        // escalation re-arms acknowledgement: a Critical alarm must be seen as Critical
        a.severity = "Critical";
        a.suppressed = this.suppress(a);
        a.acknowledged = false;
        this.emit({ type: "alarm.escalated", alarm: { ...a } });
      } else if (a.severity === "Critical" && spec.severity === "Warning" && !a.latched) {
        a.severity = "Warning";
        a.suppressed = this.suppress(a);
      }
      return;
    }
    if (a === undefined) return;
    a.conditionActive = false;
    a.clearingSinceMs ??= now;
    if (now - a.clearingSinceMs < this.dwellMs) return;
    if (a.latched && !this.resetAllowed.has(id)) return;
    this.alarms.delete(id);
    this.resetAllowed.delete(id);
    // the cleared event says what was, not what is: its message is the last one raised while the
    // condition held, in the present tense ("above 50 °C"), which read as if it still held
    const forS = ((a.clearingSinceMs - a.raisedAtMs) / 1000).toFixed(1);
    this.emit({ type: "alarm.cleared", alarm: { ...a, message: `was: ${a.message} (for ${forS} s)` } });
  }

  /** Acknowledges an alarm. Returns false if there is no such alarm. */
  acknowledge(id: string, by: string): boolean {
    const a = this.alarms.get(id);
    if (a === undefined) return false;
    if (!a.acknowledged) {
      a.acknowledged = true;
      a.acknowledgedBy = by;
      this.emit({ type: "alarm.acknowledged", alarm: { ...a } });
    }
    return true;
  }

  /** Authorises a latched alarm to clear once its condition has. */
  reset(id: string): boolean {
    if (!this.alarms.has(id)) return false;
    this.resetAllowed.add(id);
    return true;
  }

  get(id: string): Alarm | undefined {
    const a = this.alarms.get(id);
    return a === undefined ? undefined : { ...a };
  }

  active(): Alarm[] {
    // ids are compared by code unit, not localeCompare: the order only has to be stable, and the
    // first localeCompare loads ICU's collation data (a bare node's RSS went 39.2 -> 42.1 MB on it)
    return [...this.alarms.values()].map((a) => ({ ...a })).sort((x, y) => x.raisedAtMs - y.raisedAtMs || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  }

  /** Sets which alarms are suppressed, and flags the listed ones afresh. */
  setSuppression(rule: SuppressionRule): void {
    this.suppress = rule;
    for (const a of this.alarms.values()) a.suppressed = rule(a);
  }

  /** Drops alarms whose ids are no longer produced by anyone (after a config reload). */
  retain(keep: (id: string) => boolean): void {
    for (const id of [...this.alarms.keys()]) if (!keep(id)) this.alarms.delete(id);
  }
}
