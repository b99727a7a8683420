// The flight recorder as a pod feature: it finds its trips by listening to the pod's events
// (tripOf), and an operator's `record` command asks it for the window around now. Its ring lives
// in the control worker's shared memory; this feature turns the ring's windows into files.
import { join } from "node:path";
import { bankPointIds } from "../../pod/layout.js";
import { packageVersion, type PodContext, type PodFeature } from "../pod-context.js";
import { FlightRecorder, ringFor, tripOf } from "./flight-recorder.js";
import { recentSummaries, type RecordingEntry } from "./recording-file.js";

export class RecorderFeature implements PodFeature {
  readonly name = "recorder";
  /** null: off, or no state directory to write to */
  private recorder: FlightRecorder | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly ctx: PodContext) {}

  /** The ring the control worker keeps for the recorder, or undefined when it is off. */
  ring(): ReturnType<typeof ringFor> | undefined {
    const c = this.ctx.config;
    return c.recorder.enabled && this.ctx.stateDir !== undefined ? ringFor(c.recorder, c.control.periodMs) : undefined;
  }

  start(): void {
    const { config: c, layout, stateDir: dir } = this.ctx;
    const control = this.ctx.control();
    const ring = control.ring;
    if (ring === null || dir === undefined) {
      if (c.recorder.enabled) this.ctx.log("agent").warn("flight recorder off: no state directory to write recordings to");
      return;
    }
    const log = this.ctx.log("recorder");
    try {
      this.recorder = new FlightRecorder(c.recorder, {
        dir: join(dir, "recordings"),
        ring,
        identity: {
          site: c.site,
          pod: c.pod,
          configHash: this.ctx.configHash,
          build: { version: packageVersion(), hotPath: control.hotPath },
          periodMs: c.control.periodMs,
          names: {
            points: bankPointIds(c),
            loops: Array.from({ length: layout.loops }, (_, i) => layout.loopName(i)),
            racks: c.racks.map((r) => r.name),
          },
        },
        spec: () => control.bankSpec,
        log: (level, message) => log[level](message),
        onProblem: (why) => (why === null ? this.ctx.resolveProblem("recorder") : this.ctx.reportProblem("recorder", { severity: "Warning", source: "agent", message: why })),
      });
    } catch (err) {
      this.ctx.reportProblem("recorder", { severity: "Warning", source: "agent", message: `flight recorder off: ${(err as Error).message}` });
      return;
    }
    this.unsubscribe = this.ctx.onEvent((e) => {
      const trip = tripOf(e);
      if (trip !== null) this.trip(trip);
    });
  }

  private trip(reason: string): void {
    try {
      this.recorder?.trigger(reason);
    } catch (err) {
      this.ctx.log("agent").warn({ reason }, `flight recorder: ${(err as Error).message}`);
    }
  }

  /** An operator's recording: the window around now; its id. Throws when there is no recorder. */
  recordNow(by: string): string {
    if (this.recorder === null) throw new Error("the flight recorder is off (recorder.enabled, and a state directory)");
    const id = this.recorder.trigger(`operator:${by}`);
    this.ctx.emit({ type: "command.audit", action: "record", by, result: id });
    return id;
  }

  recentRecordings(n: number): ReturnType<typeof recentSummaries> {
    return recentSummaries(this.recordings(), n);
  }

  /** The recordings on disk, oldest first (none without a recorder). */
  recordings(): RecordingEntry[] {
    return this.recorder?.list() ?? [];
  }

  /** The recordings' directory (undefined without a recorder). */
  get dir(): string | undefined {
    return this.recorder?.dir;
  }

  /** Resolves when the recorder has written what it was asked to (tests, and a clean stop). */
  async flushed(): Promise<void> {
    await this.recorder?.flushed();
  }

  /** A recording still open is written with what the ring holds. */
  async settle(): Promise<void> {
    this.unsubscribe?.();
    await this.recorder?.stop();
  }
}
