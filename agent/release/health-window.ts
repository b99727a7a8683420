// The health window after an upgrade, pure: a new version is judged against the last good run
// (issue #51 item 2). It passes when, at its end, the control loop is healthy, every device that
// answered under the last good version answers, and no Critical alarm was raised in it that the
// last good run did not also have. What failed is said in words, for the record and the alarm.
import type { PodMode } from "../supervisor/supervisor.js";

/** A build: the version and the commit it was made from (dist/build-info.json). */
export interface ReleaseId {
  version: string;
  commit: string | null;
}

/** The last run judged good: what the next version's window is held to. */
export interface GoodRun extends ReleaseId {
  at: string;
  /** the devices that answered */
  devices: string[];
  /** the Critical alarms that stood */
  criticals: string[];
}

/** What the window samples at each supervisor pass. */
export interface WindowSample {
  mode: PodMode;
  /** no Critical control: alarm stands (control:stalled: the worker not ticking) */
  controlHealthy: boolean;
  /** the configured devices answering now (their breakers closed) */
  answering: readonly string[];
  /** the configured devices */
  configured: readonly string[];
  /** the Critical alarms active now */
  criticals: readonly string[];
}

export type WindowVerdict = { ok: true; devices: string[]; criticals: string[] } | { ok: false; why: string[] };

export const sameRelease = (a: ReleaseId, b: ReleaseId): boolean => a.version === b.version && a.commit === b.commit;
export const releaseName = (r: ReleaseId): string => `${r.version} (${r.commit === null ? "commit unknown" : `commit ${r.commit.slice(0, 12)}`})`;

export class HealthWindow {
  private last: WindowSample | null = null;
  /** every Critical alarm seen during the window, with the first time it was */
  private readonly seen = new Set<string>();

  constructor(
    /** null: no good run recorded (a first start here): control alone is judged */
    private readonly baseline: GoodRun | null,
    readonly startMs: number,
    readonly windowMs: number,
  ) {}

  sample(s: WindowSample): void {
    this.last = s;
    for (const c of s.criticals) this.seen.add(c);
  }

  /**
   * null until the window's end; then the verdict, from the samples. A pod still Starting (waiting
   * for valid inputs, 30 s at most: the supervisor) holds the verdict back: it is not yet itself.
   */
  verdict(nowMs: number): WindowVerdict | null {
    if (nowMs - this.startMs < this.windowMs || this.last === null || this.last.mode === "Starting") return null;
    const s = this.last;
    const why: string[] = [];
    if (!s.controlHealthy || s.mode === "Failsafe") why.push(`control not healthy at the window's end (mode ${s.mode}${s.controlHealthy ? "" : ", control:stalled standing"})`);
    if (this.baseline !== null) {
      const was = releaseName(this.baseline);
      // a device taken out of the config since is not missed
      const missing = this.baseline.devices.filter((d) => s.configured.includes(d) && !s.answering.includes(d));
      if (missing.length > 0) why.push(`${missing.length === 1 ? "device" : "devices"} ${missing.join(", ")} answered under ${was} and ${missing.length === 1 ? "does" : "do"} not now`);
      const fresh = [...this.seen].filter((c) => !this.baseline!.criticals.includes(c)).sort();
      if (fresh.length > 0) why.push(`Critical ${fresh.length === 1 ? "alarm" : "alarms"} ${fresh.join(", ")} raised in the window, not standing under ${was}`);
    }
    return why.length > 0 ? { ok: false, why } : { ok: true, devices: [...s.answering].sort(), criticals: [...s.criticals].sort() };
  }
}
