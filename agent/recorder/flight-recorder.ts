// The flight recorder: turns a trip (or an operator's request) into a recording of the control
// worker's ring around it. On a trigger it writes the pre-trigger window at once, so a daemon
// killed right after the trip still leaves the evidence, then keeps the ring recording for the
// post-trigger window and rewrites the file whole. Triggers that fire while a recording is open
// join it. Files go to <stateDir>/recordings, atomically, the newest `maxFiles` kept.
import { mkdirSync } from "node:fs";
import type { BankSpec } from "../../hotpath-as/bank-config.js";
import type { FlightRingReader, RingShape } from "../control/flight-ring.js";
import type { AgentEvent } from "../pod-api.js";
import { listRecordings, RECORDING_VERSION, removeLeftovers, rotateRecordings, streamRecording, type RecordingEntry, type RecordingHeader, type RecordingTrigger } from "./recording-file.js";
import type { RecorderConfig } from "./schema.js";

/** What a recording's header says of the daemon that wrote it. */
export type RecordingIdentity = Pick<RecordingHeader, "site" | "pod" | "configHash" | "build" | "periodMs" | "names">;

export interface RecorderDeps {
  dir: string;
  ring: FlightRingReader;
  identity: RecordingIdentity;
  /** the bank's config now (a tuning reload changes it) */
  spec: () => BankSpec;
  log: (level: "info" | "warn" | "error", message: string) => void;
  /** a recording could not be written (an alarm), or can be again (null) */
  onProblem: (message: string | null) => void;
  /** polls the ring for the end of the post-trigger window, ms */
  pollMs?: number;
}

/** The ring the worker needs for a recorder of this config, at this tick period. */
export function ringFor(c: RecorderConfig, periodMs: number): Pick<RingShape, "capacity" | "checkpointEvery" | "decimation"> & { preTicks: number; postTicks: number } {
  const perS = 1000 / periodMs / c.decimation;
  const preTicks = Math.ceil(c.preS * perS);
  const postTicks = Math.ceil(c.postS * perS);
  // a checkpoint every 250 ms (about 7 KB for the demo pod's bank, copied in a few µs): replay
  // starts at the last one before the window, so the ring holds up to 250 ms more than the
  // window; and one second of slack for a busy main thread copying the window out
  const checkpointEvery = c.decimation === 1 ? Math.max(1, Math.round(250 / periodMs)) : 0;
  const slack = Math.ceil(perS);
  return { capacity: preTicks + postTicks + checkpointEvery + slack, checkpointEvery, decimation: c.decimation, preTicks, postTicks };
}

/** The trip an agent event is, as a recording's trigger reason; null when it is none. */
export function tripOf(e: AgentEvent): string | null {
  if ((e.type === "alarm.raised" || e.type === "alarm.escalated") && (e.alarm.severity === "Critical" || e.alarm.id === "control:overrun")) return `alarm:${e.alarm.id}`;
  if (e.type === "mode.changed" && e.to === "Failsafe") return "mode:Failsafe";
  if (e.type === "leak.escalated") return `escalation:${e.rack}`;
  // a pump failover: the seconds around a lead lost are what an engineer will ask for
  if (e.type === "pump.duty" && e.why !== "duty rotation") return `failover:${e.from}`;
  return null;
}

/** triggers a recording lists; more join it unlisted */
const MAX_TRIGGERS = 100;

function compactTime(d: Date): string {
  return d.toISOString().replace(/[-:]/g, "").replace(".", "");
}

interface Open {
  id: string;
  triggerSeq: number;
  fromSeq: number;
  /** the window ends here: the last trigger's post-trigger window, within the ring's reach */
  endSeq: number;
  /** a trigger joined since the file was last written */
  dirty: boolean;
  savedAtMs: number;
  triggers: RecordingTrigger[];
  createdAt: string;
}

export class FlightRecorder {
  private open: Open | null = null;
  private timer: NodeJS.Timeout | undefined;
  private writes: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private lastId = "";
  readonly preTicks: number;
  readonly postTicks: number;
  private readonly maxWindow: number;

  constructor(
    private readonly c: RecorderConfig,
    private readonly d: RecorderDeps,
  ) {
    const ring = ringFor(c, d.identity.periodMs);
    this.preTicks = ring.preTicks;
    this.postTicks = ring.postTicks;
    // the longest window the ring can give whole: all it holds less the slack for this thread
    this.maxWindow = ring.preTicks + ring.postTicks + ring.checkpointEvery;
    mkdirSync(d.dir, { recursive: true, mode: 0o700 });
    removeLeftovers(d.dir);
  }

