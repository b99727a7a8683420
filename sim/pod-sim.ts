// The simulated pod in real time: plant model, field devices on real Modbus servers, scenario
// playback and the live control interface. `podwarden sim -c configs/sim-pod.yaml` runs one.
import { readFileSync } from "node:fs";
import type { SimConfig } from "./config.js";
import { ModbusRtuFront } from "./devices/rtu-front.js";
import { ModbusTcpFront } from "./devices/tcp-front.js";
import { RedfishBmc } from "./devices/redfish-bmc.js";
import { createPodDevices, type PodDevices } from "./devices/pod-devices.js";
import { FaultTarget, type FaultAction } from "./faults.js";
import { PodPlant } from "./plant/pod-plant.js";
import type { ValveFaults } from "./plant/valve.js";
import { Prng } from "./prng.js";
import { ScenarioPlayer, type Scenario } from "./scenario.js";

export interface DeviceTruth {
  name: string;
  unitId: number;
  port: number | null;
  requests: number;
  lastWriteAtMs: number | null;
  leaseMs: number;
  lastHeartbeatAtMs: number | null;
  leaseExpired: boolean;
  offline: boolean;
  slowMs: number;
  exception: { code: number; functions?: number[] } | null;
  /** with a `resetEvery` fault: its TCP connections open now, and reset so far (null without a TCP front) */
  connections: number | null;
  resets: number | null;
  resetEvery: number;
}

export interface GroundTruth {
  timeS: number;
  cdu: {
    pumpSpeedPct: number;
    pumpSpeedCmdPct: number;
    pumpEnabled: boolean;
    pumpTripped: boolean;
    /** every pump, pump 1 first (plant.pump.count) */
    pumps: { speedPct: number; speedCmdPct: number; enabled: boolean; tripped: boolean }[];
    dpKpa: number;
    totalFlowLpm: number;
    supplyTempC: number;
    returnTempC: number;
    primarySupplyTempC: number;
    /** the primary-side valve's position and command, % */
    primaryValvePct: number;
    primaryValveCommandPct: number;
    hxDutyKw: number;
    reservoirL: number;
    loopPressureKpa: number;
  };
  racks: {
    name: string;
    valvePct: number;
    valveCommandPct: number;
    valveStuck: boolean;
    /** the faults injected into its control valve and isolation valves (sim/faults.ts `valve`) */
    valveFaults: { control: ValveFaults; supplyIsolation: ValveFaults; returnIsolation: ValveFaults };
    supplyIsolationPct: number;
    returnIsolationPct: number;
    flowLpm: number;
    supplyTempC: number;
    returnTempC: number;
    powerKw: number;
    demandPct: number;
    powerCapKw: number | null;
    powerOff: boolean;
    gpuTempC: number;
    throttlePct: number;
    leak: string;
    coolantLostL: number;
    /** its Modbus device's TCP connections open now; null without a TCP front */
    connections: number | null;
    /** from the last leak state change to the supply isolation close command arriving, ms */
    leakToIsolationMs: number | null;
    /** from the last leak state change to the first read of the leak register, ms */
    leakToReadMs: number | null;
  }[];
  rackHeatKw: number;
  coolantLostL: number;
  /** the RTU front's counters (devices.rtu): requests taken, bad requests, answers damaged by lineNoisePct; null without one */
  rtu: { frames: number; crcErrors: number; damaged: number } | null;
  devices: DeviceTruth[];
}

const finiteOrNull = (x: number): number | null => (Number.isFinite(x) ? x : null);

export class PodSim {
  readonly plant: PodPlant;
  readonly devices: PodDevices;
  readonly faults: FaultTarget;
  private readonly player: ScenarioPlayer | null;
  private readonly tcp: ModbusTcpFront[] = [];
  /** each device's own TCP front, by name */
  private readonly frontOf = new Map<string, ModbusTcpFront>();
  private readonly ports = new Map<string, number>();
  private rtu: ModbusRtuFront | null = null;
  /** a Redfish BMC per rack, with devices.redfish */
  readonly bmcs: RedfishBmc[] = [];
  private timer: NodeJS.Timeout | null = null;
  private startedAt = 0;
  /** errors from scenario steps that could not be applied (a step never stops the sim) */
  readonly scenarioErrors: string[] = [];

