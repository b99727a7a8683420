// podwarden control hot path.
//
// One exported call per tick: step(nowMs, dtS) validates every input point, runs every
// rack's leak-isolation state machine, then every control loop through the interlock
// priority (leak > fail-safe > manual/override > automatic).
//
// Rules this file keeps, because the reference model in ../reference.ts must match it bit
// for bit and because the step must have deterministic timing:
//  - no allocation and no imported call inside step(): all state is static memory.data;
//  - f64 arithmetic only, no transcendental functions (their last bit differs between
//    engines), and every expression written in the same order as the reference;
//  - comparisons are written so that NaN falls on the safe side.
import * as L from "./layout";

// ---- static bank ------------------------------------------------------------------------
const LOOP_F64_STRIDE: i32 = L.MAX_LOOPS * 8 + L.FIELD_PAD_BYTES;
const LOOP_I32_STRIDE: i32 = L.MAX_LOOPS * 4 + L.FIELD_PAD_BYTES;
const POINT_F64_STRIDE: i32 = L.MAX_POINTS * 8 + L.FIELD_PAD_BYTES;
const POINT_I32_STRIDE: i32 = L.MAX_POINTS * 4 + L.FIELD_PAD_BYTES;
const RACK_F64_STRIDE: i32 = L.MAX_RACKS * 8 + L.FIELD_PAD_BYTES;
const RACK_I32_STRIDE: i32 = L.MAX_RACKS * 4 + L.FIELD_PAD_BYTES;

const LOOP_F64: usize = memory.data(L.LOOP_F64_FIELDS * LOOP_F64_STRIDE, 64);
const LOOP_I32: usize = memory.data(L.LOOP_I32_FIELDS * LOOP_I32_STRIDE, 64);
const POINT_F64: usize = memory.data(L.POINT_F64_FIELDS * POINT_F64_STRIDE, 64);
const POINT_I32: usize = memory.data(L.POINT_I32_FIELDS * POINT_I32_STRIDE, 64);
const RACK_F64: usize = memory.data(L.RACK_F64_FIELDS * RACK_F64_STRIDE, 64);
const RACK_I32: usize = memory.data(L.RACK_I32_FIELDS * RACK_I32_STRIDE, 64);
const POINT_DIRTY: usize = memory.data(L.MAX_POINTS >> 3, 16);

let loopCount: i32 = 0;
let pointCount: i32 = 0;
let rackCount: i32 = 0;
// The point pass validates every point (a full scan) when the tick time reaches scanDue, the
// earliest time a stale or stuck timer of a point not otherwise marked can fall due, or when
// ticksToScan runs out; between scans it validates only the points marked in POINT_DIRTY.
// -Infinity forces a full scan at the next tick.
let scanDue: f64 = -Infinity;
let ticksToScan: i32 = 0;
// How many configured points have a bad debounced quality, and how many racks have their
// valves closed. While both are 0 (a healthy pod) every in-range binding is a good input, and
// the pair admission need not look up each loop's points and rack. badPoints follows each
// quality change the step makes and is recounted at every full point scan; racksClosed is
// counted by every rack pass.
let badPoints: i32 = 0;
let racksClosed: i32 = 0;
// How many racks have a leak input wet or their isolation latched, counted by every rack pass:
// a relay autotune anywhere in the pod ends on the tick this turns non-zero.
let racksLeaking: i32 = 0;

const COUNT_CAP: i32 = 0x3fffffff; // debounce counters saturate here instead of wrapping

// field base addresses
@inline function lf(field: i32): usize { return LOOP_F64 + <usize>(field * LOOP_F64_STRIDE); }
@inline function li(field: i32): usize { return LOOP_I32 + <usize>(field * LOOP_I32_STRIDE); }
@inline function pf(field: i32): usize { return POINT_F64 + <usize>(field * POINT_F64_STRIDE); }
@inline function pi(field: i32): usize { return POINT_I32 + <usize>(field * POINT_I32_STRIDE); }
@inline function rf(field: i32): usize { return RACK_F64 + <usize>(field * RACK_F64_STRIDE); }
@inline function ri(field: i32): usize { return RACK_I32 + <usize>(field * RACK_I32_STRIDE); }

// element access
@inline function gf(base: usize, i: i32): f64 { return load<f64>(base + (<usize>i << 3)); }
@inline function sf(base: usize, i: i32, v: f64): void { store<f64>(base + (<usize>i << 3), v); }
@inline function gi(base: usize, i: i32): i32 { return load<i32>(base + (<usize>i << 2)); }
@inline function si(base: usize, i: i32, v: i32): void { store<i32>(base + (<usize>i << 2), v); }

@inline function isFinite(x: f64): bool { return x - x == 0; }
@inline function absf(x: f64): f64 { return x < 0 ? -x : x; }
// NaN clamps to lo: an undefined command never escapes the envelope. Written as the two
// comparisons f64x2.pmax(lo, x) and f64x2.pmin(_, hi) make, so the pair path clamps with two
// instructions. (x == lo gives lo, so a -0 against a +0 bound comes out +0.)
@inline function clampf(x: f64, lo: f64, hi: f64): f64 { const y = lo < x ? x : lo; return hi < y ? hi : y; }
@inline function incSat(n: i32): i32 { return n < COUNT_CAP ? n + 1 : n; }

// ---- host API (never called per tick except step) -----------------------------------------
export function regionPtr(region: i32): usize {
  switch (region) {
    case L.REGION_LOOP_F64: return LOOP_F64;
    case L.REGION_LOOP_I32: return LOOP_I32;
    case L.REGION_POINT_F64: return POINT_F64;
    case L.REGION_POINT_I32: return POINT_I32;
    case L.REGION_RACK_F64: return RACK_F64;
    case L.REGION_RACK_I32: return RACK_I32;
    case L.REGION_POINT_DIRTY: return POINT_DIRTY;
    default: return 0;
  }
}

/** Sets how many slots of each kind step() processes. Returns STEP_BAD_COUNTS and changes nothing if out of capacity. */
export function configure(loops: i32, points: i32, racks: i32): i32 {
  if (loops < 0 || loops > L.MAX_LOOPS || points < 0 || points > L.MAX_POINTS || racks < 0 || racks > L.MAX_RACKS) {
    return L.STEP_BAD_COUNTS;
  }
  loopCount = loops;
  pointCount = points;
  rackCount = racks;
  scanDue = -Infinity;
  countBadPoints();
  return L.STEP_OK;
}

/**
 * Puts every slot's run-time state back to "nothing known yet": no sample accepted, every point
 * Q_NEVER, racks not isolated, loops at their fixed sensor-fault output. Config fields are kept.
 * The host calls it once after writing config, before the first tick.
 */
