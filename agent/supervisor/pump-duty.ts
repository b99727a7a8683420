// Lead/lag duty of the CDU's redundant pumps (cdu.pumps, cdu.pumpDuty): one pump leads on the
// pump loop's speed while the others stand by. A lead whose drive reports a fault, or that was
// commanded to run and has not proven it within failoverMs, fails over to the next pump in
// order; the lead rotates on a wall-clock schedule so the pumps share the running hours.
//
// The rotation is a slot of rotateHours since the epoch, not a timer: a daemon restarted every
// day still rotates, and a restart keeps the slot's lead (no run-hours file to lose or to
// disagree with the drives). Pure: the supervisor hands it the readings and the clocks.
import type { AlarmManager } from "./alarms.js";
import type { Reading } from "./reading.js";

export interface PumpDutyPolicy {
  failoverMs: number;
  rotateHours: number;
  overlapMs: number;
}

/** A pump's status inputs; undefined where the config gives none. */
export interface PumpReadings {
  fault?: Reading;
  running?: Reading;
}

export interface DutyInputs {
  nowMs: number;
  /** wall-clock ms since the epoch: the rotation's slot */
  wallMs: number;
  /** the pumps may run at all (false: an escalation's pump stop) */
  enabled: boolean;
  /** the pump loop's speed command, % */
  speedPct: number;
  pumps: readonly PumpReadings[];
}

export type DutyEvent = { type: "pump.duty"; from: string; to: string; why: string };

/**
 * Below this speed command a pump is not expected to prove running: a drive's minimum speed, and
 * the sim's 1 % running threshold, lie under it.
 */
export const PROOF_MIN_SPEED_PCT = 5;

interface Failure {
  why: string;
  /** a failure to prove running: nothing says it is over, so it holds until a reload (release) */
  latched: boolean;
}

const HOUR_MS = 3_600_000;

/** The rotation's slot at `wallMs`: rotateHours-long since the epoch (always 0 when it does not rotate). */
const slotOf = (policy: Pick<PumpDutyPolicy, "rotateHours">, wallMs: number): number => (policy.rotateHours > 0 ? Math.floor(wallMs / (policy.rotateHours * HOUR_MS)) : 0);

/** The pump that leads in the rotation's slot at `wallMs`, all pumps available. */
export function slotLead(pumps: number, policy: Pick<PumpDutyPolicy, "rotateHours">, wallMs: number): number {
  if (pumps <= 1) return 0;
  const slot = slotOf(policy, wallMs);
  return ((slot % pumps) + pumps) % pumps;
}

const isOn = (r: Reading | undefined): boolean => r !== undefined && r.good && r.value >= 0.5;
const isOff = (r: Reading | undefined): boolean => r !== undefined && r.good && r.value < 0.5;
const unknown = (r: Reading | undefined): boolean => r !== undefined && !r.good;

export class PumpDuty {
  private lead_: number;
  private slot: number;
  /** the old lead kept running through a rotation's overlap */
  private outgoing: { pump: number; untilMs: number } | null = null;
  private readonly failed: (Failure | null)[];
  /** since when each pump has been commanded to run without proving it (ms), or null */
  private readonly unproven: (number | null)[];
  private run_: boolean[];
  private failovers_ = 0;

  constructor(
    private readonly names: readonly string[],
    private readonly policy: PumpDutyPolicy,
    wallMs: number,
    /** the lead to keep (a structural reload carries it over), else the slot's */
    lead?: string,
  ) {
    this.slot = slotOf(policy, wallMs);
    const kept = lead === undefined ? -1 : names.indexOf(lead);
    this.lead_ = kept >= 0 ? kept : slotLead(names.length, policy, wallMs);
    this.failed = names.map(() => null);
    this.unproven = names.map(() => null);
    this.run_ = names.map((_, i) => i === this.lead_);
  }

  get lead(): number {
    return this.lead_;
  }

  /** The lead's name. */
  get leadName(): string {
    return this.names[this.lead_];
  }

  /** Lead changes a failure forced. */
  get failovers(): number {
    return this.failovers_;
  }

  /** A reload: the pumps that failed to prove running come back in duty (an operator reset their drives). */
  release(): void {
    this.failed.forEach((f, i) => {
      if (f?.latched === true) this.failed[i] = null;
    });
  }