  constructor(
    readonly config: SimConfig,
    scenario?: Scenario,
  ) {
    const seed = scenario?.seed ?? config.seed;
    this.plant = new PodPlant(config.plant, seed);
    this.devices = createPodDevices(this.plant, config.devices, () => this.nowMs(), new Prng(seed ^ 0x5eed));
    this.faults = new FaultTarget(this.plant, this.devices, this.bmcs);
    this.player = scenario === undefined ? null : new ScenarioPlayer(scenario);
  }

  /** Plant time in ms: the clock the devices' watchdogs run on. */
  nowMs(): number {
    return this.plant.timeS * 1000;
  }

  /** One plant step: scenario actions due, device commands (or fail positions), physics. */
  step(): void {
    if (this.player !== null) {
      for (const action of this.player.due(this.plant.timeS)) {
        try {
          this.faults.apply(action);
        } catch (err) {
          this.scenarioErrors.push(`${this.plant.timeS.toFixed(3)} s: ${(err as Error).message}`);
        }
      }
    }
    this.devices.apply();
    for (const b of this.bmcs) b.step(this.config.plant.dtS);
    this.plant.step();
  }

  inject(action: FaultAction): void {
    this.faults.apply(action);
  }

  /** A Modbus device's port, or a rack's BMC's as `<rack>.bmc`. */
  portOf(device: string): number | undefined {
    return this.ports.get(device);
  }

  /** Starts the Modbus servers and the real-time stepping. */
  async start(): Promise<void> {
    const d = this.config.devices;
    for (const [k, dev] of this.devices.all.entries()) {
      const front = new ModbusTcpFront([dev]);
      this.tcp.push(front);
      this.frontOf.set(dev.name, front);
      this.ports.set(dev.name, await front.listen(d.basePort === 0 ? 0 : d.basePort + k, d.host));
    }
    if (d.redfish !== undefined) {
      const rf = d.redfish;
      const tls = rf.tls === undefined ? undefined : { cert: readFileSync(rf.tls.certFile), key: readFileSync(rf.tls.keyFile) };
      for (const r of this.plant.racks) {
        const bmc = new RedfishBmc(`rack-${r.index + 1}`, r, { user: rf.user, password: rf.password, rampKwPerS: rf.limitRampKwPerS, trays: rf.trays });
        this.bmcs.push(bmc);
        this.ports.set(`${bmc.name}.bmc`, await bmc.listen(rf.basePort === 0 ? 0 : rf.basePort + r.index, d.host, tls));
      }
    }
    if (d.rtu !== undefined) {
      this.rtu = new ModbusRtuFront(this.devices.all);
      await this.rtu.open(d.rtu.path, d.rtu.baudRate, d.rtu.wireTime === true);
    }
    // Plant time follows the monotonic clock in fixed steps, catching up after a stall
    // (at most 10 s of plant time per timer turn, so a long stall cannot freeze the loop).
    this.startedAt = performance.now() - this.nowMs();
    const dtMs = this.config.plant.dtS * 1000;
    this.timer = setInterval(() => {
      const target = performance.now() - this.startedAt;
      let budget = Math.ceil(10_000 / dtMs);
      while (this.nowMs() + dtMs <= target && budget-- > 0) this.step();
    }, Math.max(1, Math.min(10, dtMs)));
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await Promise.all(this.tcp.map((f) => f.close()));
    this.tcp.length = 0;
    await Promise.all(this.bmcs.map((b) => b.close()));
    await this.rtu?.close();
    this.rtu = null;
  }

  /** Open Modbus TCP connections, over all devices. */
  connections(): number {
    return this.tcp.reduce((n, f) => n + f.connections, 0);
  }

  /** Modbus TCP connections accepted since start, over all devices: who ever talked to them. */
  connectionsAccepted(): number {
    return this.tcp.reduce((n, f) => n + f.accepted, 0);
  }

