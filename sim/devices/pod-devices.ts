// The field devices of a simulated pod and their register maps (documented in docs/simulator.md):
//   cdu      unit 1        pumps, heat exchanger, reservoir; float32 in ABCD order
//   rack-N   unit 10 + N   control valve, isolation valves, sensors, power; float32 in CDAB order
// Valve and pump devices carry a comms-loss watchdog: without a heartbeat write within the
// lease they drive their actuators to the configured fail positions on their own.
import { monoMs } from "../../lib/clock.js";
import type { Prng } from "../prng.js";
import type { PodPlant, RackModel, CduModel, PumpModel } from "../plant/pod-plant.js";
import { FieldDevice, Watchdog, type LeaseStyle } from "./field-device.js";
import type { RegisterEntry } from "./register-map.js";

export interface DeviceDefaults {
  leaseMs: number;
  /** how the devices keep their lease (field-device.ts LeaseStyle) */
  leaseStyle: LeaseStyle;
  failValvePct: number;
  failPumpPct: number;
  failIsolationOpen: boolean;
}

export const LEAK_CODE = { dry: 0, wet: 1, "cable-fault": 2 } as const;
const NO_CAP_RAW = 0xffff;

// ---- CDU ------------------------------------------------------------------------------------
/** A pump drive's registers: its speed command, its fail speed, its run enable. */
export interface PumpDrive {
  speedCmdPct: number;
  /** NaN: the drive holds its command and enable while the lease is expired */
  failSpeedPct: number;
  enable: boolean;
}

export interface CduContext extends PumpDrive {
  cdu: CduModel;
  plant: PodPlant;
  wd: Watchdog;
  /** pumps 2 and on (plant.pump.count), each with its own drive registers; pump 1's are the context's own */
  more: PumpDrive[];
  /** the primary-side valve's command and its fail position while the lease is expired, % */
  primaryCmdPct: number;
  primaryFailPct: number;
}

export const CDU_STATUS = { RUNNING: 1, TRIPPED: 2, LEASE_EXPIRED: 4, LOW_LEVEL: 8, ENABLED: 16 } as const;

