// Named typed-array views over a hot-path bank.
//
// The same views sit over the WASM instance's linear memory and over the TypeScript
// reference model's own buffers, so config code, tests and the agent address both banks
// identically: `bank.loopF.kp[i] = 2`.
import * as L from "./assembly/layout.js";

export const LOOP_F64_FIELDS = {
  kp: L.LF_KP,
  ki: L.LF_KI,
  kd: L.LF_KD,
  tf: L.LF_TF,
  kff: L.LF_KFF,
  ffBias: L.LF_FF_BIAS,
  outMin: L.LF_OUT_MIN,
  outMax: L.LF_OUT_MAX,
  outRate: L.LF_OUT_RATE,
  spRamp: L.LF_SP_RAMP,
  deadband: L.LF_DEADBAND,
  safeFixedLeak: L.LF_SAFE_FIXED_LEAK,
  safeFixedSensor: L.LF_SAFE_FIXED_SENSOR,
  sp: L.LF_SP,
  manual: L.LF_MANUAL,
  override: L.LF_OVERRIDE,
  spRamped: L.LF_SP_RAMPED,
  integral: L.LF_INTEGRAL,
  dFilt: L.LF_DFILT,
  pvPrev: L.LF_PV_PREV,
  out: L.LF_OUT,
  pv: L.LF_PV,
  error: L.LF_ERROR,
  resume: L.LF_RESUME,
  pvFilterS: L.LF_PV_FILTER_S,
  pvFilt: L.LF_PV_FILT,
  tuneAmp: L.LF_TUNE_AMP,
  tuneHystMin: L.LF_TUNE_HYST_MIN,
  tuneDevMax: L.LF_TUNE_DEV_MAX,
  tuneNoiseMs: L.LF_TUNE_NOISE_MS,
  tuneTimeoutMs: L.LF_TUNE_TIMEOUT_MS,
  tuneT0: L.LF_TUNE_T0,
  tuneBias: L.LF_TUNE_BIAS,
  tuneLo: L.LF_TUNE_LO,
  tuneHi: L.LF_TUNE_HI,
  tuneSum: L.LF_TUNE_SUM,
  tuneN: L.LF_TUNE_N,
  tuneCenter: L.LF_TUNE_CENTER,
  tuneHyst: L.LF_TUNE_HYST,
  tuneD: L.LF_TUNE_D,
  minFlow: L.LF_MIN_FLOW,
  flowGain: L.LF_FLOW_GAIN,
  flowLo: L.LF_FLOW_LO,
} as const;

export const LOOP_I32_FIELDS = {
  pvPoint: L.LI_PV_POINT,
  ffPoint: L.LI_FF_POINT,
  rack: L.LI_RACK,
  action: L.LI_ACTION,
  safeLeak: L.LI_SAFE_LEAK,
  safeSensor: L.LI_SAFE_SENSOR,
  mode: L.LI_MODE,
  status: L.LI_STATUS,
  branch: L.LI_BRANCH,
  tune: L.LI_TUNE,
  tuneRelay: L.LI_TUNE_RELAY,
  tuneSwitches: L.LI_TUNE_SWITCHES,
  tuneEnd: L.LI_TUNE_END,
} as const;

export const POINT_F64_FIELDS = {
  value: L.PF_VALUE,
  ts: L.PF_TS,
  min: L.PF_MIN,
  max: L.PF_MAX,
  rateMax: L.PF_RATE_MAX,
  staleMs: L.PF_STALE_MS,
  stuckEps: L.PF_STUCK_EPS,
  stuckMs: L.PF_STUCK_MS,
  held: L.PF_HELD,
  prevValue: L.PF_PREV_VALUE,
  prevTs: L.PF_PREV_TS,
  stuckRef: L.PF_STUCK_REF,
  stuckSince: L.PF_STUCK_SINCE,
  quietUntil: L.PF_QUIET_UNTIL,
  stuckMove: L.PF_STUCK_MOVE,
  stuckOutRef: L.PF_STUCK_OUT_REF,
  stuckMovedAt: L.PF_STUCK_MOVED_AT,
} as const;

export const POINT_I32_FIELDS = {
  kind: L.PI_KIND,
  rack: L.PI_RACK,
  debounceFault: L.PI_DEBOUNCE_FAULT,
  debounceClear: L.PI_DEBOUNCE_CLEAR,
  raw: L.PI_RAW,
  quality: L.PI_QUALITY,
  faultCount: L.PI_FAULT_COUNT,
  clearCount: L.PI_CLEAR_COUNT,
  rateFault: L.PI_RATE_FAULT,
  wetCount: L.PI_WET_COUNT,
  dryCount: L.PI_DRY_COUNT,
  wet: L.PI_WET,
  stuckLoop: L.PI_STUCK_LOOP,
} as const;

