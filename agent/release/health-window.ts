// The health window, pure: a new version (issue #51 item 2), or a pushed config (item 4), is
// judged against the run before it. It passes when, at its end, the control loop is healthy,
// every device that answered before answers, and no Critical alarm was raised in it that the run
// before did not also have. What failed is said in words, for the record and the alarm.
import type { PodMode } from "../supervisor/supervisor.js";

/** A build: the version and the commit it was made from (dist/build-info.json). */
export interface ReleaseId {
  version: string;
  commit: string | null;
}

/** What a window is held to: the devices that answered and the Critical alarms that stood. */
export interface Baseline {
  devices: string[];
  criticals: string[];
}

/** The last run judged good: what the next version's window is held to. */
export interface GoodRun extends ReleaseId, Baseline {
  at: string;
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
    private readonly baseline: Baseline | null,
    readonly startMs: number,
    readonly windowMs: number,
    /** the run before, as the verdict names it ("under 0.4.1 (commit ...)", "before the push") */
    private readonly was: string,
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
      const was = this.was;
      // a device taken out of the config since is not missed
      const missing = this.baseline.devices.filter((d) => s.configured.includes(d) && !s.answering.includes(d));
      if (missing.length > 0) why.push(`${missing.length === 1 ? "device" : "devices"} ${missing.join(", ")} answered ${was} and ${missing.length === 1 ? "does" : "do"} not now`);
      const fresh = [...this.seen].filter((c) => !this.baseline!.criticals.includes(c)).sort();
      if (fresh.length > 0) why.push(`Critical ${fresh.length === 1 ? "alarm" : "alarms"} ${fresh.join(", ")} raised in the window, not standing ${was}`);
    }
    return why.length > 0 ? { ok: false, why } : { ok: true, devices: [...s.answering].sort(), criticals: [...s.criticals].sort() };
  }
}