export function cduEntries(now: () => number): RegisterEntry<CduContext>[] {
  const f32 = { type: "f32" as const, order: "ABCD" as const };
  return [
    { name: "pumpSpeedCommandPct", table: "holding", address: 0, ...f32, unit: "%", description: "pump speed command", read: (c) => c.speedCmdPct, write: (c, v) => (c.speedCmdPct = v) },
    { name: "heartbeat", table: "holding", address: 2, type: "u16", description: "a write renews the comms-loss lease (devices.leaseStyle: any write; counter, a new value only)", read: () => 0, write: (c, v) => c.wd.beat(now(), v) },
    { name: "leaseMs", table: "holding", address: 3, type: "u16", unit: "ms", description: "comms-loss lease; 0 disables the watchdog", read: (c) => c.wd.leaseMs, write: (c, v) => (c.wd.leaseMs = v) },
    { name: "failSpeedPct", table: "holding", address: 4, ...f32, unit: "%", description: "pump speed while the lease is expired", read: (c) => c.failSpeedPct, write: (c, v) => (c.failSpeedPct = v) },
    { name: "pumpEnable", table: "coil", address: 0, type: "bool", description: "pump run enable", read: (c) => (c.enable ? 1 : 0), write: (c, v) => (c.enable = v !== 0) },
    { name: "pumpTripReset", table: "coil", address: 1, type: "bool", description: "write 1 to reset a pump trip", read: () => 0, write: (c, v) => { if (v) c.cdu.pumps[0].tripped = false; } },
    { name: "pumpRunning", table: "discrete", address: 0, type: "bool", description: "pump turning (speed > 1 %)", read: (c) => (c.cdu.pumps[0].speedPct > 1 ? 1 : 0) },
    { name: "pumpTripped", table: "discrete", address: 1, type: "bool", description: "pump tripped", read: (c) => (c.cdu.pumps[0].tripped ? 1 : 0) },
    { name: "reservoirLow", table: "discrete", address: 2, type: "bool", description: "reservoir below 20 %", read: (c) => (c.plant.reservoirFraction < 0.2 ? 1 : 0) },
    { name: "pumpSpeedPct", table: "input", address: 0, ...f32, unit: "%", description: "pump speed feedback", read: (c) => c.cdu.pumps[0].speedPct },
    { name: "dpKpa", table: "input", address: 2, ...f32, unit: "kPa", description: "loop differential pressure", read: (c) => c.cdu.dpKpa },
    { name: "supplyTempC", table: "input", address: 4, ...f32, unit: "°C", description: "secondary supply temperature (HX outlet)", read: (c) => c.cdu.supplyTempC },
    { name: "returnTempC", table: "input", address: 6, ...f32, unit: "°C", description: "secondary mixed return temperature", read: (c) => c.cdu.returnTempC },
    { name: "primarySupplyTempC", table: "input", address: 8, ...f32, unit: "°C", description: "facility (primary) supply temperature", read: (c) => c.cdu.primarySupplyTempC },
    { name: "totalFlowLpm", table: "input", address: 10, ...f32, unit: "L/min", description: "secondary loop flow", read: (c) => c.cdu.totalFlowLpm },
    { name: "reservoirPct", table: "input", address: 12, type: "u16", scale: 0.1, unit: "%", description: "reservoir level", read: (c) => c.plant.reservoirFraction * 100 },
    { name: "loopPressureKpa", table: "input", address: 13, type: "u16", scale: 0.1, unit: "kPa", description: "loop static pressure", read: (c) => c.cdu.loopPressureKpa },
    {
      name: "status",
      table: "input",
      address: 14,
      type: "u16",
      description: "bit 0 running, 1 tripped, 2 lease expired, 3 low level, 4 enabled",
      read: (c) =>
        (c.cdu.pumps[0].speedPct > 1 ? CDU_STATUS.RUNNING : 0) |
        (c.cdu.pumps[0].tripped ? CDU_STATUS.TRIPPED : 0) |
        (c.wd.expired(now()) ? CDU_STATUS.LEASE_EXPIRED : 0) |
        (c.plant.reservoirFraction < 0.2 ? CDU_STATUS.LOW_LEVEL : 0) |
        (c.enable ? CDU_STATUS.ENABLED : 0),
    },
    { name: "hxDutyKw", table: "input", address: 15, ...f32, unit: "kW", description: "heat carried to the primary loop", read: (c) => c.cdu.hxDutyKw },
    ...Array.from({ length: MAX_PUMPS - 1 }, (_, k) => morePumpEntries(k, f32)).flat(),
    { name: "primaryValveCommandPct", table: "holding", address: 18, ...f32, unit: "%", description: "primary-side (facility water) valve command: the exchanger's primary flow", read: (c) => c.primaryCmdPct, write: (c, v) => (c.primaryCmdPct = v) },
    { name: "primaryFailValvePct", table: "holding", address: 20, ...f32, unit: "%", description: "primary-side valve position while the lease is expired (100: cooling fails open)", read: (c) => c.primaryFailPct, write: (c, v) => (c.primaryFailPct = v) },
    { name: "primaryValvePct", table: "input", address: 23, ...f32, unit: "%", description: "primary-side valve position feedback", read: (c) => c.cdu.primaryValve.position },
  ];
}

/** The most pumps the CDU device has registers for (plant.pump.count). */
const MAX_PUMPS = 4;

/**
 * Pump k + 2's registers (k from 0): a drive of its own, as a CDU with redundant pumps has. Its
 * fail speed starts unset (NaN): while the lease is expired the drive holds its command (a
 * standby stays stopped) unless podwarden wrote one. A pump the plant does not have reads as
 * stopped, and a write to it lands in a drive made for that write alone: it goes nowhere.
 */
