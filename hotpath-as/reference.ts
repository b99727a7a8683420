// TypeScript reference model of the hot path.
//
// It is the executable specification of assembly/index.ts: the same algorithm, the same
// expression order, the same NaN handling, so that both produce bit-identical outputs and
// status (test/hotpath-equivalence.test.ts drives them side by side). Change both together.
import * as L from "./assembly/layout.js";
import { absf, clampf, isFinite, safeOutput } from "./reference-math.js";
import { stepPoints } from "./reference-points.js";
import { endTune, tuneCheck, tuneTarget } from "./reference-tune.js";
import { createViews, REGION_BYTES, type BankViews, type HotPath } from "./views.js";

/** A closed limit switch: none configured, no good sample, a good one off the limit, at it (since isolation began). */
type ClosedLimit = "none" | "unknown" | "off-limit" | "closed" | "closed-since";

export class ReferenceHotPath implements HotPath {
  readonly views: BankViews;
  private loopCount = 0;
  private pointCount = 0;
  private rackCount = 0;
  // racks with a leak input wet or the isolation latched, counted by each rack pass (see index.ts)
  private racksLeaking = 0;

  constructor() {
    let total = 0;
    const base: number[] = [];
    for (const bytes of REGION_BYTES) {
      base.push(total);
      total += bytes;
    }
    this.views = createViews(new ArrayBuffer(total), base);
  }

  configure(loops: number, points: number, racks: number): number {
    if (loops < 0 || loops > L.MAX_LOOPS || points < 0 || points > L.MAX_POINTS || racks < 0 || racks > L.MAX_RACKS) {
      return L.STEP_BAD_COUNTS;
    }
    this.loopCount = loops;
    this.pointCount = points;
    this.rackCount = racks;
    return L.STEP_OK;
  }

  resetState(): void {
    const { pointF: p, pointI: q, rackF: rf, rackI: ri, loopF: lf, loopI: li } = this.views;
    p.value.fill(NaN);
    p.ts.fill(-Infinity);
    p.held.fill(NaN);
    p.prevValue.fill(NaN);
    p.prevTs.fill(-Infinity);
    p.stuckRef.fill(NaN);
    p.stuckSince.fill(0);
    p.stuckOutRef.fill(NaN);
    p.stuckMovedAt.fill(Infinity);
    p.quietUntil.fill(-Infinity);
    q.raw.fill(L.Q_NEVER);
    q.quality.fill(L.Q_NEVER);
    for (const a of [q.faultCount, q.clearCount, q.rateFault, q.wetCount, q.dryCount, q.wet]) a.fill(0);
    rf.isolatedSince.fill(0);
    rf.flow.fill(NaN);
    ri.reset.fill(0);
    ri.state.fill(L.RACK_NORMAL);
    ri.status.fill(0);
    ri.supplyOpen.fill(1);
    ri.returnOpen.fill(1);
    ri.resetResult.fill(L.RESET_NONE);
    ri.wet.fill(0);
    ri.leakFault.fill(0);
    for (let i = 0; i < L.MAX_LOOPS; i++) {
      const out = clampf(lf.safeFixedSensor[i], lf.outMin[i], lf.outMax[i]);
      lf.out[i] = out;
      lf.manual[i] = out;
      lf.override[i] = out;
      lf.spRamped[i] = lf.sp[i];
    }
    lf.integral.fill(0);
    lf.dFilt.fill(0);
    lf.pvPrev.fill(NaN);
    lf.pv.fill(NaN);
    lf.error.fill(0);
    lf.resume.fill(NaN);
    lf.pvFilt.fill(NaN);
    lf.flowLo.fill(NaN);
    li.status.fill(0);
    li.branch.fill(L.BRANCH_NONE);
    li.tune.fill(L.TUNE_OFF);
    li.tuneRelay.fill(0);
    li.tuneSwitches.fill(0);
    li.tuneEnd.fill(L.TUNE_END_NONE);
  }

  step(nowMs: number, dtS: number): number {
    if (!(dtS > 0) || !isFinite(dtS) || !isFinite(nowMs)) return L.STEP_BAD_DT;
    const ri = this.views.rackI;
    for (let r = 0; r < this.rackCount; r++) {
      ri.wet[r] = 0;
      ri.leakFault[r] = 0;
    }
    stepPoints(this.views, this.pointCount, this.rackCount, nowMs);
    this.stepRacks(nowMs);
    this.stepLoops(nowMs, dtS, 1.0 / dtS);
    return L.STEP_OK;
  }