export function resetState(): void {
  scanDue = -Infinity;
  badPoints = pointCount; // every point Q_NEVER
  for (let i = 0; i < L.MAX_POINTS; i++) {
    sf(pf(L.PF_VALUE), i, NaN);
    sf(pf(L.PF_TS), i, -Infinity);
    sf(pf(L.PF_HELD), i, NaN);
    sf(pf(L.PF_PREV_VALUE), i, NaN);
    sf(pf(L.PF_PREV_TS), i, -Infinity);
    sf(pf(L.PF_STUCK_REF), i, NaN);
    sf(pf(L.PF_STUCK_SINCE), i, 0);
    sf(pf(L.PF_STUCK_OUT_REF), i, NaN);
    sf(pf(L.PF_STUCK_MOVED_AT), i, Infinity);
    sf(pf(L.PF_QUIET_UNTIL), i, -Infinity);
    si(pi(L.PI_RAW), i, L.Q_NEVER);
    si(pi(L.PI_QUALITY), i, L.Q_NEVER);
    si(pi(L.PI_FAULT_COUNT), i, 0);
    si(pi(L.PI_CLEAR_COUNT), i, 0);
    si(pi(L.PI_RATE_FAULT), i, 0);
    si(pi(L.PI_WET_COUNT), i, 0);
    si(pi(L.PI_DRY_COUNT), i, 0);
    si(pi(L.PI_WET), i, 0);
  }
  for (let r = 0; r < L.MAX_RACKS; r++) {
    sf(rf(L.RF_ISOLATED_SINCE), r, 0);
    sf(rf(L.RF_FLOW), r, NaN);
    si(ri(L.RI_RESET), r, 0);
    si(ri(L.RI_STATE), r, L.RACK_NORMAL);
    si(ri(L.RI_STATUS), r, 0);
    si(ri(L.RI_SUPPLY_OPEN), r, 1);
    si(ri(L.RI_RETURN_OPEN), r, 1);
    si(ri(L.RI_RESET_RESULT), r, L.RESET_NONE);
    si(ri(L.RI_WET), r, 0);
    si(ri(L.RI_LEAK_FAULT), r, 0);
  }
  for (let i = 0; i < L.MAX_LOOPS; i++) {
    const out = clampf(gf(lf(L.LF_SAFE_FIXED_SENSOR), i), gf(lf(L.LF_OUT_MIN), i), gf(lf(L.LF_OUT_MAX), i));
    sf(lf(L.LF_OUT), i, out);
    sf(lf(L.LF_MANUAL), i, out);
    sf(lf(L.LF_OVERRIDE), i, out);
    sf(lf(L.LF_SP_RAMPED), i, gf(lf(L.LF_SP), i));
    sf(lf(L.LF_INTEGRAL), i, 0);
    sf(lf(L.LF_DFILT), i, 0);
    sf(lf(L.LF_PV_PREV), i, NaN);
    sf(lf(L.LF_PV), i, NaN);
    sf(lf(L.LF_ERROR), i, 0);
    sf(lf(L.LF_RESUME), i, NaN);
    sf(lf(L.LF_PV_FILT), i, NaN);
    sf(lf(L.LF_FLOW_LO), i, NaN);
    si(li(L.LI_STATUS), i, 0);
    si(li(L.LI_BRANCH), i, L.BRANCH_NONE);
    si(li(L.LI_TUNE), i, L.TUNE_OFF);
    si(li(L.LI_TUNE_RELAY), i, 0);
    si(li(L.LI_TUNE_SWITCHES), i, 0);
    si(li(L.LI_TUNE_END), i, L.TUNE_END_NONE);
  }
}

// ---- the tick ---------------------------------------------------------------------------

/** Advances the whole bank by one tick. nowMs: monotonic time of this tick; dtS: seconds since the last. */
export function step(nowMs: f64, dtS: f64): i32 {
  if (!(dtS > 0) || !isFinite(dtS) || !isFinite(nowMs)) return L.STEP_BAD_DT;
  for (let r = 0; r < rackCount; r++) {
    si(ri(L.RI_WET), r, 0);
    si(ri(L.RI_LEAK_FAULT), r, 0);
  }
  stepPoints(nowMs);
  stepRacks(nowMs);
  stepLoops(nowMs, dtS, 1.0 / dtS);
  return L.STEP_OK;
}

// The point pass gives every point exactly the verdict the reference model's pass (which tests
// every point's quiet condition every tick) gives it, while looking only at the points whose
// quiet test can fail. A point's test fails on a new sample (the host marks the point), on a
// timer falling due (scanDue), or every tick while its sample or timer keeps it unsettled
// (stepPoint tells its caller to keep the mark). So a quiet tick costs one look at the marks, not one
// quiet test per point.
function stepPoints(now: f64): void {
  if (!(now < scanDue) || --ticksToScan <= 0) {
    scanAllPoints(now, true);
    return;
  }
  const words = (pointCount + 31) >>> 5;
  // With most points marked (samples for most of the bank in one tick), the full scan's
  // two-lane quiet test is cheaper than walking the marks one point at a time.
  let marked: i32 = 0;
  for (let w = 0; w < words; w++) marked += <i32>popcnt(load<u32>(POINT_DIRTY + (<usize>w << 2)));
  if (marked > (pointCount >> 1)) {
    scanAllPoints(now, false);
    return;
  }
  for (let w = 0; w < words; w++) {
    const at = POINT_DIRTY + (<usize>w << 2);
    let bits = load<u32>(at);
    if (bits == 0) continue;
    const first = w << 5;
    if (pointCount - first < 32) bits &= (<u32>1 << <u32>(pointCount - first)) - 1; // marks past the last point mean nothing
    let keep: u32 = 0;
    while (bits != 0) {
      const b = <i32>ctz(bits);
      bits &= bits - 1;
      if (stepPoint(first + b, now)) keep |= <u32>1 << <u32>b;
    }
    store<u32>(at, keep);
  }
}

/**
 * Every point through the quiet test; settles the marks and scanDue afresh, and with `recount`
 * badPoints too (the count the step keeps is exact; the periodic recount is a second line).
 */
function scanAllPoints(now: f64, recount: bool): void {
  memory.fill(POINT_DIRTY, 0, L.MAX_POINTS >> 3);
  scanDue = Infinity;
  ticksToScan = L.FULL_SCAN_TICKS;
  if (!ASC_FEATURE_SIMD) {
    // the scalar build: the quiet test inline, so a quiet point costs no call
    for (let i = 0; i < pointCount; i++) {
      if (!quietPoint(i, now)) {
        if (stepPoint(i, now)) markPoint(i);
      } else {
        timerDueAt(gf(pf(L.PF_QUIET_UNTIL), i));
      }
    }
    if (recount) countBadPoints();
    return;
  }
  // Points go two at a time through the quiet test on SIMD lanes: on a running pod nearly every
  // point is quiet at any one tick, so the scan is mostly this test. A pair with either point
  // not quiet takes the scalar path.
  const nowV = f64x2.splat(now);
  const pairs = pointCount & ~1;
  let dueV = f64x2.splat(Infinity);
  for (let i = 0; i < pairs; i += 2) {
    if (quietPair(i, nowV)) {
      // a quiet point's quietUntil is later than now, so it is a pending timer, not a mark
      dueV = f64x2.pmin(dueV, pv2(L.PF_QUIET_UNTIL, i));
      continue;
    }
    if (stepPoint(i, now)) markPoint(i);
    if (stepPoint(i + 1, now)) markPoint(i + 1);
  }
  if (pairs < pointCount && stepPoint(pairs, now)) markPoint(pairs);
  const due = f64x2.extract_lane(dueV, 0) < f64x2.extract_lane(dueV, 1) ? f64x2.extract_lane(dueV, 0) : f64x2.extract_lane(dueV, 1);
  timerDueAt(due);
  if (recount) countBadPoints();
}

function countBadPoints(): void {
  let n = 0;
  for (let i = 0; i < pointCount; i++) if (gi(pi(L.PI_QUALITY), i) != 0) n++;
  badPoints = n;
}

/** A point's verdict can change, with no new sample, at time t: the full scan comes no later. */
@inline function timerDueAt(t: f64): void {
  if (t < scanDue) scanDue = t;
}

@inline function markPoint(i: i32): void {
  const at = POINT_DIRTY + (<usize>(i >>> 5) << 2);
  store<u32>(at, load<u32>(at) | (<u32>1 << <u32>(i & 31)));
}

// a point f64 field of slots i, i+1 (i even, so the 16-byte access is aligned)
@inline function pv2(field: i32, i: i32): v128 { return v128.load(pf(field) + (<usize>i << 3)); }

/** Both points of the pair pass quietPoint's test (the same comparisons, lane by lane). */
@inline function quietPair(i: i32, nowV: v128): bool {
  const sameTs = f64x2.eq(pv2(L.PF_TS, i), pv2(L.PF_PREV_TS, i));
  const sameValue = f64x2.eq(pv2(L.PF_VALUE, i), pv2(L.PF_PREV_VALUE, i));
  const noTimerDue = f64x2.lt(nowV, pv2(L.PF_QUIET_UNTIL, i));
  return i64x2.all_true(v128.and(v128.and(sameTs, sameValue), noTimerDue));
}

/**
 * The fast path's test: the same sample as last tick, settled debounce, no timer due, so
 * nothing about point i can change this tick. (A NaN sample never compares equal, so it always
 * takes the full path.)
 */
@inline function quietPoint(i: i32, now: f64): bool {
  return gf(pf(L.PF_TS), i) == gf(pf(L.PF_PREV_TS), i) && gf(pf(L.PF_VALUE), i) == gf(pf(L.PF_PREV_VALUE), i) && now < gf(pf(L.PF_QUIET_UNTIL), i);
}