export const RACK_F64_FIELDS = {
  isolatedFlowMax: L.RF_ISOLATED_FLOW_MAX,
  isolationDeadlineMs: L.RF_ISOLATION_DEADLINE_MS,
  isolatedSince: L.RF_ISOLATED_SINCE,
  flow: L.RF_FLOW,
} as const;

export const RACK_I32_FIELDS = {
  flowPoint: L.RI_FLOW_POINT,
  sensorFaultAction: L.RI_SENSOR_FAULT_ACTION,
  reset: L.RI_RESET,
  manualIsolate: L.RI_MANUAL_ISOLATE,
  state: L.RI_STATE,
  status: L.RI_STATUS,
  supplyOpen: L.RI_SUPPLY_OPEN,
  returnOpen: L.RI_RETURN_OPEN,
  resetResult: L.RI_RESET_RESULT,
  wet: L.RI_WET,
  leakFault: L.RI_LEAK_FAULT,
  supplyClosedPoint: L.RI_SUPPLY_CLOSED_POINT,
  returnClosedPoint: L.RI_RETURN_CLOSED_POINT,
} as const;

type Views<T extends Record<string, number>, A> = { readonly [K in keyof T]: A };

export interface BankViews {
  readonly loopF: Views<typeof LOOP_F64_FIELDS, Float64Array>;
  readonly loopI: Views<typeof LOOP_I32_FIELDS, Int32Array>;
  readonly pointF: Views<typeof POINT_F64_FIELDS, Float64Array>;
  readonly pointI: Views<typeof POINT_I32_FIELDS, Int32Array>;
  readonly rackF: Views<typeof RACK_F64_FIELDS, Float64Array>;
  readonly rackI: Views<typeof RACK_I32_FIELDS, Int32Array>;
  /** One bit per point: set by writeSample/writePoint, read and cleared by the step (see REGION_POINT_DIRTY). */
  readonly pointDirty: Uint32Array;
}

/** Bytes from one field array to the next in a region (see FIELD_PAD_BYTES in the layout). */
function stride(capacity: number, elementBytes: number): number {
  return capacity * elementBytes + L.FIELD_PAD_BYTES;
}

/** Byte size of each region, indexed by REGION_*. */
export const REGION_BYTES: readonly number[] = [
  L.LOOP_F64_FIELDS * stride(L.MAX_LOOPS, 8),
  L.LOOP_I32_FIELDS * stride(L.MAX_LOOPS, 4),
  L.POINT_F64_FIELDS * stride(L.MAX_POINTS, 8),
  L.POINT_I32_FIELDS * stride(L.MAX_POINTS, 4),
  L.RACK_F64_FIELDS * stride(L.MAX_RACKS, 8),
  L.RACK_I32_FIELDS * stride(L.MAX_RACKS, 4),
  L.MAX_POINTS / 8,
];

type AnyBuffer = ArrayBuffer | SharedArrayBuffer;

function viewsOf<T extends Record<string, number>, A>(fields: T, make: (field: number) => A): Views<T, A> {
  const out: Record<string, A> = {};
  for (const [name, id] of Object.entries(fields)) out[name] = make(id);
  return out as Views<T, A>;
}

/**
 * Builds the named views. `base[r]` is the byte offset of region r inside `buffer`.
 */
export function createViews(buffer: AnyBuffer, base: readonly number[]): BankViews {
  const f64 = (region: number, capacity: number) => (field: number) =>
    new Float64Array(buffer, base[region] + field * stride(capacity, 8), capacity);
  const i32 = (region: number, capacity: number) => (field: number) =>
    new Int32Array(buffer, base[region] + field * stride(capacity, 4), capacity);
  return {
    loopF: viewsOf(LOOP_F64_FIELDS, f64(L.REGION_LOOP_F64, L.MAX_LOOPS)),
    loopI: viewsOf(LOOP_I32_FIELDS, i32(L.REGION_LOOP_I32, L.MAX_LOOPS)),
    pointF: viewsOf(POINT_F64_FIELDS, f64(L.REGION_POINT_F64, L.MAX_POINTS)),
    pointI: viewsOf(POINT_I32_FIELDS, i32(L.REGION_POINT_I32, L.MAX_POINTS)),
    rackF: viewsOf(RACK_F64_FIELDS, f64(L.REGION_RACK_F64, L.MAX_RACKS)),
    rackI: viewsOf(RACK_I32_FIELDS, i32(L.REGION_RACK_I32, L.MAX_RACKS)),
    pointDirty: new Uint32Array(buffer, base[L.REGION_POINT_DIRTY], L.MAX_POINTS / 32),
  };
}

/** What both the WASM bank and the reference model offer. */
export interface HotPath {
  readonly views: BankViews;
  /** Sets the processed slot counts; returns STEP_OK or STEP_BAD_COUNTS. */
  configure(loops: number, points: number, racks: number): number;
  /** Clears run-time state; call after writing config, before the first tick. */
  resetState(): void;
  /** One tick. Returns STEP_OK, or STEP_BAD_DT having changed nothing. */
  step(nowMs: number, dtS: number): number;
}