  private stepRacks(now: number): void {
    const { pointF: p, pointI: q, rackF: rf, rackI: ri } = this.views;
    this.racksLeaking = 0;
    for (let r = 0; r < this.rackCount; r++) {
      const wet = ri.wet[r];
      const leakFault = ri.leakFault[r];
      const tripOnFault = leakFault !== 0 && ri.sensorFaultAction[r] === L.LEAK_FAULT_ISOLATE;
      let state = ri.state[r];

      const fp = ri.flowPoint[r];
      let flow = NaN;
      let flowGood = false;
      let flowFresh = false;
      if (fp >= 0 && fp < this.pointCount) {
        flow = p.held[fp];
        flowGood = q.quality[fp] === 0 && q.raw[fp] === 0;
        flowFresh = flowGood && p.ts[fp] >= rf.isolatedSince[r];
      }
      rf.flow[r] = flow;

      if (ri.reset[r] !== 0) {
        if (wet !== 0 || tripOnFault) {
          ri.resetResult[r] = L.RESET_REFUSED_WET;
        } else {
          state = L.RACK_NORMAL;
          ri.resetResult[r] = L.RESET_ACCEPTED;
        }
        ri.reset[r] = 0;
      }

      if (state === L.RACK_NORMAL && (wet !== 0 || tripOnFault)) {
        state = L.RACK_ISOLATING;
        rf.isolatedSince[r] = now;
        flowFresh = false;
      }
      const since = rf.isolatedSince[r];
      const supplyLimit = this.closedLimit(ri.supplyClosedPoint[r], since);
      const returnLimit = this.closedLimit(ri.returnClosedPoint[r], since);
      const closedNow = (l: ClosedLimit): boolean => l === "none" || l === "closed" || l === "closed-since";
      const closedSince = (l: ClosedLimit): boolean => l === "none" || l === "closed-since";
      const limitsClosed = closedNow(supplyLimit) && closedNow(returnLimit);
      const limitsFresh = closedSince(supplyLimit) && closedSince(returnLimit);
      const limitLeft = supplyLimit === "off-limit" || returnLimit === "off-limit";
      const threshold = rf.isolatedFlowMax[r];
      if (state === L.RACK_ISOLATING) {
        if (flowFresh && flow < threshold && limitsFresh) {
          state = L.RACK_ISOLATED;
        } else if (!(now - since < rf.isolationDeadlineMs[r])) {
          state = L.RACK_ESCALATED;
        }
      } else if (state === L.RACK_ISOLATED) {
        if ((flowGood && !(flow < threshold)) || limitLeft) state = L.RACK_ESCALATED;
      }
      ri.state[r] = state;
      if (wet !== 0 || state !== L.RACK_NORMAL) this.racksLeaking++;

      const manual = ri.manualIsolate[r] !== 0;
      const closed = state !== L.RACK_NORMAL || manual;
      ri.supplyOpen[r] = closed ? 0 : 1;
      ri.returnOpen[r] = closed ? 0 : 1;

      let status = 0;
      if (wet !== 0) status |= L.RS_LEAK_WET;
      if (state !== L.RACK_NORMAL) status |= L.RS_LATCHED;
      if (state === L.RACK_ISOLATED) status |= L.RS_PROVEN;
      if (state === L.RACK_ESCALATED) status |= L.RS_ESCALATE;
      if (leakFault !== 0) status |= L.RS_LEAK_SENSOR_FAULT;
      if (!flowGood) status |= L.RS_FLOW_BAD;
      if (manual) status |= L.RS_MANUAL_ISOLATE;
      if (closed) status |= L.RS_VALVES_CLOSED;
      if (limitsClosed) status |= L.RS_LIMITS_CLOSED;
      ri.status[r] = status;
    }
  }

  /** index.ts closedLimit(): what a rack's closed-limit point says; p < 0 is none configured. */
  private closedLimit(p: number, since: number): ClosedLimit {
    const { pointF: pf, pointI: q } = this.views;
    if (p < 0 || p >= this.pointCount) return "none";
    if (q.quality[p] !== 0 || q.raw[p] !== 0) return "unknown";
    if (!(pf.held[p] >= 0.5)) return "off-limit";
    return pf.ts[p] >= since ? "closed-since" : "closed";
  }