/** Point i is judged by the plant around it: it names a loop, and a move of its output to answer. */
@inline function stuckByPlant(i: i32): bool {
  return gi(pi(L.PI_STUCK_LOOP), i) >= 0 && gf(pf(L.PF_STUCK_MOVE), i) > 0;
}

/** When point i's stuck timer started: its last change, or, judged by the plant, its loop's move since (+Infinity: none yet). */
@inline function stuckClock(i: i32): f64 {
  return stuckByPlant(i) ? gf(pf(L.PF_STUCK_MOVED_AT), i) : gf(pf(L.PF_STUCK_SINCE), i);
}

/**
 * Validates point i: raw quality bits, debounce, hold of the last good sample, leak counters.
 * Returns whether, with no new sample, the point's quiet test fails whatever the time (a NaN
 * sample, a sample not yet taken in, a verdict not settled): the caller keeps it marked for the
 * next tick. If it fails only from a time on, that time has gone into scanDue.
 */
function stepPoint(i: i32, now: f64): bool {
  // A pair that is not quiet as a whole may still hold one quiet point, and a marked point may
  // be quiet (the same sample written again). Its timer still counts: a full scan is
  // rebuilding scanDue from every point.
  if (quietPoint(i, now)) {
    timerDueAt(gf(pf(L.PF_QUIET_UNTIL), i));
    return false;
  }
  const v = gf(pf(L.PF_VALUE), i);
  const ts = gf(pf(L.PF_TS), i);
  const kind = gi(pi(L.PI_KIND), i);
  let raw: i32 = 0;
  // whether, after this tick, the sample equals the one last taken in (its prev fields): only
  // a finite sample is taken in, and a NaN source time never equals itself
  let sameSample = false;
  if (!isFinite(v)) {
    raw |= L.Q_NOT_FINITE;
  } else {
    if (v < gf(pf(L.PF_MIN), i) || v > gf(pf(L.PF_MAX), i)) raw |= L.Q_RANGE;
    if (kind == L.KIND_LEAK) {
      if (v == <f64>L.LEAK_CABLE_FAULT) raw |= L.Q_CABLE_FAULT;
      else if (v != <f64>L.LEAK_DRY && v != <f64>L.LEAK_WET) raw |= L.Q_RANGE;
    }
    // The rate check runs once per new sample: a held sample must not re-fail every tick.
    const prevTs = gf(pf(L.PF_PREV_TS), i);
    if (ts != prevTs) {
      let rateFault: i32 = 0;
      const rateMax = gf(pf(L.PF_RATE_MAX), i);
      if (rateMax > 0 && ts > prevTs && isFinite(prevTs)) {
        const gapS = (ts - prevTs) * 0.001;
        if (absf(v - gf(pf(L.PF_PREV_VALUE), i)) > rateMax * gapS) rateFault = 1;
      }
      si(pi(L.PI_RATE_FAULT), i, rateFault);
      sf(pf(L.PF_PREV_VALUE), i, v);
      sf(pf(L.PF_PREV_TS), i, ts);
      sameSample = ts == ts;
    } else {
      sameSample = v == gf(pf(L.PF_PREV_VALUE), i);
    }
    if (gi(pi(L.PI_RATE_FAULT), i) != 0) raw |= L.Q_RATE;
    const stuckMs = gf(pf(L.PF_STUCK_MS), i);
    if (stuckMs > 0) {
      // judged by the plant around it where the point has a loop (layout.ts, PF_STUCK_MOVE)
      const byPlant = stuckByPlant(i);
      const move = gf(pf(L.PF_STUCK_MOVE), i);
      const out = byPlant ? gf(lf(L.LF_OUT), gi(pi(L.PI_STUCK_LOOP), i)) : 0.0;
      if (!(absf(v - gf(pf(L.PF_STUCK_REF), i)) <= gf(pf(L.PF_STUCK_EPS), i))) {
        sf(pf(L.PF_STUCK_REF), i, v);
        sf(pf(L.PF_STUCK_SINCE), i, now);
        sf(pf(L.PF_STUCK_OUT_REF), i, out);
        sf(pf(L.PF_STUCK_MOVED_AT), i, Infinity);
      } else {
        if (byPlant && gf(pf(L.PF_STUCK_MOVED_AT), i) == Infinity && absf(out - gf(pf(L.PF_STUCK_OUT_REF), i)) >= move) sf(pf(L.PF_STUCK_MOVED_AT), i, now);
        if (now - stuckClock(i) >= stuckMs) raw |= L.Q_STUCK;
      }
    }
  }
  const staleMs = gf(pf(L.PF_STALE_MS), i);
  if (staleMs > 0 && !(now - ts <= staleMs)) raw |= L.Q_STALE;

  si(pi(L.PI_RAW), i, raw);
  let settled = false;
  if (raw != 0) {
    const n = incSat(gi(pi(L.PI_FAULT_COUNT), i));
    si(pi(L.PI_FAULT_COUNT), i, n);
    si(pi(L.PI_CLEAR_COUNT), i, 0);
    if (n >= gi(pi(L.PI_DEBOUNCE_FAULT), i)) {
      if (gi(pi(L.PI_QUALITY), i) == 0) badPoints++;
      si(pi(L.PI_QUALITY), i, raw);
      settled = true;
    }
  } else {
    // Only a sample that passed every raw check is ever handed to a loop.
    sf(pf(L.PF_HELD), i, v);
    const n = incSat(gi(pi(L.PI_CLEAR_COUNT), i));
    si(pi(L.PI_CLEAR_COUNT), i, n);
    si(pi(L.PI_FAULT_COUNT), i, 0);
    if (n >= gi(pi(L.PI_DEBOUNCE_CLEAR), i)) {
      if (gi(pi(L.PI_QUALITY), i) != 0) badPoints--;
      si(pi(L.PI_QUALITY), i, 0);
      settled = true;
    }
  }

  // How long this verdict holds if no new sample arrives: until the next timer check could
  // add a bit. Leak points are never skipped (their wet/dry counters run every tick).
  let quiet: f64 = -Infinity;
  if (settled && kind != L.KIND_LEAK) {
    quiet = Infinity;
    if (staleMs > 0 && (raw & L.Q_STALE) == 0) quiet = ts + staleMs;
    const stuckMs = gf(pf(L.PF_STUCK_MS), i);
    if (stuckMs > 0 && (raw & (L.Q_STUCK | L.Q_NOT_FINITE)) == 0) {
      const due = stuckClock(i) + stuckMs;
      if (due < quiet) quiet = due;
    }
  }
  sf(pf(L.PF_QUIET_UNTIL), i, quiet);
  const staysMarked = !sameSample || !(quiet > -Infinity);
  if (!staysMarked) timerDueAt(quiet);

  if (kind == L.KIND_LEAK) {
    // Wet ticks accumulate until a full clear-debounce of dry ticks: a chattering leak
    // signal therefore still isolates, while a single-tick glitch does not.
    if (raw == 0 && v == <f64>L.LEAK_WET) {
      si(pi(L.PI_WET_COUNT), i, incSat(gi(pi(L.PI_WET_COUNT), i)));
      si(pi(L.PI_DRY_COUNT), i, 0);
    } else {
      const dry = incSat(gi(pi(L.PI_DRY_COUNT), i));
      si(pi(L.PI_DRY_COUNT), i, dry);
      if (dry >= gi(pi(L.PI_DEBOUNCE_CLEAR), i)) si(pi(L.PI_WET_COUNT), i, 0);
    }
    const wet: i32 = gi(pi(L.PI_WET_COUNT), i) >= gi(pi(L.PI_DEBOUNCE_FAULT), i) ? 1 : 0;
    si(pi(L.PI_WET), i, wet);
    const r = gi(pi(L.PI_RACK), i);
    if (r >= 0 && r < rackCount) {
      if (wet != 0) si(ri(L.RI_WET), r, 1);
      if (gi(pi(L.PI_QUALITY), i) != 0) si(ri(L.RI_LEAK_FAULT), r, 1);
    }
  }
  return staysMarked;
}