  /** Drops every Modbus TCP connection, as a device reboot would. */
  dropConnections(): void {
    for (const f of this.tcp) f.dropConnections();
  }

  truth(): GroundTruth {
    const p = this.plant;
    const now = this.nowMs();
    return {
      timeS: p.timeS,
      cdu: {
        pumpSpeedPct: p.cdu.pumps[0].speedPct,
        pumpSpeedCmdPct: p.cdu.pumps[0].speedCmdPct,
        pumpEnabled: p.cdu.pumps[0].enabled,
        pumpTripped: p.cdu.pumps[0].tripped,
        pumps: p.cdu.pumps.map((m) => ({ ...m })),
        dpKpa: p.cdu.dpKpa,
        totalFlowLpm: p.cdu.totalFlowLpm,
        supplyTempC: p.cdu.supplyTempC,
        returnTempC: p.cdu.returnTempC,
        primarySupplyTempC: p.cdu.primarySupplyTempC,
        primaryValvePct: p.cdu.primaryValve.position,
        primaryValveCommandPct: p.cdu.primaryValve.command,
        hxDutyKw: p.cdu.hxDutyKw,
        reservoirL: p.cdu.reservoirL,
        loopPressureKpa: p.cdu.loopPressureKpa,
      },
      racks: p.racks.map((r) => ({
        name: `rack-${r.index + 1}`,
        valvePct: r.controlValve.position,
        valveCommandPct: r.controlValve.command,
        valveStuck: r.controlValve.stuck,
        valveFaults: { control: { ...r.controlValve.faults }, supplyIsolation: { ...r.supplyIso.faults }, returnIsolation: { ...r.returnIso.faults } },
        supplyIsolationPct: r.supplyIso.position,
        returnIsolationPct: r.returnIso.position,
        flowLpm: r.flowLpm,
        supplyTempC: r.inletTempC,
        returnTempC: r.returnTempC,
        powerKw: r.powerKw,
        demandPct: r.demandPct,
        powerCapKw: finiteOrNull(r.powerCapKw),
        powerOff: r.powerOff,
        gpuTempC: r.gpuTempC,
        throttlePct: r.throttle * 100,
        leak: r.leak,
        coolantLostL: r.coolantLostL,
        // its Modbus device's TCP connections open now (null in virtual time: no connections)
        connections: this.frontOf.get(`rack-${r.index + 1}`)?.connections ?? null,
        leakToIsolationMs: ((): number | null => {
          const closedAt = this.devices.racks[r.index].ctx.isolationCloseCmdAtMs;
          return closedAt >= r.leakChangedAtMs && Number.isFinite(r.leakChangedAtMs) ? closedAt - r.leakChangedAtMs : null;
        })(),
        leakToReadMs: ((): number | null => {
          const readAt = this.devices.racks[r.index].ctx.leakReadAtMs;
          return readAt >= r.leakChangedAtMs && Number.isFinite(r.leakChangedAtMs) ? readAt - r.leakChangedAtMs : null;
        })(),
      })),
      rackHeatKw: p.rackHeatKw,
      rtu: this.rtu === null ? null : { frames: this.rtu.frames, crcErrors: this.rtu.crcErrors, damaged: this.rtu.damaged },
      coolantLostL: p.racks.reduce((a, r) => a + r.coolantLostL, 0),
      devices: this.devices.all.map((d) => ({
        name: d.name,
        unitId: d.unitId,
        port: this.ports.get(d.name) ?? null,
        requests: d.requests,
        lastWriteAtMs: finiteOrNull(d.lastWriteAtMs),
        leaseMs: d.ctx.wd.leaseMs,
        lastHeartbeatAtMs: finiteOrNull(d.ctx.wd.lastBeatMs),
        leaseExpired: d.ctx.wd.expired(now),
        offline: d.faults.offline,
        slowMs: d.faults.slowMs,
        exception: d.faults.exception ?? null,
        connections: this.frontOf.get(d.name)?.connections ?? null,
        resets: this.frontOf.get(d.name)?.resets ?? null,
        resetEvery: d.faults.resetEvery,
      })),
    };
  }
}
