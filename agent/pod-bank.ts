// How a pod maps onto the hot-path bank: which input points and control loops a pod of N
// racks has, at which indices, with which tuning. The agent's config fills `PodControl`; the
// simulator's virtual-time mode uses the same mapping, so both run the same control.
import type { BankSpec, LoopSpec, PointSpec, RackSpec, SafeAction } from "../hotpath-as/bank-config.js";

export interface LoopTuning {
  kp: number;
  ki: number;
  kd: number;
  tf: number;
  kff: number;
  ffBias: number;
  outMin: number;
  outMax: number;
  outRate: number;
  spRamp: number;
  deadband: number;
  safeOnLeak: SafeAction;
  safeOnSensorFault: SafeAction;
}

export interface PointChecks {
  min: number;
  max: number;
  rateMax: number;
  staleMs: number;
  stuckEps: number;
  stuckMs: number;
  debounceFault: number;
  debounceClear: number;
}

export interface PodControl {
  racks: number;
  /** leak sensors per rack (default 1 each) */
  leakSensors?: number[];
  /** return-temperature setpoint, °C */
  returnTempSetpointC: number;
  /** loop differential-pressure setpoint, kPa */
  dpSetpointKpa: number;
  rackLoop: LoopTuning;
  pumpLoop: LoopTuning;
  points: {
    temperature: PointChecks;
    flow: PointChecks;
    power: PointChecks;
    pressure: PointChecks;
    leak: { staleMs: number; debounceFault: number; debounceClear: number };
  };
  isolation: { isolatedFlowMaxLpm: number; deadlineMs: number; leakSensorFault: "hold" | "isolate" };
}

export const DEFAULT_POD_CONTROL: PodControl = {
  racks: 8,
  returnTempSetpointC: 45,
  dpSetpointKpa: 120,
  rackLoop: {
    kp: 4,
    ki: 0.4,
    kd: 0,
    tf: 0,
    kff: 0.4,
    ffBias: 0,
    outMin: 10,
    outMax: 100,
    outRate: 20,
    spRamp: 0,
    deadband: 0.05,
    safeOnLeak: "closed",
    safeOnSensorFault: "open",
  },
  pumpLoop: {
    kp: 0.15,
    ki: 0.1,
    kd: 0,
    tf: 0,
    kff: 0,
    ffBias: 0,
    outMin: 30,
    outMax: 100,
    outRate: 10,
    spRamp: 5,
    deadband: 0.5,
    safeOnLeak: "hold",
    safeOnSensorFault: { fixed: 80 },
  },
  points: {
    temperature: { min: 0, max: 95, rateMax: 20, staleMs: 3000, stuckEps: 0, stuckMs: 0, debounceFault: 20, debounceClear: 200 },
    flow: { min: 0, max: 400, rateMax: 0, staleMs: 3000, stuckEps: 0, stuckMs: 0, debounceFault: 20, debounceClear: 200 },
    power: { min: 0, max: 300, rateMax: 0, staleMs: 3000, stuckEps: 0, stuckMs: 0, debounceFault: 20, debounceClear: 200 },
    pressure: { min: 0, max: 600, rateMax: 0, staleMs: 3000, stuckEps: 0, stuckMs: 0, debounceFault: 20, debounceClear: 200 },
    leak: { staleMs: 3000, debounceFault: 3, debounceClear: 50 },
  },
  isolation: { isolatedFlowMaxLpm: 2, deadlineMs: 15000, leakSensorFault: "hold" },
};

/** Where each pod signal lives in the bank. */
export interface PodLayout {
  racks: { returnTempC: number; supplyTempC: number; flowLpm: number; powerKw: number; leaks: number[] }[];
  cdu: { dpKpa: number; supplyTempC: number };
  /** loop index of each rack's valve loop */
  rackLoops: number[];
  pumpLoop: number;
  points: number;
}

export function podLayout(c: PodControl): PodLayout {
  let next = 0;
  const racks = Array.from({ length: c.racks }, (_, r) => {
    const base = { returnTempC: next++, supplyTempC: next++, flowLpm: next++, powerKw: next++ };
    const leaks = Array.from({ length: c.leakSensors?.[r] ?? 1 }, () => next++);
    return { ...base, leaks };
  });
  const cdu = { dpKpa: next++, supplyTempC: next++ };
  return { racks, cdu, rackLoops: racks.map((_, r) => r), pumpLoop: c.racks, points: next };
}

export function podBankSpec(c: PodControl, layout: PodLayout = podLayout(c)): BankSpec {
  const points: PointSpec[] = new Array<PointSpec>(layout.points);
  const loops: LoopSpec[] = [];
  const racks: RackSpec[] = [];
  layout.racks.forEach((rp, r) => {
    points[rp.returnTempC] = { ...c.points.temperature };
    points[rp.supplyTempC] = { ...c.points.temperature };
    points[rp.flowLpm] = { ...c.points.flow };
    points[rp.powerKw] = { ...c.points.power };
    for (const l of rp.leaks) points[l] = { kind: "leak", rack: r, min: 0, max: 2, ...c.points.leak };
    loops[layout.rackLoops[r]] = {
      ...c.rackLoop,
      pvPoint: rp.returnTempC,
      ffPoint: c.rackLoop.kff !== 0 ? rp.powerKw : undefined,
      rack: r,
      action: "direct",
      sp: c.returnTempSetpointC,
    };
    racks.push({
      flowPoint: rp.flowLpm,
      isolatedFlowMaxLpm: c.isolation.isolatedFlowMaxLpm,
      isolationDeadlineMs: c.isolation.deadlineMs,
      leakSensorFault: c.isolation.leakSensorFault,
    });
  });
  points[layout.cdu.dpKpa] = { ...c.points.pressure };
  points[layout.cdu.supplyTempC] = { ...c.points.temperature };
  loops[layout.pumpLoop] = { ...c.pumpLoop, pvPoint: layout.cdu.dpKpa, action: "reverse", sp: c.dpSetpointKpa };
  return { points, loops, racks };
}