function stepRacks(now: f64): void {
  racksClosed = 0;
  racksLeaking = 0;
  for (let r = 0; r < rackCount; r++) {
    const wet = gi(ri(L.RI_WET), r);
    const leakFault = gi(ri(L.RI_LEAK_FAULT), r);
    const tripOnFault = leakFault != 0 && gi(ri(L.RI_SENSOR_FAULT_ACTION), r) == L.LEAK_FAULT_ISOLATE;
    let state = gi(ri(L.RI_STATE), r);

    // The proof must come from a clean sample taken after isolation began, never a held one.
    const fp = gi(ri(L.RI_FLOW_POINT), r);
    let flow: f64 = NaN;
    let flowGood = false;
    let flowFresh = false;
    if (fp >= 0 && fp < pointCount) {
      flow = gf(pf(L.PF_HELD), fp);
      flowGood = gi(pi(L.PI_QUALITY), fp) == 0 && gi(pi(L.PI_RAW), fp) == 0;
      flowFresh = flowGood && gf(pf(L.PF_TS), fp) >= gf(rf(L.RF_ISOLATED_SINCE), r);
    }
    sf(rf(L.RF_FLOW), r, flow);

    if (gi(ri(L.RI_RESET), r) != 0) {
      if (wet != 0 || tripOnFault) {
        si(ri(L.RI_RESET_RESULT), r, L.RESET_REFUSED_WET);
      } else {
        state = L.RACK_NORMAL;
        si(ri(L.RI_RESET_RESULT), r, L.RESET_ACCEPTED);
      }
      si(ri(L.RI_RESET), r, 0);
    }

    if (state == L.RACK_NORMAL && (wet != 0 || tripOnFault)) {
      state = L.RACK_ISOLATING;
      sf(rf(L.RF_ISOLATED_SINCE), r, now);
      flowFresh = false; // a sample from before this instant proves nothing (nor, so, do the limits this tick)
    }
    // A configured closed limit switch must read closed too, on a clean sample taken since
    // isolation began: flow alone passes a seized valve whose control valve passes little.
    const since = gf(rf(L.RF_ISOLATED_SINCE), r);
    const supplyLimit = closedLimit(gi(ri(L.RI_SUPPLY_CLOSED_POINT), r), since);
    const returnLimit = closedLimit(gi(ri(L.RI_RETURN_CLOSED_POINT), r), since);
    const limitsClosed = (supplyLimit & LIMIT_CLOSED) != 0 && (returnLimit & LIMIT_CLOSED) != 0;
    const limitsFresh = (supplyLimit & LIMIT_FRESH) != 0 && (returnLimit & LIMIT_FRESH) != 0;
    const limitLeft = ((supplyLimit | returnLimit) & LIMIT_OPEN) != 0;
    const threshold = gf(rf(L.RF_ISOLATED_FLOW_MAX), r);
    if (state == L.RACK_ISOLATING) {
      if (flowFresh && flow < threshold && limitsFresh) {
        state = L.RACK_ISOLATED;
      } else if (!(now - since < gf(rf(L.RF_ISOLATION_DEADLINE_MS), r))) {
        state = L.RACK_ESCALATED;
      }
    } else if (state == L.RACK_ISOLATED) {
      if ((flowGood && !(flow < threshold)) || limitLeft) state = L.RACK_ESCALATED;
    }
    si(ri(L.RI_STATE), r, state);
    if (wet != 0 || state != L.RACK_NORMAL) racksLeaking++;

    const manual = gi(ri(L.RI_MANUAL_ISOLATE), r) != 0;
    const closed = state != L.RACK_NORMAL || manual;
    si(ri(L.RI_SUPPLY_OPEN), r, closed ? 0 : 1);
    if (closed) racksClosed++;
    si(ri(L.RI_RETURN_OPEN), r, closed ? 0 : 1);

    let status: i32 = 0;
    if (wet != 0) status |= L.RS_LEAK_WET;
    if (state != L.RACK_NORMAL) status |= L.RS_LATCHED;
    if (state == L.RACK_ISOLATED) status |= L.RS_PROVEN;
    if (state == L.RACK_ESCALATED) status |= L.RS_ESCALATE;
    if (leakFault != 0) status |= L.RS_LEAK_SENSOR_FAULT;
    if (!flowGood) status |= L.RS_FLOW_BAD;
    if (manual) status |= L.RS_MANUAL_ISOLATE;
    if (closed) status |= L.RS_VALVES_CLOSED;
    if (limitsClosed) status |= L.RS_LIMITS_CLOSED;
    si(ri(L.RI_STATUS), r, status);
  }
}

const LIMIT_CLOSED: i32 = 1; // unconfigured, or a good sample at the closed limit
const LIMIT_FRESH: i32 = 2; // unconfigured, or a good sample at the closed limit taken at or after `since`
const LIMIT_OPEN: i32 = 4; // a good sample off the closed limit

/** What a rack's closed-limit point says (LIMIT_* bits); p < 0 is a limit switch not configured. */
@inline function closedLimit(p: i32, since: f64): i32 {
  if (p < 0 || p >= pointCount) return LIMIT_CLOSED | LIMIT_FRESH;
  if (gi(pi(L.PI_QUALITY), p) != 0 || gi(pi(L.PI_RAW), p) != 0) return 0;
  if (!(gf(pf(L.PF_HELD), p) >= 0.5)) return LIMIT_OPEN;
  return gf(pf(L.PF_TS), p) >= since ? LIMIT_CLOSED | LIMIT_FRESH : LIMIT_CLOSED;
}

@inline function safeOutput(action: i32, fixed: f64, prev: f64, lo: f64, hi: f64): f64 {
  if (action == L.SAFE_OPEN) return hi;
  if (action == L.SAFE_CLOSED) return lo;
  if (action == L.SAFE_HOLD && isFinite(prev)) return clampf(prev, lo, hi);
  return clampf(fixed, lo, hi);
}

function stepLoops(now: f64, dt: f64, invDt: f64): void {
  if (!ASC_FEATURE_SIMD) {
    // the scalar build, for CPUs that cannot run WebAssembly SIMD (wasm-bank.ts picks it)
    for (let i = 0; i < loopCount; i++) stepLoop(i, now, dt, invDt);
    return;
  }
  // Loops go two at a time: a pair in which both loops are in steady automatic control (the
  // common case on a running pod) takes the two-lane SIMD path; any other pair, and an odd
  // last loop, take the scalar path, which handles every branch of the interlock priority.
  const pairs = loopCount & ~1;
  const inputsAllGood = badPoints == 0 && racksClosed == 0;
  for (let i = 0; i < pairs; i += 2) {
    if (!stepAutomaticPair(i, dt, invDt, inputsAllGood)) {
      stepLoop(i, now, dt, invDt);
      stepLoop(i + 1, now, dt, invDt);
    }
  }
  if (pairs < loopCount) stepLoop(pairs, now, dt, invDt);
}

// ---- relay autotune ---------------------------------------------------------------------
// A loop under tuning (LI_TUNE not TUNE_OFF; the host starts one, bank-inputs.ts) first holds
// its output at the bias while it measures the PV's noise, then runs a relay with hysteresis
// around the PV's mean: output bias + d while the error is above the band, bias - d below it.
// The loop then oscillates at its ultimate period, and the host works out the gains from the
// PV and output it samples (agent/tuning). Every check that ends a tuning runs here, in the
// tick, so an abort takes effect in the tick that sees its cause. A tuning never passes an
// interlock: the leak and fail-safe branches outrank it and end it.

@inline function actionSign(i: i32): f64 { return gi(li(L.LI_ACTION), i) == L.ACTION_REVERSE ? -1.0 : 1.0; }

/** Ends loop i's tuning: the loop goes back to its mode this very tick. */
@inline function endTune(i: i32, why: i32): void {
  si(li(L.LI_TUNE), i, L.TUNE_OFF);
  si(li(L.LI_TUNE_END), i, why);
}

/**
 * The checks that end a tuning besides the interlocks, and the noise window's bookkeeping.
 * Returns TUNE_END_NONE while the tuning goes on (and moves it from the noise phase to the
 * relay when the window is over), else why it ends.
 */
