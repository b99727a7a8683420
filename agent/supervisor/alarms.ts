// Alarm lifecycle: raise after an on-delay, clear after an off-delay, acknowledge, latch; and
// the count of alarms that chatter (ISA-18.2).
//
// Conditions are evaluated by their owners every supervisor pass (with their own hysteresis);
// this class turns "condition true/false" into alarms that do not chatter: a Warning is raised
// only once its condition has held for its class's on-delay (a Critical never waits), an alarm
// clears only after its condition has stayed false for its class's off-delay (the dwell), and a
// latched alarm clears only after an authorised reset as well. Every transition is an event.
// Each raise is logged for the chatter window: an alarm raised more than maxRaises times in it
// is chattering, and is counted (stats(), the metric podwarden_alarms_chattering).

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

/** Whether alarm `id` is of `family`: a family ending in ':' is every id it begins (`failsafe:`), any other is the one id (`power:budget`). */
export const inFamily = (id: string, family: string): boolean => (family.endsWith(":") ? id.startsWith(family) : id === family);

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

/** An alarm class's delays: a Warning waits onDelayMs before it is raised; an alarm clears offDelayMs after its condition did. */
export interface AlarmTiming {
  onDelayMs: number;
  offDelayMs: number;
}

/** How an alarm's raises are judged: more than maxRaises in windowMs is chattering. */
export interface ChatterRule {
  windowMs: number;
  maxRaises: number;
}

export interface AlarmStats {
  /** alarms raised since the start */
  raisedTotal: number;
  /** the alarms raised more than the chatter rule's maxRaises times within its window, with how often */
  chattering: { id: string; raises: number }[];
}

export class AlarmManager {
  private readonly alarms = new Map<string, Alarm>();
  private readonly resetAllowed = new Set<string>();
  /** conditions that hold but wait out their on-delay: since when (ms) */
  private readonly pending = new Map<string, number>();
  /** each alarm's raise times within the chatter window */
  private readonly raiseLog = new Map<string, number[]>();
  private raisedTotal = 0;
  private suppress: SuppressionRule = () => false;
  private timing: (id: string) => AlarmTiming;
  private chatter: ChatterRule = { windowMs: 600_000, maxRaises: 3 };

  constructor(
    dwellMs: number,
    private readonly emit: (e: AlarmEvent) => void,
    private readonly now: () => number,
    private readonly wallNow: () => string = () => new Date().toISOString(),
  ) {
    this.timing = () => ({ onDelayMs: 0, offDelayMs: dwellMs });
  }

  /** Sets each alarm's delays (by its class) and the chatter rule: the config's, at start and on a reload. */
  setPolicy(timing: (id: string) => AlarmTiming, chatter: ChatterRule): void {
    this.timing = timing;
    this.chatter = chatter;
  }

  /** Reports a condition's state this pass. */
  update(id: string, active: boolean, spec: ConditionSpec): void {
    const a = this.alarms.get(id);
    const now = this.now();
    if (!active) this.pending.delete(id);
    if (active) {
      if (a === undefined) {
        // the on-delay: a Warning that comes and goes within it is no alarm; a Critical never waits
        const since = this.pending.get(id) ?? now;
        this.pending.set(id, since);
        if (spec.severity === "Warning" && now - since < this.timing(id).onDelayMs) return;
        this.pending.delete(id);
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
        this.logRaise(id, now);
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
    if (now - a.clearingSinceMs < this.timing(id).offDelayMs) return;
    if (a.latched && !this.resetAllowed.has(id)) return;
    this.alarms.delete(id);
    this.resetAllowed.delete(id);
    // the cleared event says what was, not what is: its message is the last one raised while the
    // condition held, in the present tense ("above 50 °C"), which read as if it still held
    const forS = ((a.clearingSinceMs - a.raisedAtMs) / 1000).toFixed(1);
    this.emit({ type: "alarm.cleared", alarm: { ...a, message: `was: ${a.message} (for ${forS} s)` } });
  }

  private logRaise(id: string, now: number): void {
    this.raisedTotal++;
    const log = this.raiseLog.get(id) ?? [];
    while (log.length > 0 && log[0] < now - this.chatter.windowMs) log.shift();
    log.push(now);
    this.raiseLog.set(id, log);
  }

  /** Raises since the start, and the alarms chattering now. */
  stats(): AlarmStats {
    const from = this.now() - this.chatter.windowMs;
    const chattering: { id: string; raises: number }[] = [];
    for (const [id, log] of this.raiseLog) {
      while (log.length > 0 && log[0] < from) log.shift();
      if (log.length === 0) this.raiseLog.delete(id);
      else if (log.length > this.chatter.maxRaises) chattering.push({ id, raises: log.length });
    }
    return { raisedTotal: this.raisedTotal, chattering };
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
    for (const id of [...this.pending.keys()]) if (!keep(id)) this.pending.delete(id);
  }
}
