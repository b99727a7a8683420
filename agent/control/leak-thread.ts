// Main-thread handle on the leak thread (leak-worker.ts): starts it on the control worker's
// frames, hands it the supervisor's power decisions, republishes what it reports into the
// agent's point store, answers for the outputs it owns, stops it.
import { Worker } from "node:worker_threads";
import type { ModbusConfig } from "../../drivers/modbus/config.js";
import type { LeaseConfig } from "../../drivers/modbus/lease.js";
import { modbusOutputIds, type BusStats, type ModbusDriver, type OutputState } from "../../drivers/modbus/driver.js";
import type { Point } from "../../lib/points.js";
import type { PodConfig } from "../../pod/config.js";
import type { PodDecisions } from "../../pod/wiring.js";
import type { Frames } from "./frames.js";
import type { ScanOptions, ScanRow } from "../../drivers/modbus/bus-scan.js";
import { monoMs } from "../../lib/clock.js";
import type { LeakWorkerInput, LeakWorkerMessage, LeakWorkerRequest } from "./leak-worker.js";
import { SharedDecisions } from "./shared-decisions.js";
import { builtWorker } from "../../lib/worker-path.js";

type DriverStats = ReturnType<ModbusDriver["stats"]>;

/**
 * The suffix of the leak thread's TCP devices in the driver counters: its connections are its
 * own, beside the main driver's to the same device, and each is counted and alarmed apart. The
 * devices and buses of a serial bus it owns whole are named as they are: nobody else reaches them.
 */
export const LEAK_CONNECTION_SUFFIX = "#leak";

export interface LeakThreadOptions {
  modbus: ModbusConfig;
  /** the taken devices' leases (ModbusSplit.leases) */
  leases: Record<string, LeaseConfig>;
  pod: Pick<PodConfig, "racks" | "cdu">;
  /** the leak path's outputs (PodWiring.leakPath): the thread writes them from the frames and decisions itself */
  decides: readonly string[];
  /** the supervisor's power decisions before its first pass (PodWiring.initialDecisions) */
  decisions: PodDecisions;
  /** supervisor.powerBudget.writeCaps: the budget's caps are written, not only the no-coolant one */
  writeCaps: boolean;
  reportMs: number;
  passMs: number;
  /** SCHED_FIFO for the thread, at this priority (control.schedFifo); null: normal priority */
  fifoPriority: number | null;
  /** every point the thread reports (its leak inputs, its outputs' read-backs) */
  onPoint: (p: Point) => void;
  onLog: (level: "warn" | "error", message: string) => void;
  /** the thread ended without being asked to: its leak inputs go stale, and the hot path fails them */
  onDied: (why: string) => void;
}

export class LeakThread {
  private worker: Worker | null = null;
  private exited: Promise<void> = Promise.resolve();
  private readonly points: ReadonlySet<string>;
  private readonly outputs = new Map<string, OutputState>();
  private last: DriverStats = { devices: [], buses: [], polls: [] };
  /** kept across restarts of the thread: a new one writes the power the supervisor last decided */
  private readonly decisions: SharedDecisions;
  /** whether the running thread got SCHED_FIFO */
  sched: "on" | "refused" | "off" = "off";
  /** the control plane's health as a deadline, µs of monoMs (LeakWorkerInput.health) */
  private readonly healthyUntilUs = new BigInt64Array(new SharedArrayBuffer(8));
  /** the outputs the thread writes from the frames and decisions itself: the rest of an owned bus's are sent to it */
  private readonly decided: ReadonlySet<string>;
  /** the last command sent for each of the others: a pass sends only what changed or is not yet confirmed */
  private readonly sent = new Map<string, number>();
  /** the TCP devices, whose counters carry LEAK_CONNECTION_SUFFIX */
  private readonly tcp: ReadonlySet<string>;
  private readonly scans = new Map<number, { resolve: (rows: ScanRow[]) => void; reject: (err: Error) => void }>();
  private scanRef = 0;

  constructor(private readonly o: LeakThreadOptions) {
    this.points = new Set(o.modbus.devices.flatMap((d) => d.points.map((p) => `${d.name}.${p.name}`)));
    for (const id of modbusOutputIds(o.modbus)) this.outputs.set(id, { id, value: null, written: null, writtenAtMs: null, quality: "disconnected", writes: 0, failures: 0 });
    this.decisions = new SharedDecisions(o.pod.racks.length, o.decisions);
    this.decided = new Set(o.decides);
    this.tcp = new Set(o.modbus.devices.filter((d) => d.tcp !== undefined).map((d) => d.name));
  }