function morePumpEntries(k: number, f32: { type: "f32"; order: "ABCD" }): RegisterEntry<CduContext>[] {
  const n = k + 2;
  const drive = (c: CduContext): PumpDrive => c.more[k] ?? { speedCmdPct: NaN, failSpeedPct: NaN, enable: false };
  const pump = (c: CduContext): PumpModel | undefined => c.cdu.pumps[k + 1];
  return [
    { name: `pump${n}SpeedCommandPct`, table: "holding", address: 6 + 4 * k, ...f32, unit: "%", description: `pump ${n} speed command`, read: (c) => drive(c).speedCmdPct, write: (c, v) => (drive(c).speedCmdPct = v) },
    { name: `pump${n}FailSpeedPct`, table: "holding", address: 8 + 4 * k, ...f32, unit: "%", description: `pump ${n} speed while the lease is expired (unset: it holds its command)`, read: (c) => drive(c).failSpeedPct, write: (c, v) => (drive(c).failSpeedPct = v) },
    { name: `pump${n}Enable`, table: "coil", address: 2 + 2 * k, type: "bool", description: `pump ${n} run enable`, read: (c) => (drive(c).enable ? 1 : 0), write: (c, v) => (drive(c).enable = v !== 0) },
    { name: `pump${n}TripReset`, table: "coil", address: 3 + 2 * k, type: "bool", description: `write 1 to reset a pump ${n} trip`, read: () => 0, write: (c, v) => { const m = pump(c); if (v && m !== undefined) m.tripped = false; } },
    { name: `pump${n}Running`, table: "discrete", address: 3 + 2 * k, type: "bool", description: `pump ${n} turning (speed > 1 %)`, read: (c) => ((pump(c)?.speedPct ?? 0) > 1 ? 1 : 0) },
    { name: `pump${n}Tripped`, table: "discrete", address: 4 + 2 * k, type: "bool", description: `pump ${n} tripped`, read: (c) => (pump(c)?.tripped === true ? 1 : 0) },
    { name: `pump${n}SpeedPct`, table: "input", address: 17 + 2 * k, ...f32, unit: "%", description: `pump ${n} speed feedback`, read: (c) => pump(c)?.speedPct ?? 0 },
  ];
}

// ---- rack -----------------------------------------------------------------------------------
export interface RackContext {
  rack: RackModel;
  wd: Watchdog;
  valveCmdPct: number;
  supplyIsoOpen: boolean;
  returnIsoOpen: boolean;
  failValvePct: number;
  failIsolationOpen: boolean;
  /** monotonic ms when a close command for the supply isolation valve last arrived */
  isolationCloseCmdAtMs: number;
  /** monotonic ms when a master first read the leak register after its last change */
  leakReadAtMs: number;
}

export const RACK_STATUS = {
  LEASE_EXPIRED: 1,
  SUPPLY_ISO_CLOSED: 4,
  RETURN_ISO_CLOSED: 8,
  POWER_OFF: 16,
  LEAK_WET: 32,
  LEAK_CABLE_FAULT: 64,
} as const;

/**
 * A 4–20 mA transmitter's output for a measuring range [lo, hi], as NAMUR NE 43 has it: linear
 * inside the range, held at 3.8 / 20.5 mA beyond it, and 3.5 mA (downscale failure alarm) when
 * its sensor gives no reading.
 */
export function ne43CurrentMa(value: number, lo: number, hi: number): number {
  if (!Number.isFinite(value)) return 3.5;
  return Math.min(20.5, Math.max(3.8, 4 + (16 * (value - lo)) / (hi - lo)));
}

/** The return-temperature transmitter's measuring range, °C (4 mA, 20 mA). */
export const RETURN_TX_RANGE_C = [0, 100] as const;