function tuneCheck(i: i32, pv: f64, now: f64, lo: f64, hi: f64): i32 {
  if (racksLeaking != 0) return L.TUNE_END_LEAK;
  if (!(now - gf(lf(L.LF_TUNE_T0), i) < gf(lf(L.LF_TUNE_TIMEOUT_MS), i))) return L.TUNE_END_TIMEOUT;
  const devMax = gf(lf(L.LF_TUNE_DEV_MAX), i);
  if (gi(li(L.LI_TUNE), i) == L.TUNE_RELAY) {
    return absf(pv - gf(lf(L.LF_TUNE_CENTER), i)) <= devMax ? L.TUNE_END_NONE : L.TUNE_END_DEVIATION;
  }
  let pvLo = gf(lf(L.LF_TUNE_LO), i);
  let pvHi = gf(lf(L.LF_TUNE_HI), i);
  if (pv < pvLo) pvLo = pv;
  if (pv > pvHi) pvHi = pv;
  sf(lf(L.LF_TUNE_LO), i, pvLo);
  sf(lf(L.LF_TUNE_HI), i, pvHi);
  if (!(pvHi - pvLo <= devMax)) return L.TUNE_END_DEVIATION;
  const sum = gf(lf(L.LF_TUNE_SUM), i) + pv;
  const n = gf(lf(L.LF_TUNE_N), i) + 1.0;
  sf(lf(L.LF_TUNE_SUM), i, sum);
  sf(lf(L.LF_TUNE_N), i, n);
  if (now - gf(lf(L.LF_TUNE_T0), i) < gf(lf(L.LF_TUNE_NOISE_MS), i)) return L.TUNE_END_NONE;
  // The noise window is over. The hysteresis is 1.5 times the noise's half-range, so noise
  // alone cannot switch the relay (a relay that chatters on noise measures nothing), and at
  // least the configured floor. The amplitude is the configured one, narrowed to fit the
  // envelope around the bias; a quarter of it or less is too little to measure: refused.
  const center = sum / n;
  let hyst = (pvHi - pvLo) * 0.75;
  const hystMin = gf(lf(L.LF_TUNE_HYST_MIN), i);
  if (!(hyst >= hystMin)) hyst = hystMin;
  const bias = gf(lf(L.LF_TUNE_BIAS), i);
  const amp = gf(lf(L.LF_TUNE_AMP), i);
  let d = amp;
  if (bias - lo < d) d = bias - lo;
  if (hi - bias < d) d = hi - bias;
  if (!(d > 0) || !(d >= amp * 0.25)) return L.TUNE_END_ENVELOPE;
  sf(lf(L.LF_TUNE_CENTER), i, center);
  sf(lf(L.LF_TUNE_HYST), i, hyst);
  sf(lf(L.LF_TUNE_D), i, d);
  si(li(L.LI_TUNE_RELAY), i, actionSign(i) * (pv - center) >= 0 ? 1 : -1);
  si(li(L.LI_TUNE_SWITCHES), i, 0);
  si(li(L.LI_TUNE), i, L.TUNE_RELAY);
  return L.TUNE_END_NONE;
}

/** The output a tuning loop asks for this tick: the bias while the noise is measured, then the relay's. */
function tuneTarget(i: i32, pv: f64): f64 {
  const bias = gf(lf(L.LF_TUNE_BIAS), i);
  if (gi(li(L.LI_TUNE), i) != L.TUNE_RELAY) return bias;
  const e = actionSign(i) * (pv - gf(lf(L.LF_TUNE_CENTER), i));
  const hyst = gf(lf(L.LF_TUNE_HYST), i);
  const side = gi(li(L.LI_TUNE_RELAY), i);
  let next = side;
  if (side > 0 && e < -hyst) next = -1;
  else if (side < 0 && e > hyst) next = 1;
  if (next != side) {
    si(li(L.LI_TUNE_RELAY), i, next);
    si(li(L.LI_TUNE_SWITCHES), i, gi(li(L.LI_TUNE_SWITCHES), i) + 1);
  }
  const d = gf(lf(L.LF_TUNE_D), i);
  return next > 0 ? bias + d : bias - d;
}