  /** Where the recordings go. */
  get dir(): string {
    return this.d.dir;
  }

  /** The recordings on disk, oldest first. */
  list(): RecordingEntry[] {
    return listRecordings(this.d.dir).recordings;
  }

  /**
   * Fires a trigger. Opens a recording (its pre-trigger window written at once) or joins the open
   * one. Returns the recording's id.
   */
  trigger(reason: string): string {
    if (this.stopped) throw new Error("the flight recorder is stopped");
    const seq = this.d.ring.written();
    const t: RecordingTrigger = { reason, seq, at: new Date().toISOString() };
    if (this.open !== null) {
      // it joins, and its own post-trigger window is kept as far as the ring reaches; the file is
      // rewritten soon (at most once a second), so the evidence of this trigger too survives a kill
      const o = this.open;
      // a storm of triggers (an alarm flapping, a command repeated) joins without growing the
      // header past a bound: the first MAX_TRIGGERS are listed
      if (o.triggers.length < MAX_TRIGGERS) o.triggers.push(t);
      o.endSeq = Math.max(o.endSeq, Math.min(seq + this.postTicks, o.fromSeq + this.maxWindow));
      o.dirty = true;
      return o.id;
    }
    const now = new Date();
    let id = `${compactTime(now)}-${reason.replace(/[^A-Za-z0-9-]+/g, "-").slice(0, 48)}`;
    if (id === this.lastId) id += "-2";
    this.lastId = id;
    const every = this.d.ring.shape.checkpointEvery;
    const start = Math.max(0, seq - this.preTicks);
    // replay starts at a checkpoint: the window reaches back to the last one at or before its start
    const fromSeq = every > 0 ? Math.floor(start / every) * every : start;
    this.open = { id, triggerSeq: seq, fromSeq, endSeq: seq + this.postTicks, dirty: false, savedAtMs: 0, triggers: [t], createdAt: now.toISOString() };
    this.d.log("warn", `flight recorder: ${reason}: recording ${id}`);
    this.save(false);
    this.timer = setInterval(() => {
      const o = this.open;
      if (o === null) return;
      if (this.d.ring.written() >= o.endSeq) this.finish();
      else if (o.dirty && performance.now() - o.savedAtMs >= 1000) this.save(false);
    }, this.d.pollMs ?? 100);
    return id;
  }

  /** Writes the open recording with what the ring holds now. */
  private save(complete: boolean): void {
    const o = this.open;
    if (o === null) return;
    const ring = this.d.ring;
    o.dirty = false;
    o.savedAtMs = performance.now();
    const end = complete ? o.endSeq : ring.written();
    const head = {
      format: "podwarden-flight-recording" as const,
      version: RECORDING_VERSION,
      id: o.id,
      ...this.d.identity,
      createdAt: o.createdAt,
      decimation: ring.shape.decimation,
      checkpointEvery: ring.shape.checkpointEvery,
      sizes: { points: ring.shape.points, loops: ring.shape.loops, racks: ring.shape.racks },
      spec: this.d.spec(),
      triggers: [...o.triggers],
      triggerSeq: o.triggerSeq,
      complete,
    };
    const write = async (): Promise<void> => {
      try {
        const { count } = await streamRecording(this.d.dir, head, ring, o.fromSeq, end);
        if (complete) {
          const gone = await rotateRecordings(this.d.dir, this.c.maxFiles);
          this.d.log("info", `flight recorder: ${o.id} written (${count} ticks${gone.length > 0 ? `; removed the oldest: ${gone.join(", ")}` : ""})`);
        }
        this.d.onProblem(null);
      } catch (err) {
        const why = `flight recording ${o.id} not written: ${(err as Error).message}`;
        this.d.log("error", why);
        this.d.onProblem(why);
      }
    };
    // one after another: the complete file must land after the pre-trigger one
    this.writes = this.writes.then(write);
  }

  private finish(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.save(true);
    this.open = null;
  }

  /** Resolves when every write asked for so far has landed. */
  async flushed(): Promise<void> {
    await this.writes;
  }

  /** Stops: an open recording is written with what the ring holds (marked incomplete). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.open !== null) {
      this.save(false);
      this.open = null;
    }
    await this.writes;
  }
}
