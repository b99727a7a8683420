// How a pod maps onto the hot-path bank: which input points and control loops a pod of N
// racks has, at which indices, with which tuning. The agent's config fills `PodControl`; the
// simulator's virtual-time mode uses the same mapping, so both run the same control.
import type { BankSpec, LoopSpec, PointSpec, RackSpec, SafeAction } from "../hotpath-as/bank-config.js";

/** Points per rack, in this order, starting at rack * RACK_POINTS. */
export const RACK_POINT = { returnTempC: 0, supplyTempC: 1, flowLpm: 2, powerKw: 3, leak: 4 } as const;
export const RACK_POINTS = 5;
/** CDU points come after the racks'. */
export const CDU_POINT = { dpKpa: 0, supplyTempC: 1 } as const;
export const CDU_POINTS = 2;

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
    ki: 0.15,
    kd: 0,
    tf: 0,
    kff: 0.4,
    ffBias: 0,
    outMin: 10,
    outMax: 100,
    outRate: 10,
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

export const rackPoint = (rack: number, which: keyof typeof RACK_POINT): number => rack * RACK_POINTS + RACK_POINT[which];
export const cduPoint = (racks: number, which: keyof typeof CDU_POINT): number => racks * RACK_POINTS + CDU_POINT[which];
/** Loop r (< racks) is rack r's valve loop; loop `racks` is the pump loop. */
export const pumpLoopIndex = (racks: number): number => racks;

function loopSpec(t: LoopTuning, base: Pick<LoopSpec, "pvPoint" | "ffPoint" | "rack" | "action" | "sp">): LoopSpec {
  return { ...base, ...t };
}

export function podBankSpec(c: PodControl): BankSpec {
  const points: PointSpec[] = [];
  const loops: LoopSpec[] = [];
  const racks: RackSpec[] = [];
  for (let r = 0; r < c.racks; r++) {
    points.push({ ...c.points.temperature }, { ...c.points.temperature }, { ...c.points.flow }, { ...c.points.power });
    points.push({ kind: "leak", rack: r, min: 0, max: 2, ...c.points.leak });
    loops.push(
      loopSpec(c.rackLoop, {
        pvPoint: rackPoint(r, "returnTempC"),
        ffPoint: c.rackLoop.kff !== 0 ? rackPoint(r, "powerKw") : undefined,
        rack: r,
        action: "direct",
        sp: c.returnTempSetpointC,
      }),
    );
    racks.push({
      flowPoint: rackPoint(r, "flowLpm"),
      isolatedFlowMaxLpm: c.isolation.isolatedFlowMaxLpm,
      isolationDeadlineMs: c.isolation.deadlineMs,
      leakSensorFault: c.isolation.leakSensorFault,
    });
  }
  points.push({ ...c.points.pressure }, { ...c.points.temperature });
  loops.push(loopSpec(c.pumpLoop, { pvPoint: cduPoint(c.racks, "dpKpa"), action: "reverse", sp: c.dpSetpointKpa }));
  return { points, loops, racks };
}
