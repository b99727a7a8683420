// The Modbus driver: turns configured devices into points, and actuator commands into writes.
//
// Reads: each (device, polling group) is polled every period; a poll whose previous cycle has
// not finished is skipped and counted (never queued up behind itself). Writes (output-writer.ts):
// on change, and refreshed periodically, the refreshes spread over their period; optionally read
// back and compared. The device lease heartbeat is
// written only while the caller's health gate says the control loop is healthy: the driver
// exposes the mechanism, the agent decides.
import { monoMs } from "../../lib/clock.js";
import { PointStore, type OutputState, type Point, type Quality } from "../../lib/points.js";

export type { OutputState };
export { WIRE_TRANSPORTS, type TransportFactory } from "./transports.js";
import { CircuitBreaker } from "../breaker.js";
import { Bus, newDeviceStats, type BusDevice, type DeviceStats, type Job } from "./bus.js";
import type { DeviceConfig, ModbusConfig } from "./config.js";
import { planReads, type ReadBlock } from "./plan.js";
import type { TransportFactory } from "./transports.js";
import { WIRE_TRANSPORTS } from "./transports.js";
import { decodePoint } from "./values.js";
import { OutputWriter, outcomeQuality } from "./output-writer.js";
import { DeviceLease, type LeaseConfig } from "./lease.js";
import { scanBus, type ScanOptions, type ScanRow } from "./bus-scan.js";
import type { ModbusOutcome, TransportStats } from "./types.js";

/**
 * Every output of a Modbus config by its id (`<device>.<output>`), as the driver names them.
 * Here, not beside the config's schema: the leak thread needs it, and importing config.ts would
 * load ajv and yaml into that thread and compile the schema there (its heap: see BENCHMARKS.md).
 */
export function modbusOutputIds(m: Pick<ModbusConfig, "devices">): string[] {
  return m.devices.flatMap((d) => d.outputs.map((o) => `${d.name}.${o.name}`));
}

interface DeviceRuntime extends BusDevice {
  config: DeviceConfig;
  bus: Bus;
  /** its safety lease, in its style (lease.ts) */
  lease: DeviceLease | null;
}

interface GroupPoll {
  device: DeviceRuntime;
  blocks: ReadBlock[];
  /** one bus job per block, built once: a poll allocates nothing of its own (see groupPoll()) */
  jobs: Job[];
  priority: number;
  periodMs: number;
  pending: number;
  overruns: number;
  polls: number;
}


export interface DriverIo {
  /** where points are published; one store serves every driver of an agent */
  points?: PointStore;
  transports?: TransportFactory;
}

export class ModbusDriver {
  readonly points: PointStore;
  private readonly buses = new Map<string, Bus>();
  private readonly devices = new Map<string, DeviceRuntime>();
  private readonly polls: GroupPoll[] = [];
  private readonly outputs = new Map<string, OutputWriter>();
  private readonly timers: NodeJS.Timeout[] = [];
  private healthy: () => boolean = () => false;
  /** renewLease's leases of devices this driver does not keep the lease of (the leak thread's) */
  private readonly renewals = new Map<string, DeviceLease>();
  private running = false;

  constructor(
    private readonly config: ModbusConfig,
    io: DriverIo = {},
  ) {
    this.points = io.points ?? new PointStore();
    const transports = io.transports ?? WIRE_TRANSPORTS;
    const rtu = new Map(config.buses.map((b) => [b.name, b]));
    const groups = new Map(config.groups.map((g) => [g.name, g]));
    for (const dc of config.devices) {
      let bus: Bus;
      if (dc.tcp !== undefined) {
        bus = new Bus(`tcp:${dc.name}`, transports.tcp({ ...dc, tcp: dc.tcp }, config.reconnect), 1);
        this.buses.set(bus.name, bus);
      } else {
        const name = `rtu:${dc.bus ?? ""}`;
        const existing = this.buses.get(name);
        if (existing !== undefined) bus = existing;
        else {
          const b = rtu.get(dc.bus ?? "");
          if (b === undefined) throw new Error(`device ${dc.name}: no bus ${dc.bus ?? "(none)"}`);
          bus = new Bus(name, transports.rtu(b, config.reconnect), b.budget);
          this.buses.set(name, bus);
        }
      }
      const device: DeviceRuntime = {
        name: dc.name,
        unitId: dc.unitId,
        timeoutMs: dc.timeoutMs,
        retries: dc.retries,
        retryDelayMs: dc.retryDelayMs,
        breaker: new CircuitBreaker(dc.breaker.failures, { baseMs: dc.breaker.openMs, maxMs: dc.breaker.maxOpenMs }, monoMs, dc.breaker.damagedAnswers),
        stats: newDeviceStats(),
        config: dc,
        bus,
        lease: null,
      };
      if (dc.lease !== undefined) {
        device.lease = new DeviceLease(dc.lease, (request, done) => bus.submit({ device, request, priority: 0, sheddable: false, done }), () => this.healthy());
      }
      this.devices.set(dc.name, device);
      for (const [gname, g] of groups) {
        const blocks = planReads(dc, dc.points.filter((p) => p.group === gname));
        if (blocks.length > 0) this.polls.push(this.groupPoll(device, blocks, g.priority, g.periodMs));
      }
      for (const oc of dc.outputs) {
        const id = `${dc.name}.${oc.name}`;
        this.outputs.set(id, new OutputWriter(id, device, oc, this.points, () => this.running));
      }
    }
  }

