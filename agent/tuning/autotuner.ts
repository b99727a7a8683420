// The relay autotune's session on the main thread: starts a loop's tuning in the hot path,
// samples the loop's PV and output while the relay runs, stops it after the configured number of
// whole periods, and hands the samples to the analysis (relay-analysis.ts). Every abort that
// must be at once (an interlock, a bad input, a leak in the pod, the deviation bound, the
// timeout) happens in the hot path, in the tick; this module sees the end code afterwards and
// says why. One tuning at a time: the loops of a pod share one coolant loop, and a second relay
// would disturb the first's measurement.
import * as L from "../../hotpath-as/assembly/layout.js";
import type { TuneState } from "../control/control-thread.js";
import type { TuningStatus } from "../pod-api.js";
import { analyseRelay, type TuneSample } from "./relay-analysis.js";

/** What the autotuner takes of the pod: the control thread's tuning requests and state. */
export interface TuneControl {
  /** returns the start count the worker reports in TuneState.applied once it has taken this start */
  startTune(loop: number): number;
  stopTune(loop: number): void;
  tuneState(loop: number): TuneState | undefined;
}

export interface TunableLoop {
  name: string;
  action: "direct" | "reverse";
  /** 0: the loop cannot be tuned */
  amplitude: number;
  cycles: number;
}

/**
 * How often a running tuning reads the loop's PV and output, ms. The pump loop on the simulator
 * oscillates with a period of 0.4 s under the relay (dp answers the pump within a Modbus poll):
 * at the 50 ms actuator pass that was 8 samples a period, and its phase came out at -69° where
 * a relay sits near -180°. 10 ms gives 40. The timer runs only while a tuning does.
 */
export const TUNE_SAMPLE_MS = 10;

/** A start the control thread has not taken in this long is given up, ms (it takes one at its next tick). */
export const START_TIMEOUT_MS = 5000;

/** Samples kept at most: 2 h (the longest timeout) at 10 ms is 720,000 (17 MB as objects). */
const MAX_SAMPLES = 750_000;

const END_WORDS: Record<number, string> = {
  [L.TUNE_END_INTERLOCK]: "the loop's rack was isolated (the leak interlock took the loop)",
  [L.TUNE_END_BAD_INPUT]: "an input or command of the loop went bad (the fail-safe interlock took the loop)",
  [L.TUNE_END_LEAK]: "a leak, or a latched isolation, in the pod",
  [L.TUNE_END_TIMEOUT]: "its timeout (control.*.autotune.timeoutS) ran out",
  [L.TUNE_END_DEVIATION]: "the PV left the operating point by more than control.*.autotune.deviationMax",
  [L.TUNE_END_ENVELOPE]: "the operating output leaves the relay no room in the loop's envelope (or autotune.amplitude is 0)",
};

interface Session {
  loop: number;
  status: TuningStatus;
  /** the control thread's start count this session waits to see applied */
  applied: number;
  /** the loop's bounds as they stood at the start: its periods decide its end and its analysis */
  spec: TunableLoop;
  startedAtMs: number;
  samples: TuneSample[];
  lastTickMs: number;
}