  /** The first pump from `from` on (wrapping) that is not failed, known-good before unknown; null if none. */
  private pick(from: number, x: DutyInputs, except = -1): number | null {
    const n = this.names.length;
    const order = Array.from({ length: n }, (_, k) => (from + k) % n).filter((i) => i !== except && this.failed[i] === null);
    const known = order.find((i) => !unknown(x.pumps[i]?.fault) && !unknown(x.pumps[i]?.running));
    return known ?? order[0] ?? null;
  }

  /**
   * One pass: failures seen, the lead chosen, each pump's run decision, its alarms raised or
   * cleared. While `starting`, a status input not read yet raises nothing (its failure would).
   */
  pass(x: DutyInputs, alarms: AlarmManager, emit: (e: DutyEvent) => void, starting = false): boolean[] {
    const now = x.nowMs;
    const n = this.names.length;
    for (let i = 0; i < n; i++) {
      const r = x.pumps[i] ?? {};
      const f = this.failed[i];
      if (isOn(r.fault)) this.failed[i] = { why: "its drive reports a trip or fault", latched: false };
      else if (f !== null && !f.latched && isOff(r.fault)) this.failed[i] = null;
      // proof of running: only a good 0 counts against it; an unknown reading holds no timer
      const commanded = this.run_[i] && x.enabled && x.speedPct >= PROOF_MIN_SPEED_PCT;
      if (!commanded || !isOff(r.running)) this.unproven[i] = null;
      else this.unproven[i] ??= now;
      const since = this.unproven[i];
      if (this.failed[i] === null && since !== null && now - since >= this.policy.failoverMs) {
        this.failed[i] = { why: `it did not prove running within ${this.policy.failoverMs / 1000} s of its command (out of duty until a reload)`, latched: true };
      }
    }

    // the rotation: a new slot hands the lead to its pump, the old lead running on for overlapMs
    const slot = slotOf(this.policy, x.wallMs);
    if (slot !== this.slot) {
      this.slot = slot;
      const next = this.pick(slotLead(n, this.policy, x.wallMs), x);
      if (next !== null && next !== this.lead_ && this.failed[this.lead_] === null) {
        emit({ type: "pump.duty", from: this.names[this.lead_], to: this.names[next], why: "duty rotation" });
        this.outgoing = { pump: this.lead_, untilMs: now + this.policy.overlapMs };
        this.lead_ = next;
      }
    }
    // a failed lead hands over at once, and stops
    const leadFailure = this.failed[this.lead_];
    if (leadFailure !== null) {
      const next = this.pick(this.lead_ + 1, x, this.lead_);
      if (next !== null) {
        emit({ type: "pump.duty", from: this.names[this.lead_], to: this.names[next], why: `failover: ${this.names[this.lead_]}: ${leadFailure.why}` });
        this.lead_ = next;
        this.failovers_++;
      }
    }
    const out = this.outgoing;
    if (out !== null && (now >= out.untilMs || this.failed[out.pump] !== null || out.pump === this.lead_)) this.outgoing = null;

    const none = this.failed.every((f) => f !== null);
    // with no pump left in duty every pump is asked to run: one whose trip clears, or whose
    // proof was wrong, then carries the loop
    this.run_ = this.names.map((_, i) => none || i === this.lead_ || i === this.outgoing?.pump);

    for (let i = 0; i < n; i++) {
      const name = this.names[i];
      const f = this.failed[i];
      const r = x.pumps[i] ?? {};
      const unknownWhy = [r.fault, r.running].filter(unknown).map((q) => q?.why ?? "no good reading");
      const role = i === this.lead_ ? "the lead" : "a standby";
      alarms.update(`pump:${name}`, f !== null || (unknownWhy.length > 0 && !starting), {
        severity: "Warning",
        source: name,
        message:
          f !== null
            ? `${name} out of duty: ${f.why}${none ? "" : `; ${this.names[this.lead_]} leads`}`
            : `${name} (${role}) status unknown: ${unknownWhy.join("; ")}; ${i === this.lead_ ? "its failure could not be seen" : "it takes over only if no pump of known status can"}`,
      });
    }
    alarms.update("pumps:unavailable", none, {
      severity: "Critical",
      source: "cdu",
      message: `no pump left in duty (${this.failed.map((f, i) => `${this.names[i]}: ${f?.why ?? "?"}`).join("; ")}): every pump is commanded to run`,
    });
    return this.run_;
  }
}