/** One loop through the interlock priority (leak > fail-safe > manual/override > automatic). */
@inline function stepLoop(i: i32, now: f64, dt: f64, invDt: f64): void {
  const prev = gf(lf(L.LF_OUT), i);
  const lo = gf(lf(L.LF_OUT_MIN), i);
  const hi = gf(lf(L.LF_OUT_MAX), i);
  const lastBranch = gi(li(L.LI_BRANCH), i);
  const lastStatus = gi(li(L.LI_STATUS), i);
  const mode = gi(li(L.LI_MODE), i);

  const pvIdx = gi(li(L.LI_PV_POINT), i);
  let pvBad = true;
  let pv: f64 = NaN;
  if (pvIdx >= 0 && pvIdx < pointCount) {
    pv = gf(pf(L.PF_HELD), pvIdx);
    pvBad = gi(pi(L.PI_QUALITY), pvIdx) != 0;
  }
  // first-order PV filter: the PID sees the filtered PV, the checks above saw the raw sample
  const pvTau = gf(lf(L.LF_PV_FILTER_S), i);
  if (pvTau > 0) {
    if (pvBad) {
      sf(lf(L.LF_PV_FILT), i, NaN);
    } else {
      const filt = gf(lf(L.LF_PV_FILT), i);
      if (isFinite(filt)) pv = filt + (dt / (pvTau + dt)) * (pv - filt);
      sf(lf(L.LF_PV_FILT), i, pv);
    }
  }
  const ffIdx = gi(li(L.LI_FF_POINT), i);
  let ffBad = false;
  let ff: f64 = 0;
  if (ffIdx >= 0) {
    if (ffIdx < pointCount) {
      ff = gf(pf(L.PF_HELD), ffIdx);
      ffBad = gi(pi(L.PI_QUALITY), ffIdx) != 0;
    } else {
      ffBad = true;
    }
  }
  const sp = gf(lf(L.LF_SP), i);
  const rack = gi(li(L.LI_RACK), i);
  let tuning = gi(li(L.LI_TUNE), i) != L.TUNE_OFF;

  let status: i32 = 0;
  let branch: i32 = L.BRANCH_NONE;
  let out: f64 = prev;
  let err: f64 = 0;

  let isolated = false;
  if (rack >= 0 && rack < rackCount) {
    const latched = gi(ri(L.RI_STATE), rack) != L.RACK_NORMAL;
    const manualIsolate = gi(ri(L.RI_MANUAL_ISOLATE), rack) != 0;
    isolated = latched || manualIsolate;
    if (!latched && manualIsolate) status |= L.LS_MANUAL_ISOLATE;
  }

  if (isolated) {
    branch = L.BRANCH_LEAK;
    status |= L.LS_INTERLOCK_LEAK;
    if (lastBranch != L.BRANCH_LEAK) sf(lf(L.LF_RESUME), i, prev);
    out = safeOutput(gi(li(L.LI_SAFE_LEAK), i), gf(lf(L.LF_SAFE_FIXED_LEAK), i), prev, lo, hi);
    if (tuning) {
      endTune(i, L.TUNE_END_INTERLOCK);
      tuning = false;
    }
  } else {
    let reasons: i32 = 0;
    if (pvBad) reasons |= L.LS_PV_BAD;
    // a bad feed-forward input is reported, and only its term is dropped (below)
    if (ffBad) status |= L.LS_FF_BAD;
    if (!isFinite(sp)) reasons |= L.LS_SP_INVALID;
    if (mode == L.MODE_MANUAL) {
      if (!isFinite(gf(lf(L.LF_MANUAL), i))) reasons |= L.LS_CMD_INVALID;
    } else if (mode == L.MODE_OVERRIDE) {
      if (!isFinite(gf(lf(L.LF_OVERRIDE), i))) reasons |= L.LS_CMD_INVALID;
    } else if (mode != L.MODE_AUTOMATIC && mode != L.MODE_DISABLED) {
      reasons |= L.LS_CMD_INVALID;
    }

    // a tuning ends on the tick an interlock, a leak in the pod, its timeout or its deviation
    // bound says so, and the loop then runs its mode's branch at once (bumpless, from `prev`)
    if (reasons != 0) {
      if (tuning) {
        endTune(i, L.TUNE_END_BAD_INPUT);
        tuning = false;
      }
    } else if (tuning) {
      const why = tuneCheck(i, pv, now, lo, hi);
      if (why != L.TUNE_END_NONE) {
        endTune(i, why);
        tuning = false;
      }
    }

    if (reasons != 0) {
      branch = L.BRANCH_FAILSAFE;
      status |= L.LS_INTERLOCK_FAILSAFE | reasons;
      out = safeOutput(gi(li(L.LI_SAFE_SENSOR), i), gf(lf(L.LF_SAFE_FIXED_SENSOR), i), prev, lo, hi);
    } else if (mode == L.MODE_DISABLED && !tuning) {
      branch = L.BRANCH_DISABLED;
      status |= L.LS_DISABLED;
      out = clampf(prev, lo, hi);
    } else {
      let target: f64;
      let envLo = lo; // the envelope's low end; in automatic, raised by the minimum-flow floor
      if (tuning) {
        branch = L.BRANCH_TUNE;
        status |= L.LS_TUNING;
        target = tuneTarget(i, pv);
      } else if (mode == L.MODE_MANUAL) {
        branch = L.BRANCH_MANUAL;
        status |= L.LS_MANUAL;
        target = gf(lf(L.LF_MANUAL), i);
      } else if (mode == L.MODE_OVERRIDE) {
        branch = L.BRANCH_OVERRIDE;
        status |= L.LS_OVERRIDE;
        target = gf(lf(L.LF_OVERRIDE), i);
      } else {
        branch = L.BRANCH_AUTOMATIC;
        status |= L.LS_AUTOMATIC;
        const entering = lastBranch != L.BRANCH_AUTOMATIC;

        // setpoint ramp; on entry the ramp starts from the PV so the error starts at zero
        const spRate = gf(lf(L.LF_SP_RAMP), i);
        let spr: f64;
        if (spRate > 0) {
          spr = entering ? pv : gf(lf(L.LF_SP_RAMPED), i);
          const spStep = spRate * dt;
          if (sp > spr + spStep) spr = spr + spStep;
          else if (sp < spr - spStep) spr = spr - spStep;
          else spr = sp;
        } else {
          spr = sp;
        }
        sf(lf(L.LF_SP_RAMPED), i, spr);

        const act: f64 = gi(li(L.LI_ACTION), i) == L.ACTION_REVERSE ? -1.0 : 1.0;
        err = act * (pv - spr);
        if (absf(err) <= gf(lf(L.LF_DEADBAND), i)) err = 0;

        // derivative on measurement through a first-order filter: no setpoint kick
        // (skipped entirely for PI loops: it holds the only division in the loop)
        const kd = gf(lf(L.LF_KD), i);
        let dTerm: f64 = 0;
        if (kd != 0) {
          const pvPrev = entering ? pv : gf(lf(L.LF_PV_PREV), i);
          const alpha = dt / (gf(lf(L.LF_TF), i) + dt);
          let dFilt = entering ? 0.0 : gf(lf(L.LF_DFILT), i);
          dFilt = dFilt + alpha * ((pv - pvPrev) * invDt - dFilt);
          if (!isFinite(dFilt)) dFilt = 0;
          sf(lf(L.LF_DFILT), i, dFilt);
          dTerm = kd * (act * dFilt);
        }

        const pTerm = gf(lf(L.LF_KP), i) * err;
        const ffTerm = ffIdx >= 0 && !ffBad ? gf(lf(L.LF_KFF), i) * (ff - gf(lf(L.LF_FF_BIAS), i)) : 0.0;
        let integral = gf(lf(L.LF_INTEGRAL), i);
        // the terms other than the integral, summed once, P last: the error's chain to the
        // output then has one add before the integral's (the D and FF sum does not wait on it)
        const rest = pTerm + (dTerm + ffTerm);
        // bumpless: on entry choose the integral that reproduces the current output, or, back
        // from an isolation, the output the loop had before it (the slew limit ramps the valve);
        // and when the feed-forward term is dropped or restored, the integral that keeps the output
        if (entering) {
          const resume = gf(lf(L.LF_RESUME), i);
          const base = lastBranch == L.BRANCH_LEAK && isFinite(resume) ? resume : prev;
          integral = isFinite(base) ? base - rest : 0.0;
        } else if (((lastStatus & L.LS_FF_BAD) != 0) != ffBad) {
          integral = isFinite(prev) ? prev - rest : 0.0;
        }

        // the minimum-flow floor: an integral-only loop on the rack's flow whose output is the
        // envelope's low end; dropped (restarting from outMin later) while the flow input is bad
        const minFlow = gf(lf(L.LF_MIN_FLOW), i);
        if (minFlow > 0) {
          const fp = <u32>rack < <u32>rackCount ? gi(ri(L.RI_FLOW_POINT), rack) : -1;
          if (goodPoint(fp)) {
            let floor = gf(lf(L.LF_FLOW_LO), i);
            if (!isFinite(floor)) floor = lo;
            floor = clampf(floor + gf(lf(L.LF_FLOW_GAIN), i) * ((minFlow - gf(pf(L.PF_HELD), fp)) * dt), lo, hi);
            sf(lf(L.LF_FLOW_LO), i, floor);
            envLo = floor;
            if (floor > lo) status |= L.LS_FLOW_FLOOR;
          } else {
            sf(lf(L.LF_FLOW_LO), i, NaN);
            status |= L.LS_FLOW_FLOOR_LOST;
          }
        }

        // conditional integration: do not integrate further into a clamp or slew limit
        const rate = gf(lf(L.LF_OUT_RATE), i);
        let hiLim = hi;
        let loLim = envLo;
        if (rate > 0 && isFinite(prev)) {
          const maxStep = rate * dt;
          if (prev + maxStep < hiLim) hiLim = prev + maxStep;
          if (prev - maxStep > loLim) loLim = prev - maxStep;
        }
        const iDelta = err * (gf(lf(L.LF_KI), i) * dt);
        const candidate = integral + iDelta;
        const uTry = rest + candidate;
        if ((uTry > hiLim && iDelta > 0) || (uTry < loLim && iDelta < 0)) {
          status |= L.LS_INTEGRATOR_HELD;
        } else {
          integral = candidate;
        }
        if (!isFinite(integral)) integral = 0;
        sf(lf(L.LF_INTEGRAL), i, integral);
        target = rest + integral;
      }

      // manual, override and automatic share the envelope clamp and the slew limit
      out = clampf(target, envLo, hi);
      if (!(target <= hi)) status |= L.LS_SAT_HIGH;
      if (!(target >= envLo)) status |= L.LS_SAT_LOW;
      const rate = gf(lf(L.LF_OUT_RATE), i);
      if (rate > 0 && isFinite(prev)) {
        const maxStep = rate * dt;
        if (out > prev + maxStep) {
          out = prev + maxStep;
          status |= L.LS_RATE_LIMITED;
        } else if (out < prev - maxStep) {
          out = prev - maxStep;
          status |= L.LS_RATE_LIMITED;
        }
      }
    }
  }

  if (branch != L.BRANCH_AUTOMATIC) sf(lf(L.LF_FLOW_LO), i, NaN); // the floor restarts from outMin on return
  if (!pvBad) sf(lf(L.LF_PV_PREV), i, pv);
  sf(lf(L.LF_PV), i, pv);
  sf(lf(L.LF_ERROR), i, err);
  sf(lf(L.LF_OUT), i, out);
  // Manual and override values track the output while their mode is not selected, so
  // switching into either mode without a new value is bumpless. While the mode is selected
  // they hold, even when an interlock or fail-safe outranks them: the operator's value is
  // what the loop returns to afterwards (a Manual set, or restored, while the inputs are
  // still bad at start would otherwise be replaced by the fail-safe output).
  // Under tuning they track too, so the loop's return to Manual or Override is bumpless as well.
  if (mode != L.MODE_MANUAL || tuning) sf(lf(L.LF_MANUAL), i, out);
  if (mode != L.MODE_OVERRIDE || tuning) sf(lf(L.LF_OVERRIDE), i, out);
  si(li(L.LI_BRANCH), i, branch);
  si(li(L.LI_STATUS), i, status);
}