export class Autotuner {
  private session: Session | null = null;
  /** the last tuning of each loop, by index */
  private readonly last = new Map<number, TuningStatus>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly control: TuneControl,
    /** a loop's bounds as the config has them now (a reload may change them), undefined for no such loop */
    private readonly loopSpec: (loop: number) => TunableLoop | undefined,
    private readonly on: { ended(s: TuningStatus): void; now(): Date; monoMs(): number },
    private readonly sampleMs = TUNE_SAMPLE_MS,
  ) {}

  /** The running tuning's loop, or null. */
  get running(): number | null {
    return this.session?.loop ?? null;
  }

  /** A loop's tuning: the running one, or the last one; null if it was never tuned since start. */
  status(loop: number): TuningStatus | null {
    if (this.session?.loop === loop) return { ...this.session.status };
    return this.last.get(loop) ?? null;
  }

  /**
   * Starts a tuning of `loop`; throws with the reason on a refusal (one at a time, a loop with no
   * relay amplitude). The pod's own reasons (a leak, an interlock, the loop's mode) the caller
   * checks first.
   */
  start(loop: number, by: string): TuningStatus {
    const spec = this.loopSpec(loop);
    if (spec === undefined) throw new Error(`no loop ${loop}`);
    if (this.session !== null) throw new Error(`${this.session.spec.name} is being tuned: one tuning at a time (abort it first)`);
    if (!(spec.amplitude > 0)) throw new Error(`${spec.name} has no relay amplitude (control.*.autotune.amplitude is 0): it cannot be tuned`);
    const status: TuningStatus = { loop: spec.name, by, startedAt: this.on.now().toISOString(), state: "starting", switches: 0, switchesNeeded: 2 * spec.cycles + 1 };
    const applied = this.control.startTune(loop);
    this.session = { loop, status, applied, spec, startedAtMs: this.on.monoMs(), samples: [], lastTickMs: -Infinity };
    this.timer = setInterval(() => this.poll(), this.sampleMs);
    this.timer.unref(); // a tuning never keeps a stopping process alive
    return { ...status };
  }

  /** Stops the running tuning of `loop` (an operator's abort, a mode change, a stop); null if none runs. */
  abort(loop: number, why: string): TuningStatus | null {
    const s = this.session;
    if (s === null || s.loop !== loop) return null;
    this.control.stopTune(loop);
    return this.finish(s, "aborted", why);
  }

  /** Stops whatever tuning runs (the agent stopping, the pod going to fail-safe). */
  abortAll(why: string): void {
    if (this.session !== null) this.abort(this.session.loop, why);
  }

  /**
   * Reads the running tuning's state from the last tick: a sample while the relay runs, the end
   * when the hot path ended it, the analysis when enough periods are in. Runs every sampleMs
   * while a tuning runs.
   */
  poll(): void {
    const s = this.session;
    if (s === null) return;
    const t = this.control.tuneState(s.loop);
    if (t === undefined || t.applied !== s.applied) {
      // the worker has not taken the start yet; a worker that never does (stopped, stalled) must
      // not leave a tuning "starting" for ever, holding off every other
      if (this.on.monoMs() - s.startedAtMs > START_TIMEOUT_MS) {
        this.control.stopTune(s.loop);
        this.finish(s, "failed", `the control thread did not take the start within ${START_TIMEOUT_MS / 1000} s`);
      }
      return;
    }
    if (t.phase === L.TUNE_OFF) {
      this.finish(s, "aborted", `the hot path ended it: ${END_WORDS[t.end] ?? `end code ${t.end}`}`);
      return;
    }
    s.status.state = t.phase === L.TUNE_RELAY ? "relay" : "noise";
    if (t.phase !== L.TUNE_RELAY) return;
    s.status.relay = { center: t.center, hysteresis: t.hysteresis, amplitude: t.d };
    s.status.switches = t.switches;
    if (t.tickMs > s.lastTickMs) {
      s.lastTickMs = t.tickMs;
      if (s.samples.length >= MAX_SAMPLES) {
        this.control.stopTune(s.loop);
        this.finish(s, "failed", `more than ${MAX_SAMPLES} samples without enough relay periods`);
        return;
      }
      s.samples.push({ tMs: t.tickMs, pv: t.pv, out: t.out, switches: t.switches });
    }
    if (t.switches < s.status.switchesNeeded) return;
    this.control.stopTune(s.loop);
    try {
      const result = analyseRelay({ samples: s.samples, action: s.spec.action, d: t.d, hysteresis: t.hysteresis, cycles: s.spec.cycles });
      s.status.result = result;
      this.finish(s, "done");
    } catch (err) {
      this.finish(s, "failed", (err as Error).message);
    }
  }

  private finish(s: Session, state: "done" | "aborted" | "failed", reason?: string): TuningStatus {
    s.status.state = state;
    s.status.endedAt = this.on.now().toISOString();
    if (reason !== undefined) s.status.reason = reason;
    this.session = null;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.last.set(s.loop, s.status);
    this.on.ended({ ...s.status });
    return { ...s.status };
  }
}