  private stepLoops(now: number, dt: number, invDt: number): void {
    const { loopF: lf, loopI: li, pointF: p, pointI: q, rackI: ri } = this.views;
    for (let i = 0; i < this.loopCount; i++) {
      const prev = lf.out[i];
      const lo = lf.outMin[i];
      const hi = lf.outMax[i];
      const lastBranch = li.branch[i];
      const lastStatus = li.status[i];
      const mode = li.mode[i];

      const pvIdx = li.pvPoint[i];
      let pvBad = true;
      let pv = NaN;
      if (pvIdx >= 0 && pvIdx < this.pointCount) {
        pv = p.held[pvIdx];
        pvBad = q.quality[pvIdx] !== 0;
      }
      const pvTau = lf.pvFilterS[i];
      if (pvTau > 0) {
        if (pvBad) {
          lf.pvFilt[i] = NaN;
        } else {
          const filt = lf.pvFilt[i];
          if (isFinite(filt)) pv = filt + (dt / (pvTau + dt)) * (pv - filt);
          lf.pvFilt[i] = pv;
        }
      }
      const ffIdx = li.ffPoint[i];
      let ffBad = false;
      let ff = 0;
      if (ffIdx >= 0) {
        if (ffIdx < this.pointCount) {
          ff = p.held[ffIdx];
          ffBad = q.quality[ffIdx] !== 0;
        } else {
          ffBad = true;
        }
      }
      const sp = lf.sp[i];
      const rack = li.rack[i];
      const act = li.action[i] === L.ACTION_REVERSE ? -1.0 : 1.0;
      let tuning = li.tune[i] !== L.TUNE_OFF;

      let status = 0;
      let branch: number;
      let out: number;
      let err = 0;

      let isolated = false;
      if (rack >= 0 && rack < this.rackCount) {
        const latched = ri.state[rack] !== L.RACK_NORMAL;
        const manualIsolate = ri.manualIsolate[rack] !== 0;
        isolated = latched || manualIsolate;
        if (!latched && manualIsolate) status |= L.LS_MANUAL_ISOLATE;
      }

      if (isolated) {
        branch = L.BRANCH_LEAK;
        status |= L.LS_INTERLOCK_LEAK;
        if (lastBranch !== L.BRANCH_LEAK) lf.resume[i] = prev;
        out = safeOutput(li.safeLeak[i], lf.safeFixedLeak[i], prev, lo, hi);
        if (tuning) {
          endTune(this.views, i, L.TUNE_END_INTERLOCK);
          tuning = false;
        }
      } else {
        let reasons = 0;
        if (pvBad) reasons |= L.LS_PV_BAD;
        if (ffBad) status |= L.LS_FF_BAD;
        if (!isFinite(sp)) reasons |= L.LS_SP_INVALID;
        if (mode === L.MODE_MANUAL) {
          if (!isFinite(lf.manual[i])) reasons |= L.LS_CMD_INVALID;
        } else if (mode === L.MODE_OVERRIDE) {
          if (!isFinite(lf.override[i])) reasons |= L.LS_CMD_INVALID;
        } else if (mode !== L.MODE_AUTOMATIC && mode !== L.MODE_DISABLED) {
          reasons |= L.LS_CMD_INVALID;
        }

        if (reasons !== 0) {
          if (tuning) {
            endTune(this.views, i, L.TUNE_END_BAD_INPUT);
            tuning = false;
          }
        } else if (tuning) {
          const why = tuneCheck(this.views, this.racksLeaking, i, pv, now, act, lo, hi);
          if (why !== L.TUNE_END_NONE) {
            endTune(this.views, i, why);
            tuning = false;
          }
        }

        if (reasons !== 0) {
          branch = L.BRANCH_FAILSAFE;
          status |= L.LS_INTERLOCK_FAILSAFE | reasons;
          out = safeOutput(li.safeSensor[i], lf.safeFixedSensor[i], prev, lo, hi);
        } else if (mode === L.MODE_DISABLED && !tuning) {
          branch = L.BRANCH_DISABLED;
          status |= L.LS_DISABLED;
          out = clampf(prev, lo, hi);
        } else {
          let target: number;
          let envLo = lo;
          if (tuning) {
            branch = L.BRANCH_TUNE;
            status |= L.LS_TUNING;
            target = tuneTarget(this.views, i, pv, act);
          } else if (mode === L.MODE_MANUAL) {
            branch = L.BRANCH_MANUAL;
            status |= L.LS_MANUAL;
            target = lf.manual[i];
          } else if (mode === L.MODE_OVERRIDE) {
            branch = L.BRANCH_OVERRIDE;
            status |= L.LS_OVERRIDE;
            target = lf.override[i];
          } else {
            branch = L.BRANCH_AUTOMATIC;
            status |= L.LS_AUTOMATIC;
            const entering = lastBranch !== L.BRANCH_AUTOMATIC;

            const spRate = lf.spRamp[i];
            let spr: number;
            if (spRate > 0) {
              spr = entering ? pv : lf.spRamped[i];
              const spStep = spRate * dt;
              if (sp > spr + spStep) spr = spr + spStep;
              else if (sp < spr - spStep) spr = spr - spStep;
              else spr = sp;
            } else {
              spr = sp;
            }
            lf.spRamped[i] = spr;

            err = act * (pv - spr);
            if (absf(err) <= lf.deadband[i]) err = 0;

            const kd = lf.kd[i];
            let dTerm = 0;
            if (kd !== 0) {
              const pvPrev = entering ? pv : lf.pvPrev[i];
              const alpha = dt / (lf.tf[i] + dt);
              let dFilt = entering ? 0.0 : lf.dFilt[i];
              dFilt = dFilt + alpha * ((pv - pvPrev) * invDt - dFilt);
              if (!isFinite(dFilt)) dFilt = 0;
              lf.dFilt[i] = dFilt;
              dTerm = kd * (act * dFilt);
            }

            const pTerm = lf.kp[i] * err;
            const ffTerm = ffIdx >= 0 && !ffBad ? lf.kff[i] * (ff - lf.ffBias[i]) : 0.0;
            let integral = lf.integral[i];
            // the terms other than the integral, summed once, P last: the error's chain to the
            // output then has one add before the integral's (the D and FF sum does not wait on it)
            const rest = pTerm + (dTerm + ffTerm);
            // bumpless: on entry choose the integral that reproduces the current output, or, back
            // from an isolation, the output the loop had before it (the slew limit ramps the valve)
            if (entering) {
              const resume = lf.resume[i];
              const base = lastBranch === L.BRANCH_LEAK && isFinite(resume) ? resume : prev;
              integral = isFinite(base) ? base - rest : 0.0;
            } else if (((lastStatus & L.LS_FF_BAD) !== 0) !== ffBad) {
              integral = isFinite(prev) ? prev - rest : 0.0;
            }

            const minFlow = lf.minFlow[i];
            if (minFlow > 0) {
              const fp = rack >= 0 && rack < this.rackCount ? ri.flowPoint[rack] : -1;
              if (fp >= 0 && fp < this.pointCount && q.quality[fp] === 0) {
                let floor = lf.flowLo[i];
                if (!isFinite(floor)) floor = lo;
                floor = clampf(floor + lf.flowGain[i] * ((minFlow - p.held[fp]) * dt), lo, hi);
                lf.flowLo[i] = floor;
                envLo = floor;
                if (floor > lo) status |= L.LS_FLOW_FLOOR;
              } else {
                lf.flowLo[i] = NaN;
                status |= L.LS_FLOW_FLOOR_LOST;
              }
            }

            const rate = lf.outRate[i];
            let hiLim = hi;
            let loLim = envLo;
            if (rate > 0 && isFinite(prev)) {
              const maxStep = rate * dt;
              if (prev + maxStep < hiLim) hiLim = prev + maxStep;
              if (prev - maxStep > loLim) loLim = prev - maxStep;
            }
            const iDelta = err * (lf.ki[i] * dt);
            const candidate = integral + iDelta;
            const uTry = rest + candidate;
            if ((uTry > hiLim && iDelta > 0) || (uTry < loLim && iDelta < 0)) {
              status |= L.LS_INTEGRATOR_HELD;
            } else {
              integral = candidate;
            }
            if (!isFinite(integral)) integral = 0;
            lf.integral[i] = integral;
            target = rest + integral;
          }

          out = clampf(target, envLo, hi);
          if (!(target <= hi)) status |= L.LS_SAT_HIGH;
          if (!(target >= envLo)) status |= L.LS_SAT_LOW;
          const rate = lf.outRate[i];
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

      if (branch !== L.BRANCH_AUTOMATIC) lf.flowLo[i] = NaN;
      if (!pvBad) lf.pvPrev[i] = pv;
      lf.pv[i] = pv;
      lf.error[i] = err;
      lf.out[i] = out;
      // held while their mode is selected, even under an interlock (see index.ts)
      if (mode !== L.MODE_MANUAL || tuning) lf.manual[i] = out;
      if (mode !== L.MODE_OVERRIDE || tuning) lf.override[i] = out;
      li.branch[i] = branch;
      li.status[i] = status;
    }
  }
}