// ---- the two-lane automatic path ----------------------------------------------------------
// stepAutomaticPair() is the scalar automatic branch above, restricted to the case it
// admits (steady automatic control) and computed for loops i and i+1 at once on f64x2 lanes. Every
// lane operation is the IEEE operation the scalar path performs, in the same order, and every
// `if` there is a lane mask and a bitselect here, so the two paths agree bit for bit; the
// reference-model test holds both to that. Nothing here may be reached in any other case.

// Both loops' i32 field in one 64-bit load: its value when both hold `code`.
@inline function bothAre(code: i32): u64 { return (<u64><u32>code << 32) | <u64><u32>code; }
@inline function li2(field: i32, i: i32): u64 { return load<u64>(li(field) + (<usize>i << 2)); }
/** The point exists and its debounced quality is good. */
@inline function goodPoint(p: i32): bool { return <u32>p < <u32>pointCount && gi(pi(L.PI_QUALITY), p) == 0; }
/** The loop has no rack, or its rack's valves are open this tick (not latched, not manually isolated). */
@inline function rackInService(r: i32): bool { return <u32>r >= <u32>rackCount || gi(ri(L.RI_SUPPLY_OPEN), r) != 0; }

// The loop f64 fields the pair path uses, as compile-time addresses. A v128 load or store of
// slots i, i+1 (i even, so the 16-byte access is aligned) is then written with the field as its
// immediate offset, `v128.load(o, KP_AT)`, and compiles to one instruction instead of an
// address computation and a load (5 % of the pair path, measured).
const DEADBAND_AT: usize = LOOP_F64 + <usize>(L.LF_DEADBAND * LOOP_F64_STRIDE);
const DFILT_AT: usize = LOOP_F64 + <usize>(L.LF_DFILT * LOOP_F64_STRIDE);
const ERROR_AT: usize = LOOP_F64 + <usize>(L.LF_ERROR * LOOP_F64_STRIDE);
const FF_BIAS_AT: usize = LOOP_F64 + <usize>(L.LF_FF_BIAS * LOOP_F64_STRIDE);
const INTEGRAL_AT: usize = LOOP_F64 + <usize>(L.LF_INTEGRAL * LOOP_F64_STRIDE);
const KD_AT: usize = LOOP_F64 + <usize>(L.LF_KD * LOOP_F64_STRIDE);
const KFF_AT: usize = LOOP_F64 + <usize>(L.LF_KFF * LOOP_F64_STRIDE);
const KI_AT: usize = LOOP_F64 + <usize>(L.LF_KI * LOOP_F64_STRIDE);
const KP_AT: usize = LOOP_F64 + <usize>(L.LF_KP * LOOP_F64_STRIDE);
const MANUAL_AT: usize = LOOP_F64 + <usize>(L.LF_MANUAL * LOOP_F64_STRIDE);
const OUT_AT: usize = LOOP_F64 + <usize>(L.LF_OUT * LOOP_F64_STRIDE);
const OUT_MAX_AT: usize = LOOP_F64 + <usize>(L.LF_OUT_MAX * LOOP_F64_STRIDE);
const OUT_MIN_AT: usize = LOOP_F64 + <usize>(L.LF_OUT_MIN * LOOP_F64_STRIDE);
const OUT_RATE_AT: usize = LOOP_F64 + <usize>(L.LF_OUT_RATE * LOOP_F64_STRIDE);
const OVERRIDE_AT: usize = LOOP_F64 + <usize>(L.LF_OVERRIDE * LOOP_F64_STRIDE);
const PV_AT: usize = LOOP_F64 + <usize>(L.LF_PV * LOOP_F64_STRIDE);
const PV_FILTER_S_AT: usize = LOOP_F64 + <usize>(L.LF_PV_FILTER_S * LOOP_F64_STRIDE);
const MIN_FLOW_AT: usize = LOOP_F64 + <usize>(L.LF_MIN_FLOW * LOOP_F64_STRIDE);
const PV_PREV_AT: usize = LOOP_F64 + <usize>(L.LF_PV_PREV * LOOP_F64_STRIDE);
const SP_AT: usize = LOOP_F64 + <usize>(L.LF_SP * LOOP_F64_STRIDE);
const SP_RAMP_AT: usize = LOOP_F64 + <usize>(L.LF_SP_RAMP * LOOP_F64_STRIDE);
const SP_RAMPED_AT: usize = LOOP_F64 + <usize>(L.LF_SP_RAMPED * LOOP_F64_STRIDE);
const TF_AT: usize = LOOP_F64 + <usize>(L.LF_TF * LOOP_F64_STRIDE);

// Point a's held value in lane 0 and point b's in lane 1: two loads straight into the lanes,
// no branch. Both indices must be in range; a caller with an optional point passes 0 for a
// missing one and masks that lane's result away.
@inline function heldPair(a: i32, b: i32): v128 {
  const held = pf(L.PF_HELD);
  return v128.load64_lane(held + (<usize>b << 3), v128.load64_zero(held + (<usize>a << 3)), 1);
}
// Both loops' i32 field in lanes 0 and 1 (lanes 2 and 3 zero), in one load.
@inline function i32Pair(field: i32, i: i32): v128 { return v128.load64_zero(li(field) + (<usize>i << 2)); }
// An i32x4 compare result's lanes 0 and 1 widened to the two 64-bit lanes.
@inline function widen(m: v128): v128 { return i32x4.shuffle(m, m, 0, 0, 1, 1); }
// A negative index as 0 (a missing optional point), without a branch.
@inline function orZero(p: i32): i32 { return p & ~(p >> 31); }
@inline function finiteV(x: v128): v128 { return f64x2.eq(f64x2.sub(x, x), f64x2.splat(0)); }

// Lane constants live in static memory: V8 rebuilds a v128.const with three or four
// instructions at every use, and one load replaces them.
const F64_LANES: usize = memory.data<f64>([-0.0, -0.0, NaN, NaN], 16);
@inline function signBits(): v128 { return v128.load(F64_LANES); }
@inline function nanLanes(): v128 { return v128.load(F64_LANES + 16); }

// The pair's status words, looked up rather than built on the lanes: the four limit masks
// leave the vector unit as two bits each (i64x2.bitmask), and their eight bits index a table
// holding both loops' status words side by side, ready for one 64-bit store. Lane arithmetic
// is what the pair path waits on; a table load is not.
const STATUS_TABLE: usize = memory.data(256 * 8, 8);
// key bits, two per mask (lane 0, lane 1): target <= hi, target >= lo, slew-limited, held
@inline function laneStatus(key: i32, lane: i32): u64 {
  let s: i32 = L.LS_AUTOMATIC;
  if (((key >> lane) & 1) == 0) s |= L.LS_SAT_HIGH;
  if (((key >> (2 + lane)) & 1) == 0) s |= L.LS_SAT_LOW;
  if (((key >> (4 + lane)) & 1) != 0) s |= L.LS_RATE_LIMITED;
  if (((key >> (6 + lane)) & 1) != 0) s |= L.LS_INTEGRATOR_HELD;
  return <u64><u32>s;
}
// runs once, when the module is instantiated
for (let k = 0; k < 256; k++) store<u64>(STATUS_TABLE + (<usize>k << 3), laneStatus(k, 0) | (laneStatus(k, 1) << 32));

/**
 * Loops i and i+1 (i even) through the automatic branch on SIMD lanes, if both are in steady
 * automatic control: automatic last tick and now (so no bumpless entry), setpoint finite, PV
 * and feed-forward points good, and the rack (if any) in service. Otherwise it returns false
 * having changed nothing, and the caller runs both through the scalar path.
 *
 * Inlined into the loop pass: without a call per pair, V8 keeps the per-tick lane constants
 * (dt, zero) out of the pair's body (measured: 6.4 -> 5.95 ns per loop-step at 1000 loops).
 */
