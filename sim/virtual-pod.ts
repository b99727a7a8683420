// Virtual time: the daemon's own pod stage and the real WASM hot path against the plant model,
// in lockstep, with no I/O.
//
// Each 1 ms tick: each polling group due reads its device through the simulated device's own
// request handling (so offline devices, exceptions and injected sensor faults apply) with the
// daemon's Modbus point config; the pod wiring routes the samples into the bank; the hot path
// steps; every ACTUATOR_PASS_MS, and at once on an interlock change, the pod wiring computes the
// actuator writes (safety first, rounded, with power caps and the pump enable) and they are sent
// to the devices as the driver would send them, with the lease heartbeat; the plant advances.
// Seeded and deterministic: the same config, seed and scenario give the same trace.
import { loadBank } from "../hotpath-as/bank-config.js";
import type { HotPath } from "../hotpath-as/views.js";
import { loadWasmHotPath } from "../hotpath-as/wasm-bank.js";
import { encodeRequest, parseResponse } from "../drivers/modbus/master-pdu.js";
import type { DeviceConfig, ModbusConfig, OutputConfig } from "../drivers/modbus/config.js";
import { planReads, type ReadBlock } from "../drivers/modbus/plan.js";
import { exceptionPolicy, type ModbusRequest } from "../drivers/modbus/types.js";
import { renewalRequest, type LeaseConfig } from "../drivers/modbus/lease.js";
import { CircuitBreaker } from "../drivers/breaker.js";
import { decodePoint, encodeOutput, writeRequest } from "../drivers/modbus/values.js";
import { podBankSpec } from "../pod/bank.js";
import type { PodConfig } from "../pod/config.js";
import type { PodLayout } from "../pod/layout.js";
import { VirtualTimeLoop, virtualLoopPod } from "../pod/virtual-loop.js";
import type { OutputSink, PodDecisions, PodWiring } from "../pod/wiring.js";
import type { SimConfig } from "./config.js";
import type { FieldDevice } from "./devices/field-device.js";
import { PodSim } from "./pod-sim.js";
import type { Scenario } from "./scenario.js";
import { Prng } from "./prng.js";

export interface TraceRow {
  t: number;
  dpKpa: number;
  pumpPct: number;
  supplyC: number;
  racks: { ret: number; valve: number; flow: number; power: number; state: number; status: number }[];
}

/** A write that reached a simulated device: what the wiring sent, in engineering units. */
export interface DeviceWrite {
  /** plant time, ms */
  tMs: number;
  /** the output id (device.output) */
  id: string;
  value: number;
}

/** What the virtual pod runs: the daemon's pod section and Modbus devices (an agent config is one). */
export interface VirtualPodConfig extends PodConfig {
  modbus: Pick<ModbusConfig, "devices" | "groups">;
  supervisor?: { powerBudget: { writeCaps: boolean } };
}

export interface VirtualOptions {
  tickMs: number;
  traceEveryS: number;
  /** keep every device write in `writes` (tests of write order) */
  recordWrites: boolean;
  /**
   * how far into its period each poll and heartbeat starts, ms: the phase at which the pod's
   * field I/O meets the plant's faults (a HIL campaign varies it, as a fault lands anywhere in a
   * poll period on a rig)
   */
  ioPhaseMs: number;
}

const DEFAULTS: VirtualOptions = { tickMs: 1, traceEveryS: 1, recordWrites: false, ioPhaseMs: 0 };

const round = (x: number, digits = 6): number => Math.round(x * 10 ** digits) / 10 ** digits;

/** A simulated device as the pod's driver knows it: its circuit breaker, on virtual time. */
interface SimDevice {
  name: string;
  sim: FieldDevice<unknown>;
  breaker: CircuitBreaker;
}

interface GroupPoll {
  device: SimDevice;
  deviceName: string;
  blocks: ReadBlock[];
  periodMs: number;
  nextMs: number;
}

interface OutputSlot {
  device: SimDevice;
  config: OutputConfig;
  /** the last value asked for: an unchanged one is not encoded again (most outputs hold for minutes) */
  lastValue: number;
  lastRaw: number[] | null;
}

const sameWords = (a: number[] | null, b: number[]): boolean => a !== null && a.length === b.length && a.every((x, i) => x === b[i]);