  /** The gate for lease heartbeats: called before every heartbeat write. */
  setHealthGate(gate: () => boolean): void {
    this.healthy = gate;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    for (const bus of this.buses.values()) {
      bus.transport.onConnectionChange((up) => {
        if (!up) this.markDisconnected(bus);
        // a device that answers again is probed at the next poll, not at its breaker's retry
        // time: the two waits (reconnect, breaker) overlap instead of adding up; and its lease
        // time is written and checked on the new connection (it may have restarted)
        else
          for (const d of this.devices.values()) {
            if (d.bus !== bus) continue;
            d.breaker.retryNow();
            d.lease?.connected();
          }
      });
      bus.transport.start();
    }
    for (const poll of this.polls) {
      this.timers.push(setInterval(() => this.poll(poll), poll.periodMs));
      queueMicrotask(() => this.poll(poll));
    }
    // the refreshes spread over their period, not all on one tick: on a serial line a burst of
    // them holds the queue's head for a while (write(), on refreshes)
    const refreshed = [...this.outputs.values()].filter((out) => out.config.refreshMs > 0);
    refreshed.forEach((out, k) => {
      const phase = (k * out.config.refreshMs) / refreshed.length;
      const begin = (): void => {
        if (this.running) this.timers.push(setInterval(() => out.refresh(), out.config.refreshMs));
      };
      this.timers.push(setTimeout(begin, phase));
    });
    for (const d of this.devices.values()) {
      const lease = d.lease;
      if (lease !== null) this.timers.push(setInterval(() => this.heartbeat(lease), lease.config.periodMs));
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    for (const t of this.timers) clearInterval(t);
    this.timers.length = 0;
    await Promise.all([...this.buses.values()].map((b) => b.stop()));
  }

  private publishFailure(device: DeviceRuntime, block: ReadBlock, quality: Quality, code?: number): void {
    for (const { point } of block.points) {
      const id = `${device.name}.${point.name}`;
      const prev = this.points.get(id);
      // the value and source time stay those of the last good read: never passed on as fresh
      this.points.publish({ id, value: prev?.value ?? NaN, sourceTimeMs: prev?.sourceTimeMs ?? -Infinity, quality, unit: point.unit, exceptionCode: code });
    }
  }

  private markDisconnected(bus: Bus): void {
    for (const poll of this.polls) if (poll.device.bus === bus) for (const b of poll.blocks) this.publishFailure(poll.device, b, "disconnected");
    for (const out of this.outputs.values()) if (out.device.bus === bus) out.state.quality = "disconnected";
  }

  /**
   * A polling group of one device. Its bus jobs are built here, once, not at every poll: at a
   * 1 ms poll, a job per poll (with the bus's copy of it) was the largest share of what V8 moved
   * to the old generation (BENCHMARKS.md). A job is never submitted twice at once: poll() skips
   * a cycle while the last one is pending.
   */
  private groupPoll(device: DeviceRuntime, blocks: ReadBlock[], priority: number, periodMs: number): GroupPoll {
    const poll: GroupPoll = { device, blocks, jobs: [], priority, periodMs, pending: 0, overruns: 0, polls: 0 };
    poll.jobs = blocks.map((block) => ({
      device,
      request: block.request,
      priority,
      sheddable: priority >= 2,
      done: (o: ModbusOutcome) => {
        poll.pending--;
        this.onRead(device, block, o);
      },
    }));
    return poll;
  }

  private poll(poll: GroupPoll): void {
    // a comms watchdog's device gets nothing while control is unhealthy: its own timer then runs out
    if (!this.running || poll.device.lease?.silent() === true) return;
    if (poll.pending > 0) {
      poll.overruns++; // the last cycle is still running: skip rather than pile up
      return;
    }
    poll.polls++;
    for (const job of poll.jobs) {
      poll.pending++;
      poll.device.bus.submit(job);
    }
  }

  private onRead(d: DeviceRuntime, block: ReadBlock, o: ModbusOutcome): void {
    if (!o.ok) {
      const offline = !d.breaker.allow() || d.breaker.state !== "closed";
      this.publishFailure(d, block, offline && o.kind !== "exception" ? "offline" : outcomeQuality(o), o.ok ? undefined : o.code);
      return;
    }
    const now = monoMs();
    for (const { point, offset } of block.points) {
      const { value, quality, loopCurrentMa, detail } = decodePoint(point, o.data, offset);
      this.points.publish({ id: `${d.name}.${point.name}`, value, sourceTimeMs: now, quality, unit: point.unit, ...(loopCurrentMa === undefined ? {} : { loopCurrentMa }), ...(detail === undefined ? {} : { detail }) });
    }
  }

  /** Sets an actuator output (engineering units). Written now if it changed; throws on a bad value. */
  setOutput(id: string, value: number): void {
    const out = this.outputs.get(id);
    if (out === undefined) throw new Error(`no output "${id}"`);
    out.set(value);
  }

  outputState(id: string): OutputState | undefined {
    return this.outputs.get(id)?.state;
  }

  private heartbeat(lease: DeviceLease): void {
    if (!this.running || !this.healthy()) return;
    lease.renew();
  }

  /** Probes every unit id of a serial bus in turn, behind its own traffic (bus-scan.ts). */
  scan(bus: string, o: ScanOptions): Promise<ScanRow[]> {
    const b = this.buses.get(`rtu:${bus}`);
    if (b === undefined) return Promise.reject(new Error(`no serial bus "${bus}" (modbus.buses: ${this.config.buses.map((x) => x.name).join(", ") || "none"})`));
    const on = [...this.devices.values()].filter((d) => d.bus === b);
    const silent = (id: number): string | null => (on.some((d) => d.unitId === id && d.lease?.silent() === true) ? "its communication watchdog is left to run out while control is not healthy" : null);
    return scanBus(b, o, new Map(on.map((d) => [d.unitId, d.name])), () => !this.running, silent);
  }

  /**
   * Writes one heartbeat to `device`'s lease register (`address`) now, ahead of the writes that
   * follow it, whatever the health gate says and whether or not this driver beats that device:
   * for a driver on a second connection that does not own the lease, and must have one write
   * taken by a device whose lease may have run out.
   */
  renewLease(device: string, lease: LeaseConfig): void {
    const d = this.devices.get(device);
    if (d === undefined) throw new Error(`no device "${device}"`);
    if (!this.running) return;
    let r = this.renewals.get(device);
    if (r === undefined) {
      r = new DeviceLease(lease, (request, done) => d.bus.submit({ device: d, request, priority: 0, sheddable: false, done }), () => true);
      this.renewals.set(device, r);
    }
    r.renew();
  }

  /** Per-device and per-bus counters, for metrics and tests. */
  stats(): {
    /** breakerRetryAtMs: when an open breaker lets its next probe go (lib/clock's monoMs), else null; leaseProblem: its lease time not as configured (lease.ts) */
    devices: { name: string; connected: boolean; breaker: string; breakerRetryAtMs: number | null; trips: number; leaseProblem: string | null; stats: DeviceStats }[];
    buses: BusStats[];
    polls: { device: string; priority: number; polls: number; overruns: number }[];
  } {
    return {
      devices: [...this.devices.values()].map((d) => ({ name: d.name, connected: d.bus.transport.connected, breaker: d.breaker.state, breakerRetryAtMs: d.breaker.retryAtMs, trips: d.breaker.trips, leaseProblem: d.lease?.problem ?? null, stats: d.stats })),
      buses: [...this.buses.values()].map((b) => ({ name: b.name, connected: b.transport.connected, utilization: b.utilization(), budgetOverruns: b.budgetOverruns, ...b.transport.stats() })),
      polls: this.polls.map((p) => ({ device: p.device.name, priority: p.priority, polls: p.polls, overruns: p.overruns })),
    };
  }
}

/** A bus's counters (docs/operations.md, the podwarden_modbus_bus_* metrics). */
export interface BusStats extends TransportStats {
  name: string;
  connected: boolean;
  /** share of the last second spent in transactions */
  utilization: number;
  /** telemetry polls skipped because the bus was over its time budget */
  budgetOverruns: number;
}

export type { Point };
