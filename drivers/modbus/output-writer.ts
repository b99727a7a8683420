// One Modbus output's writes: a command sent when the value changes, refreshed periodically,
// optionally read back and compared; one write in flight at a time, the newest value after it.
import { monoMs } from "../../lib/clock.js";
import type { OutputState, PointStore, Quality } from "../../lib/points.js";
import type { Bus, BusDevice, Job } from "./bus.js";
import { decodeValue, registerCount } from "./codec.js";
import type { OutputConfig } from "./config.js";
import type { DeviceLease } from "./lease.js";
import { FC } from "./protocol.js";
import { exceptionPolicy, type ModbusOutcome, type ModbusRequest } from "./types.js";
import { encodeOutput, writeRequest } from "./values.js";

/** The device an output is on, as the writer needs it. */
export interface WriterDevice extends BusDevice {
  bus: Bus;
  lease: DeviceLease | null;
}

export function outcomeQuality(o: Extract<ModbusOutcome, { ok: false }>): Quality {
  switch (o.kind) {
    case "timeout":
      return "timeout";
    case "corrupt":
    case "collision":
      return "corrupt";
    case "exception":
      return exceptionPolicy(o.code ?? 0).quality;
    case "disconnected":
      return "disconnected";
    case "error":
      return "disconnected";
  }
}

const sameWords = (a: number[] | null, b: number[] | null): boolean => a !== null && b !== null && a.length === b.length && a.every((x, i) => x === b[i]);

export class OutputWriter {
  readonly state: OutputState;
  private raw: number[] | null = null;
  private lastSentRaw: number[] | null = null;
  /** the write on the bus or queued for it, and whether it is a refresh */
  private job: Job | null = null;
  private jobIsRefresh = false;
  private dirty = false;

  constructor(
    readonly id: string,
    readonly device: WriterDevice,
    readonly config: OutputConfig,
    private readonly points: PointStore,
    private readonly running: () => boolean,
  ) {
    this.state = { id, value: null, written: null, writtenAtMs: null, quality: "disconnected", writes: 0, failures: 0 };
  }

  /** Sets the value (engineering units): written now if it changed; throws on a bad value. */
  set(value: number): void {
    if (!Number.isFinite(value)) throw new RangeError(`${this.id}: ${value} is not a finite number`);
    const raw = encodeOutput(this.config, value);
    this.state.value = value;
    // an unchanged value keeps the words it has: the new array then dies young, where replacing
    // it at every actuator pass (20 a second per output) made each one old-generation garbage
    if (!sameWords(raw, this.raw)) this.raw = raw;
    if (!sameWords(raw, this.lastSentRaw)) this.write(false);
  }

  /** Sends the value in force again (its refresh timer). */
  refresh(): void {
    if (this.running() && this.raw !== null) this.write(true);
  }

  /**
   * Sends the value. A command (a value not sent before) goes at the output's priority; a
   * refresh (the value in force, sent again) at 1 or lower, behind the bus's safety traffic: the
   * refreshes of a rack's isolation and power outputs, all on one 1 s timer, put 16 writes and
   * read-backs at once at the head of a 19,200-baud line's queue, which a leak's poll and close
   * waited behind. A command takes the place of a refresh still queued (Bus.withdraw): a close
   * waited for a queued refresh of its valve, behind the line's control traffic, up to 140 ms at
   * 19,200 baud (`npm run bench -- --only leak-rtu`, BENCHMARKS.md).
   */
  private write(refresh: boolean): void {
    // held back, not lost: the value stays unsent (lastSentRaw), so the next pass or refresh sends it
    if (!this.running() || this.raw === null || this.device.lease?.silent() === true) return;
    if (this.job !== null) {
      const replaced = !refresh && this.jobIsRefresh && this.device.bus.withdraw(this.job);
      if (!replaced) {
        this.dirty = true; // one write in flight per output; the newest value follows it
        return;
      }
    }
    const raw = this.raw;
    const value = this.state.value;
    const c = this.config;
    const priority = refresh ? Math.max(c.priority, 1) : c.priority;
    const job: Job = {
      device: this.device,
      request: writeRequest(c, raw),
      priority,
      sheddable: false,
      done: (o) => {
        this.job = null;
        this.state.writes++;
        if (!o.ok) {
          this.state.failures++;
          this.state.quality = outcomeQuality(o);
        } else {
          this.lastSentRaw = raw;
          this.state.written = value;
          this.state.writtenAtMs = monoMs();
          if (c.verify) this.verify(raw, priority);
          else this.state.quality = "good";
        }
        if (this.dirty) {
          this.dirty = false;
          if (!sameWords(this.raw, this.lastSentRaw)) this.write(false);
        }
      },
    };
    this.job = job;
    this.jobIsRefresh = refresh;
    this.device.bus.submit(job);
  }

  private verify(raw: number[], priority: number): void {
    const c = this.config;
    const req: ModbusRequest = c.table === "coil" ? { fc: FC.READ_COILS, address: c.address, count: 1 } : { fc: FC.READ_HOLDING_REGISTERS, address: c.address, count: registerCount(c.type) };
    this.device.bus.submit({
      device: this.device,
      request: req,
      priority,
      sheddable: false,
      done: (o) => {
        if (!o.ok) {
          this.state.quality = outcomeQuality(o);
          return;
        }
        const decode = (words: number[]): number => (c.table === "coil" ? words[0] : decodeValue(words, 0, c.type, c.order) * c.scale + c.offset);
        const read = decode(o.data);
        const sent = decode(raw);
        this.state.quality = Math.abs(read - sent) <= c.tolerance ? "good" : "mismatch";
        this.points.publish({ id: this.id, value: read, sourceTimeMs: monoMs(), quality: this.state.quality, unit: c.unit });
      },
    });
  }
}