export class VirtualPod implements OutputSink {
  readonly sim: PodSim;
  readonly hp: HotPath;
  readonly trace: TraceRow[] = [];
  /** the pod loop in virtual time: the wiring, the hot path's steps and the actuator passes */
  readonly loop: VirtualTimeLoop;
  /** every write sent to a device, with recordWrites */
  readonly writes: DeviceWrite[] = [];
  private readonly opts: VirtualOptions;
  private readonly plantEvery: number;
  private readonly polls: GroupPoll[] = [];
  private readonly outputs = new Map<string, OutputSlot>();
  private readonly leases: { device: SimDevice; lease: LeaseConfig; nextMs: number }[] = [];
  private readonly devices: SimDevice[] = [];
  /** the breakers' jitter: seeded, as everything in virtual time */
  private readonly jitter: Prng;
  private tick = 0;
  /** the earliest time a poll or a heartbeat falls due: most ticks have neither */
  private nextIoMs = 0;
  private nextTraceS = 0;

  constructor(
    config: SimConfig,
    pod: VirtualPodConfig,
    scenario?: Scenario,
    opts: Partial<VirtualOptions> = {},
    hp: HotPath = loadWasmHotPath("release"),
  ) {
    this.opts = { ...DEFAULTS, ...opts };
    if (pod.racks.length !== config.plant.racks) throw new Error(`the pod config has ${pod.racks.length} racks, the plant ${config.plant.racks}`);
    this.plantEvery = Math.round((config.plant.dtS * 1000) / this.opts.tickMs);
    if (this.plantEvery < 1 || Math.abs(this.plantEvery * this.opts.tickMs - config.plant.dtS * 1000) > 1e-9) {
      throw new Error(`plant dt ${config.plant.dtS} s must be a whole number of ${this.opts.tickMs} ms ticks`);
    }
    this.sim = new PodSim(config, scenario);
    this.jitter = new Prng((scenario?.seed ?? config.seed) ^ 0xb3ea4e5);
    this.hp = hp;
    this.loop = new VirtualTimeLoop(virtualLoopPod(pod), hp, this);
    loadBank(hp, podBankSpec(pod.control, this.layout, pod.racks));
    this.plan(pod.modbus);
  }

  get layout(): PodLayout {
    return this.loop.layout;
  }

  get wiring(): PodWiring {
    return this.loop.wiring;
  }

  /** what the supervisor decided (power caps, power-off, the pumps): a supervisor or a caller sets it */
  get decisions(): PodDecisions {
    return this.loop.decisions;
  }

  set decisions(d: PodDecisions) {
    this.loop.decisions = d;
  }

  /** The daemon's polling plan, less what the hot path does not read; its outputs; its leases. */
  private plan(m: VirtualPodConfig["modbus"]): void {
    const simDevices = new Map(this.sim.devices.all.map((d) => [d.name, d as FieldDevice<unknown>]));
    const inputs = new Set(this.wiring.inputs);
    for (const dc of m.devices) {
      const sim = simDevices.get(dc.name);
      if (sim === undefined) throw new Error(`the simulated pod has no device "${dc.name}"`);
      const b = dc.breaker;
      const device: SimDevice = { name: dc.name, sim, breaker: new CircuitBreaker(b.failures, { baseMs: b.openMs, maxMs: b.maxOpenMs }, () => this.timeMs, b.damagedAnswers, () => this.jitter.next()) };
      this.devices.push(device);
      for (const g of m.groups) {
        const points = dc.points.filter((p) => p.group === g.name && inputs.has(`${dc.name}.${p.name}`));
        const blocks = planReads(dc, points);
        if (blocks.length > 0) this.polls.push({ device, deviceName: dc.name, blocks, periodMs: g.periodMs, nextMs: this.opts.ioPhaseMs % g.periodMs });
      }
      for (const oc of dc.outputs) this.outputs.set(`${dc.name}.${oc.name}`, { device, config: oc, lastValue: NaN, lastRaw: null });
      this.addLease(device, dc);
    }
  }

  private addLease(device: SimDevice, dc: DeviceConfig): void {
    if (dc.lease !== undefined) this.leases.push({ device, lease: dc.lease, nextMs: this.opts.ioPhaseMs % dc.lease.periodMs });
  }

  get timeMs(): number {
    return this.tick * this.opts.tickMs;
  }