@inline function stepAutomaticPair(i: i32, dt: f64, invDt: f64, inputsAllGood: bool): bool {
  const o: usize = <usize>i << 3; // byte offset of slot i in a loop f64 field
  if (li2(L.LI_MODE, i) != bothAre(L.MODE_AUTOMATIC) || li2(L.LI_BRANCH, i) != bothAre(L.BRANCH_AUTOMATIC)) return false;
  // a loop with a PV filter or a minimum-flow floor takes the scalar path (they are there alone),
  // and so does one whose feed-forward input was bad last tick (its return is bumpless there)
  if (v128.any_true(v128.or(v128.load(o, PV_FILTER_S_AT), v128.load(o, MIN_FLOW_AT)))) return false;
  if ((li2(L.LI_STATUS, i) & bothAre(L.LS_FF_BAD)) != 0) return false;
  const sp = v128.load(o, SP_AT);
  if (!i64x2.all_true(finiteV(sp))) return false;
  const pvA = gi(li(L.LI_PV_POINT), i);
  const pvB = gi(li(L.LI_PV_POINT), i + 1);
  const ffA = gi(li(L.LI_FF_POINT), i);
  const ffB = gi(li(L.LI_FF_POINT), i + 1);
  if (inputsAllGood) {
    // every configured point is good and every rack in service: only the bindings' range counts
    // (a PV index must name a point; a feed-forward index may also be negative, for none)
    const pc = pointCount;
    if ((<u32>pvA >= <u32>pc) | (<u32>pvB >= <u32>pc) | (ffA >= pc) | (ffB >= pc)) return false;
  } else {
    if (!goodPoint(pvA) || !goodPoint(pvB)) return false;
    if ((ffA >= 0 && !goodPoint(ffA)) || (ffB >= 0 && !goodPoint(ffB))) return false;
    if (!rackInService(gi(li(L.LI_RACK), i)) || !rackInService(gi(li(L.LI_RACK), i + 1))) return false;
  }

  const zero = f64x2.splat(0);
  const dtV = f64x2.splat(dt);
  const prev = v128.load(o, OUT_AT);
  const lo = v128.load(o, OUT_MIN_AT);
  const hi = v128.load(o, OUT_MAX_AT);
  const pv = heldPair(pvA, pvB);
  // a loop without a feed-forward point (index -1) reads point 0's value here, and ffOff (its
  // index's sign, spread over the lane) clears its term to 0
  const ff = heldPair(orZero(ffA), orZero(ffB));
  const ffOff = widen(i32x4.shr_s(i32Pair(L.LI_FF_POINT, i), 31));

  // setpoint ramp (never entering here, so it continues from the ramped value)
  const spRate = v128.load(o, SP_RAMP_AT);
  const sprLast = v128.load(o, SP_RAMPED_AT);
  const spStep = f64x2.mul(spRate, dtV);
  // The scalar if-chain (above the band: top; below it: bottom; else sp) is sp clamped into
  // [last - step, last + step] by pmax then pmin: with step >= 0 the band is never inverted,
  // and a NaN edge makes pmin/pmax return their first operand, as the scalar tests fall through.
  const ramped = f64x2.pmin(f64x2.pmax(sp, f64x2.sub(sprLast, spStep)), f64x2.add(sprLast, spStep));
  const spr = v128.bitselect(ramped, sp, f64x2.gt(spRate, zero));
  v128.store(o, spr, SP_RAMPED_AT);

  const reverse = widen(i32x4.eq(i32Pair(L.LI_ACTION, i), i32x4.splat(L.ACTION_REVERSE)));
  // Multiplying by the action's -1 flips the sign bit and nothing else; XOR does the same in
  // one cycle. (The two differ only on a NaN, and neither value here can be NaN: the PV is a
  // good sample, and the ramp above returns a non-NaN value for a finite setpoint.)
  const flip = v128.and(reverse, signBits());
  // |act * d| == |d| exactly, so the deadband test can run beside the sign flip, not after it
  const deviation = f64x2.sub(pv, spr);
  const inDeadband = f64x2.le(f64x2.abs(deviation), v128.load(o, DEADBAND_AT));
  const err = v128.andnot(v128.xor(deviation, flip), inDeadband);

  // derivative on measurement, only in the lanes with kd != 0 (the scalar path skips it otherwise)
  const kd = v128.load(o, KD_AT);
  const kdOn = f64x2.ne(kd, zero);
  let dTerm = zero;
  if (v128.any_true(kdOn)) {
    const alpha = f64x2.div(dtV, f64x2.add(v128.load(o, TF_AT), dtV));
    const dLast = v128.load(o, DFILT_AT);
    const slope = f64x2.mul(f64x2.sub(pv, v128.load(o, PV_PREV_AT)), f64x2.splat(invDt));
    let dFilt = f64x2.add(dLast, f64x2.mul(alpha, f64x2.sub(slope, dLast)));
    dFilt = v128.and(dFilt, finiteV(dFilt));
    v128.store(o, v128.bitselect(dFilt, dLast, kdOn), DFILT_AT);
    dTerm = v128.and(f64x2.mul(kd, v128.xor(dFilt, flip)), kdOn); // dFilt is finite here
  }

  const pTerm = f64x2.mul(v128.load(o, KP_AT), err);
  const ffTerm = v128.andnot(f64x2.mul(v128.load(o, KFF_AT), f64x2.sub(ff, v128.load(o, FF_BIAS_AT))), ffOff);

  // The slew limit as a band around the last output. A lane without one gets a NaN step, so
  // a NaN band: pmin/pmax below then return their first operand and every compare against the
  // band is false, exactly as the scalar path's skipped `if`.
  const rate = v128.load(o, OUT_RATE_AT);
  const slew = v128.and(f64x2.gt(rate, zero), finiteV(prev));
  const maxStep = v128.bitselect(f64x2.mul(rate, dtV), nanLanes(), slew);
  const up = f64x2.add(prev, maxStep);
  const down = f64x2.sub(prev, maxStep);
  // conditional integration against the envelope narrowed by that band
  // (pmin(a, b) is `b < a ? b : a` and pmax(a, b) is `a < b ? b : a`, exactly the scalar tests)
  const hiLim = f64x2.pmin(hi, up);
  const loLim = f64x2.pmax(lo, down);
  const rest = f64x2.add(pTerm, f64x2.add(dTerm, ffTerm));
  const iDelta = f64x2.mul(err, f64x2.mul(v128.load(o, KI_AT), dtV));
  const integralLast = v128.load(o, INTEGRAL_AT);
  const candidate = f64x2.add(integralLast, iDelta);
  const uTry = f64x2.add(rest, candidate);
  const held = v128.or(
    v128.and(f64x2.gt(uTry, hiLim), f64x2.gt(iDelta, zero)),
    v128.and(f64x2.lt(uTry, loLim), f64x2.lt(iDelta, zero)));
  // both outcomes are prepared before the test settles, so only one select waits on it
  const keptOld = v128.and(integralLast, finiteV(integralLast));
  const keptNew = v128.and(candidate, finiteV(candidate));
  const integral = v128.bitselect(keptOld, keptNew, held);
  v128.store(o, integral, INTEGRAL_AT);
  const target = v128.bitselect(f64x2.add(rest, keptOld), f64x2.add(rest, keptNew), held);

  // envelope clamp (NaN goes to lo, as clampf), then the slew band
  const aboveLo = f64x2.ge(target, lo);
  const clamped = f64x2.pmin(f64x2.pmax(lo, target), hi); // clampf, NaN to lo
  const out = f64x2.pmax(f64x2.pmin(clamped, up), down);

  const statusKey = i64x2.bitmask(f64x2.le(target, hi)) | (i64x2.bitmask(aboveLo) << 2)
    | (i64x2.bitmask(v128.or(f64x2.gt(clamped, up), f64x2.lt(clamped, down))) << 4)
    | (i64x2.bitmask(held) << 6);

  v128.store(o, pv, PV_PREV_AT);
  v128.store(o, pv, PV_AT);
  v128.store(o, err, ERROR_AT);
  v128.store(o, out, OUT_AT);
  v128.store(o, out, MANUAL_AT);
  v128.store(o, out, OVERRIDE_AT);
  // LI_BRANCH already holds BRANCH_AUTOMATIC for both (required above)
  store<u64>(li(L.LI_STATUS) + (<usize>i << 2), load<u64>(STATUS_TABLE + (<usize>statusKey << 3)));
  return true;
}