  /** Starts the thread on the control worker's frames; resolves when its driver runs. */
  async start(frames: Frames): Promise<void> {
    const input: LeakWorkerInput = { modbus: this.o.modbus, leases: this.o.leases, pod: this.o.pod, decisions: this.decisions.buffer, writeCaps: this.o.writeCaps, sizes: frames.sizes, buffers: frames.buffers, reportMs: this.o.reportMs, passMs: this.o.passMs, health: this.healthyUntilUs.buffer, schedFifo: this.o.fifoPriority !== null, schedPriority: this.o.fifoPriority ?? 0 };
    // A driver and a few connections: its heap holds 8–10 MB (measured under the bench's 1 ms
    // polls), so 32 MB of old generation bounds a leak without ever being reached. The young
    // generation is not set here: the process's --max-semi-space-size/--optimize-for-size flags
    // override a worker's resourceLimits for it (measured: 2, 16 and 64 MB gave the same number
    // of scavenges under those flags), so every isolate gets 1 MB semi-spaces.
    const worker = new Worker(builtWorker(import.meta.url, "leak-worker.js"), { workerData: input, resourceLimits: { maxOldGenerationSizeMb: 32 } });
    this.worker = worker;
    this.sent.clear(); // a new thread's driver has had no command yet
    let ready!: () => void;
    const started = new Promise<void>((r) => (ready = r));
    worker.on("message", (m: LeakWorkerMessage) => this.onMessage(m, ready));
    let failure = "";
    worker.on("error", (err) => {
      failure = err.message;
      this.o.onLog("error", `leak thread: ${err.message}`);
    });
    this.exited = new Promise((resolve) =>
      worker.once("exit", (code) => {
        if (this.worker === worker) this.o.onDied(failure === "" ? `exit code ${code}` : failure);
        this.worker = null;
        for (const s of this.scans.values()) s.reject(new Error("the leak thread stopped during the scan"));
        this.scans.clear();
        resolve();
      }),
    );
    const outcome = await Promise.race([started.then(() => "ok" as const), this.exited.then(() => "exited" as const)]);
    if (outcome !== "ok") throw new Error("leak thread did not start");
  }

  private onMessage(m: LeakWorkerMessage, ready: () => void): void {
    switch (m.kind) {
      case "ready":
        this.sched = m.sched;
        ready();
        return;
      case "warn":
        this.o.onLog("warn", m.message);
        return;
      case "report":
        for (const s of m.outputs) this.outputs.set(s.id, s);
        this.last = m.stats;
        for (const p of m.points) this.o.onPoint(p);
        return;
      case "scanned": {
        const s = this.scans.get(m.ref);
        this.scans.delete(m.ref);
        if (m.rows !== undefined) s?.resolve(m.rows);
        else s?.reject(new Error(m.error ?? "scan failed"));
        return;
      }
      case "stopped":
        return;
    }
  }

  private post(m: LeakWorkerRequest): void {
    this.worker?.postMessage(m);
  }

  /**
   * The control plane's command for an output of a bus the thread owns: false for the outputs the
   * thread decides itself (isolation, power), which it writes from the frames and decisions.
   */
  write(id: string, value: number): boolean {
    if (this.decided.has(id) || !this.outputs.has(id)) return false;
    if (this.worker === null) return false;
    // sent again until the device has confirmed it, as the control plane's own driver retries a
    // write that failed at every pass: an output with no refresh would keep a lost command lost
    if (this.sent.get(id) !== value || this.outputs.get(id)?.written !== value) this.post({ kind: "set", id, value });
    this.sent.set(id, value);
    return true;
  }

  /**
   * The control plane is healthy now (or not): the thread beats its owned devices' leases for
   * `forMs` more, and not past it unless told again, so a stalled control plane loses them.
   */
  setHealthy(healthy: boolean, forMs: number): void {
    Atomics.store(this.healthyUntilUs, 0, healthy ? BigInt(Math.round((monoMs() + forMs) * 1000)) : 0n);
  }

  /** Scans a serial bus the thread owns (drivers/modbus/bus-scan.ts), behind its traffic. */
  scan(bus: string, o: ScanOptions): Promise<ScanRow[]> {
    if (this.worker === null) return Promise.reject(new Error("the leak thread is not running"));
    const ref = ++this.scanRef;
    return new Promise((resolve, reject) => {
      this.scans.set(ref, { resolve, reject });
      this.post({ kind: "scan", ref, bus, o });
    });
  }

  /** Whether the thread owns serial bus `name`. */
  ownsBus(name: string): boolean {
    return this.o.modbus.buses.some((b) => b.name === name);
  }

  /** Stops the thread: its driver closes its connections first. */
  async stop(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w === null) return;
    w.postMessage({ kind: "stop" } satisfies LeakWorkerRequest);
    const timer = setTimeout(() => void w.terminate(), 2000);
    await this.exited;
    clearTimeout(timer);
  }

  /**
   * The supervisor's power decisions, at every actuator pass of the main thread: the thread
   * writes the power outputs it owns from them, at once when one changed.
   */
  setDecisions(d: PodDecisions): void {
    if (this.decisions.write(d)) this.post({ kind: "decisions" });
  }

  /**
   * Holds (or releases, 0) a rack's isolation valves closed for a partial-stroke test; the thread
   * writes them at once, and releases a hold on its own after `maxMs` (a stalled main thread must
   * not let the valve close all the way).
   */
  setStroke(rack: number, bits: number, maxMs: number): void {
    // a thread restarted during a test starts with every hold released: the safe side
    this.post({ kind: "stroke", rack, bits, maxMs });
  }

  get running(): boolean {
    return this.worker !== null;
  }

  ownsPoint(id: string): boolean {
    return this.points.has(id);
  }

  ownsOutput(id: string): boolean {
    return this.outputs.has(id);
  }

  outputState(id: string): OutputState | undefined {
    return this.outputs.get(id);
  }

  /** The thread's driver counters as last reported, its TCP devices and their buses named with LEAK_CONNECTION_SUFFIX. */
  stats(): DriverStats {
    const s = this.last;
    const suffix = (name: string): string => (this.tcp.has(name.replace(/^tcp:/, "")) ? `${name}${LEAK_CONNECTION_SUFFIX}` : name);
    return {
      devices: s.devices.map((d) => ({ ...d, name: suffix(d.name) })),
      buses: s.buses.map((b): BusStats => ({ ...b, name: suffix(b.name) })),
      polls: s.polls.map((p) => ({ ...p, device: suffix(p.device) })),
    };
  }
}