export function rackEntries(now: () => number): RegisterEntry<RackContext>[] {
  const f32 = { type: "f32" as const, order: "CDAB" as const };
  return [
    { name: "valveCommandPct", table: "holding", address: 0, ...f32, unit: "%", description: "control valve command", read: (c) => c.valveCmdPct, write: (c, v) => (c.valveCmdPct = v) },
    { name: "heartbeat", table: "holding", address: 2, type: "u16", description: "a write renews the comms-loss lease (devices.leaseStyle: any write; counter, a new value only)", read: () => 0, write: (c, v) => c.wd.beat(now(), v) },
    { name: "leaseMs", table: "holding", address: 3, type: "u16", unit: "ms", description: "comms-loss lease; 0 disables the watchdog", read: (c) => c.wd.leaseMs, write: (c, v) => (c.wd.leaseMs = v) },
    { name: "failValvePct", table: "holding", address: 4, ...f32, unit: "%", description: "control valve position while the lease is expired", read: (c) => c.failValvePct, write: (c, v) => (c.failValvePct = v) },
    {
      name: "powerCapKw",
      table: "holding",
      address: 6,
      type: "u16",
      scale: 0.1,
      unit: "kW",
      description: "rack power cap; raw 65535 = no cap",
      read: (c) => (Number.isFinite(c.rack.powerCapKw) ? c.rack.powerCapKw : NO_CAP_RAW * 0.1),
      write: (c, v) => (c.rack.powerCapKw = Math.round(v * 10) >= NO_CAP_RAW ? Infinity : v),
    },
    {
      name: "supplyIsolationOpen",
      table: "coil",
      address: 0,
      type: "bool",
      description: "supply isolation valve: 1 open, 0 close",
      read: (c) => (c.supplyIsoOpen ? 1 : 0),
      write: (c, v) => {
        if (v === 0 && c.supplyIsoOpen) c.isolationCloseCmdAtMs = monoMs();
        c.supplyIsoOpen = v !== 0;
      },
    },
    { name: "returnIsolationOpen", table: "coil", address: 1, type: "bool", description: "return isolation valve: 1 open, 0 close", read: (c) => (c.returnIsoOpen ? 1 : 0), write: (c, v) => (c.returnIsoOpen = v !== 0) },
    { name: "powerOff", table: "coil", address: 2, type: "bool", description: "1 requests rack power-off (leak escalation)", read: (c) => (c.rack.powerOff ? 1 : 0), write: (c, v) => (c.rack.powerOff = v !== 0) },
    { name: "failIsolationOpen", table: "coil", address: 3, type: "bool", description: "isolation valves' fail position: 1 open, 0 hold", read: (c) => (c.failIsolationOpen ? 1 : 0), write: (c, v) => (c.failIsolationOpen = v !== 0) },
    { name: "supplyIsolationOpenLimit", table: "discrete", address: 0, type: "bool", description: "supply isolation valve fully open", read: (c) => (c.rack.supplyIso.position >= 99 ? 1 : 0) },
    { name: "supplyIsolationClosedLimit", table: "discrete", address: 1, type: "bool", description: "supply isolation valve fully closed", read: (c) => (c.rack.supplyIso.position <= 1 ? 1 : 0) },
    { name: "returnIsolationOpenLimit", table: "discrete", address: 2, type: "bool", description: "return isolation valve fully open", read: (c) => (c.rack.returnIso.position >= 99 ? 1 : 0) },
    { name: "returnIsolationClosedLimit", table: "discrete", address: 3, type: "bool", description: "return isolation valve fully closed", read: (c) => (c.rack.returnIso.position <= 1 ? 1 : 0) },
    { name: "valvePositionPct", table: "input", address: 0, type: "i16", scale: 0.1, unit: "%", description: "control valve position feedback", read: (c) => c.rack.controlValve.position },
    { name: "flowLpm", table: "input", address: 1, ...f32, unit: "L/min", description: "rack coolant flow", read: (c) => c.rack.flowLpm },
    { name: "supplyTempC", table: "input", address: 3, type: "i16", scale: 0.01, unit: "°C", description: "rack inlet (supply) temperature", read: (c) => c.rack.inletTempC },
    { name: "returnTempC", table: "input", address: 4, type: "i16", scale: 0.01, unit: "°C", description: "rack outlet (return) temperature", read: (c) => c.rack.returnTempC },
    { name: "powerKw", table: "input", address: 5, ...f32, unit: "kW", description: "rack IT power", read: (c) => c.rack.powerKw },
    {
      name: "leakState",
      table: "input",
      address: 7,
      type: "u16",
      description: "leak rope: 0 dry, 1 wet, 2 cable fault",
      read: (c) => {
        if (c.leakReadAtMs < c.rack.leakChangedAtMs) c.leakReadAtMs = monoMs();
        return LEAK_CODE[c.rack.leak];
      },
    },
    { name: "gpuTempC", table: "input", address: 8, type: "i16", scale: 0.01, unit: "°C", description: "hottest GPU temperature", read: (c) => c.rack.gpuTempC },
    {
      name: "status",
      table: "input",
      address: 9,
      type: "u16",
      description: "bit 0 lease expired, 2 supply isolation closed, 3 return isolation closed, 4 power off, 5 leak wet, 6 leak cable fault",
      read: (c) =>
        (c.wd.expired(now()) ? RACK_STATUS.LEASE_EXPIRED : 0) |
        (c.rack.supplyIso.position <= 1 ? RACK_STATUS.SUPPLY_ISO_CLOSED : 0) |
        (c.rack.returnIso.position <= 1 ? RACK_STATUS.RETURN_ISO_CLOSED : 0) |
        (c.rack.powerOff ? RACK_STATUS.POWER_OFF : 0) |
        (c.rack.leak === "wet" ? RACK_STATUS.LEAK_WET : 0) |
        (c.rack.leak === "cable-fault" ? RACK_STATUS.LEAK_CABLE_FAULT : 0),
    },
    { name: "throttlePct", table: "input", address: 10, type: "u16", scale: 0.1, unit: "%", description: "GPU clock throttle (100 = none)", read: (c) => c.rack.throttle * 100 },
    {
      name: "returnTempMa",
      table: "input",
      address: 11,
      type: "u16",
      scale: 0.001,
      unit: "mA",
      description: "return temperature through a 4–20 mA transmitter (0–100 °C, NAMUR NE 43: 3.8/20.5 mA beyond the range, 3.5 mA on a sensor failure), read as µA by an analogue input",
      read: (c) => ne43CurrentMa(c.rack.returnTempC, ...RETURN_TX_RANGE_C),
      follows: { entry: "returnTempC", transmit: (v) => ne43CurrentMa(v, ...RETURN_TX_RANGE_C) },
    },
  ];
}

