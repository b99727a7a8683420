// The reference model's relay autotune: index.ts tuneCheck(), tuneTarget() and endTune()
// (docs/engineering.md, Relay autotune).
import * as L from "./assembly/layout.js";
import { absf } from "./reference-math.js";
import type { BankViews } from "./views.js";

/** index.ts tuneCheck(): the checks that end a tuning, and the noise window's bookkeeping. */
export function tuneCheck(views: BankViews, racksLeaking: number, i: number, pv: number, now: number, act: number, lo: number, hi: number): number {
  const { loopF: lf, loopI: li } = views;
  if (racksLeaking !== 0) return L.TUNE_END_LEAK;
  if (!(now - lf.tuneT0[i] < lf.tuneTimeoutMs[i])) return L.TUNE_END_TIMEOUT;
  const devMax = lf.tuneDevMax[i];
  if (li.tune[i] === L.TUNE_RELAY) {
    return absf(pv - lf.tuneCenter[i]) <= devMax ? L.TUNE_END_NONE : L.TUNE_END_DEVIATION;
  }
  let pvLo = lf.tuneLo[i];
  let pvHi = lf.tuneHi[i];
  if (pv < pvLo) pvLo = pv;
  if (pv > pvHi) pvHi = pv;
  lf.tuneLo[i] = pvLo;
  lf.tuneHi[i] = pvHi;
  if (!(pvHi - pvLo <= devMax)) return L.TUNE_END_DEVIATION;
  const sum = lf.tuneSum[i] + pv;
  const n = lf.tuneN[i] + 1.0;
  lf.tuneSum[i] = sum;
  lf.tuneN[i] = n;
  if (now - lf.tuneT0[i] < lf.tuneNoiseMs[i]) return L.TUNE_END_NONE;
  const center = sum / n;
  let hyst = (pvHi - pvLo) * 0.75;
  const hystMin = lf.tuneHystMin[i];
  if (!(hyst >= hystMin)) hyst = hystMin;
  const bias = lf.tuneBias[i];
  const amp = lf.tuneAmp[i];
  let d = amp;
  if (bias - lo < d) d = bias - lo;
  if (hi - bias < d) d = hi - bias;
  if (!(d > 0) || !(d >= amp * 0.25)) return L.TUNE_END_ENVELOPE;
  lf.tuneCenter[i] = center;
  lf.tuneHyst[i] = hyst;
  lf.tuneD[i] = d;
  li.tuneRelay[i] = act * (pv - center) >= 0 ? 1 : -1;
  li.tuneSwitches[i] = 0;
  li.tune[i] = L.TUNE_RELAY;
  return L.TUNE_END_NONE;
}

/** index.ts tuneTarget(). */
export function tuneTarget(views: BankViews, i: number, pv: number, act: number): number {
  const { loopF: lf, loopI: li } = views;
  const bias = lf.tuneBias[i];
  if (li.tune[i] !== L.TUNE_RELAY) return bias;
  const e = act * (pv - lf.tuneCenter[i]);
  const hyst = lf.tuneHyst[i];
  const side = li.tuneRelay[i];
  let next = side;
  if (side > 0 && e < -hyst) next = -1;
  else if (side < 0 && e > hyst) next = 1;
  if (next !== side) {
    li.tuneRelay[i] = next;
    li.tuneSwitches[i] = li.tuneSwitches[i] + 1;
  }
  const d = lf.tuneD[i];
  return next > 0 ? bias + d : bias - d;
}

/** Ends loop i's tuning, saying why. */
export function endTune(views: BankViews, i: number, why: number): void {
  views.loopI.tune[i] = L.TUNE_OFF;
  views.loopI.tuneEnd[i] = why;
}