  /**
   * One request to a simulated device, as the driver's bus sends it: not at all while the
   * device's breaker is open, and its outcome counted by the breaker (drivers/modbus/bus.ts);
   * null when it did not answer, or answered an exception.
   */
  private request(device: SimDevice, req: ModbusRequest): number[] | null {
    const b = device.breaker;
    if (!b.allow()) return null;
    const res = device.sim.respond(encodeRequest(req));
    if (res === null) {
      b.failure();
      return null;
    }
    const o = parseResponse(req, res);
    if (o.ok) b.success();
    else if (o.kind === "corrupt") b.damaged();
    else if (o.kind === "exception" && exceptionPolicy(o.code ?? 0).breaker) b.failure();
    else b.success(); // an exception that shows the device alive and answering
    return o.ok ? o.data : null;
  }

  /** Each device's health as the daemon's field I/O reports it: unwell while its breaker is not closed. */
  deviceHealth(): { name: string; ok: boolean; why: string }[] {
    return this.devices.map((d) => {
      const state = d.breaker.state;
      return { name: d.name, ok: state === "closed", why: state === "closed" ? "" : `not answering (circuit breaker ${state})` };
    });
  }

  /** OutputSink: a changed value is written to its device, as the driver writes it. */
  setOutput(id: string, value: number): void {
    const out = this.outputs.get(id);
    if (out === undefined) throw new Error(`no output "${id}"`);
    if (value === out.lastValue && out.lastRaw !== null) return;
    out.lastValue = value;
    const raw = encodeOutput(out.config, value);
    if (sameWords(out.lastRaw, raw)) return;
    if (this.opts.recordWrites) this.writes.push({ tMs: this.timeMs, id, value });
    if (this.request(out.device, writeRequest(out.config, raw)) !== null) out.lastRaw = raw;
  }

  /** The polls and heartbeats due at `now`; returns when the next falls due. */
  private fieldIo(now: number): void {
    this.poll(now);
    this.heartbeats(now);
    let next = Infinity;
    for (const p of this.polls) next = Math.min(next, p.nextMs);
    for (const l of this.leases) next = Math.min(next, l.nextMs);
    this.nextIoMs = next;
  }

  private poll(now: number): void {
    for (const p of this.polls) {
      if (now < p.nextMs) continue;
      p.nextMs += p.periodMs;
      for (const block of p.blocks) {
        const data = this.request(p.device, block.request);
        // no answer: nothing is routed, so the sample ages and the stale check fails its loops safe
        if (data === null) continue;
        for (const { point, offset } of block.points) {
          const d = decodePoint(point, data, offset);
          this.loop.route({ id: `${p.deviceName}.${point.name}`, value: d.value, sourceTimeMs: now, quality: d.quality }, now);
        }
      }
    }
  }

  private heartbeats(now: number): void {
    for (const l of this.leases) {
      if (now < l.nextMs) continue;
      l.nextMs += l.lease.periodMs;
      // the driver's renewal in the lease's style (a comms watchdog's read; no health gate here)
      this.request(l.device, renewalRequest(l.lease, now / l.lease.periodMs));
    }
  }

  private record(): void {
    const p = this.sim.plant;
    const v = this.hp.views;
    this.trace.push({
      t: round(p.timeS, 3),
      dpKpa: round(p.cdu.dpKpa),
      pumpPct: round(p.cdu.pumps[0].speedPct),
      supplyC: round(p.cdu.supplyTempC),
      racks: p.racks.map((r, i) => ({
        ret: round(r.returnTempC),
        valve: round(r.controlValve.position),
        flow: round(r.flowLpm),
        power: round(r.powerKw),
        state: v.rackI.state[i],
        status: v.loopI.status[i],
      })),
    });
  }

  /** Advances plant time by `seconds`, calling `each` after every tick if given. */
  run(seconds: number, each?: () => void): void {
    const ticks = Math.round((seconds * 1000) / this.opts.tickMs);
    const dtS = this.opts.tickMs / 1000;
    for (let k = 0; k < ticks; k++) {
      const now = this.timeMs;
      if (now >= this.nextIoMs) this.fieldIo(now);
      this.loop.step(now, dtS, `tick ${this.tick}`);
      this.tick++;
      if (this.tick % this.plantEvery === 0) this.sim.step();
      if (this.sim.plant.timeS >= this.nextTraceS) {
        this.record();
        this.nextTraceS += this.opts.traceEveryS;
      }
      each?.();
    }
  }
}