export interface PodDevices {
  cdu: FieldDevice<CduContext>;
  racks: FieldDevice<RackContext>[];
  all: FieldDevice<CduContext | RackContext>[];
  /** Pushes each device's commands (or its fail positions) into the plant. Call before each plant step. */
  apply(): void;
}

export const rackDeviceName = (r: number): string => `rack-${r + 1}`;
export const rackUnitId = (r: number): number => 10 + r + 1;

export function createPodDevices(plant: PodPlant, d: DeviceDefaults, now: () => number, rng: Prng): PodDevices {
  const more = plant.cdu.pumps.slice(1).map((m): PumpDrive => ({ speedCmdPct: m.speedCmdPct, failSpeedPct: NaN, enable: m.enabled }));
  const cduCtx: CduContext = { cdu: plant.cdu, plant, wd: new Watchdog(d.leaseMs, d.leaseStyle), speedCmdPct: plant.cdu.pumps[0].speedCmdPct, failSpeedPct: d.failPumpPct, enable: true, more, primaryCmdPct: 100, primaryFailPct: 100 };
  const cdu = new FieldDevice("cdu", 1, cduEntries(now), cduCtx, now, rng);
  const racks = plant.racks.map(
    (rack, r) =>
      new FieldDevice<RackContext>(
        rackDeviceName(r),
        rackUnitId(r),
        rackEntries(now),
        { rack, wd: new Watchdog(d.leaseMs, d.leaseStyle), valveCmdPct: rack.controlValve.command, supplyIsoOpen: true, returnIsoOpen: true, failValvePct: d.failValvePct, failIsolationOpen: d.failIsolationOpen, isolationCloseCmdAtMs: -Infinity, leakReadAtMs: -Infinity },
        now,
        rng,
      ),
  );
  // a communication watchdog renews on every request the device takes
  for (const dev of [cdu, ...racks]) dev.onRequest = () => dev.ctx.wd.traffic(now());
  const apply = (): void => {
    const t = now();
    const c = cdu.ctx;
    const cduSafe = c.wd.expired(t);
    // a drive with a fail speed runs at it while the lease is expired; one without holds its command
    [c, ...c.more].forEach((drive, i) => {
      const m = plant.cdu.pumps[i];
      const fail = cduSafe && !Number.isNaN(drive.failSpeedPct);
      m.speedCmdPct = fail ? drive.failSpeedPct : drive.speedCmdPct;
      m.enabled = fail ? true : drive.enable;
    });
    plant.cdu.primaryValve.command = Math.min(Math.max(cduSafe ? c.primaryFailPct : c.primaryCmdPct, 0), 100);
    for (const dev of racks) {
      const x = dev.ctx;
      const safe = x.wd.expired(t);
      x.rack.controlValve.command = safe ? x.failValvePct : x.valveCmdPct;
      // Isolation valves hold by default when the lease expires: a rack isolated for a leak
      // must stay isolated if the agent dies. failIsolationOpen opts into fail-open instead.
      const iso = (cmd: boolean, current: number): number => (!safe ? (cmd ? 100 : 0) : x.failIsolationOpen ? 100 : current);
      x.rack.supplyIso.command = iso(x.supplyIsoOpen, x.rack.supplyIso.command);
      x.rack.returnIso.command = iso(x.returnIsoOpen, x.rack.returnIso.command);
    }
  };
  return { cdu, racks, all: [cdu, ...racks] as FieldDevice<CduContext | RackContext>[], apply };
}
