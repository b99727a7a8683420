// The reference model's point pass: index.ts stepPoints(), each sample's raw quality bits,
// debounce, the quiet window and the leak inputs' wet state (docs/hotpath.md, Input points).
import * as L from "./assembly/layout.js";
import { absf, incSat, isFinite } from "./reference-math.js";
import type { BankViews } from "./views.js";

/** Point i is judged by the plant around it: it names a loop, and a move of its output to answer. */
const stuckByPlant = (views: BankViews, i: number): boolean => views.pointI.stuckLoop[i] >= 0 && views.pointF.stuckMove[i] > 0;

/** When point i's stuck timer started: its last change, or, judged by the plant, its loop's move since (+Infinity: none yet). */
function stuckClock(views: BankViews, i: number): number {
  return stuckByPlant(views, i) ? views.pointF.stuckMovedAt[i] : views.pointF.stuckSince[i];
}

export function stepPoints(views: BankViews, pointCount: number, rackCount: number, now: number): void {
  const { pointF: p, pointI: q, rackI: ri } = views;
  for (let i = 0; i < pointCount; i++) {
    const v = p.value[i];
    const ts = p.ts[i];
    if (ts === p.prevTs[i] && v === p.prevValue[i] && now < p.quietUntil[i]) continue;
    const kind = q.kind[i];
    let raw = 0;
    if (!isFinite(v)) {
      raw |= L.Q_NOT_FINITE;
    } else {
      if (v < p.min[i] || v > p.max[i]) raw |= L.Q_RANGE;
      if (kind === L.KIND_LEAK) {
        if (v === L.LEAK_CABLE_FAULT) raw |= L.Q_CABLE_FAULT;
        else if (v !== L.LEAK_DRY && v !== L.LEAK_WET) raw |= L.Q_RANGE;
      }
      const prevTs = p.prevTs[i];
      if (ts !== prevTs) {
        let rateFault = 0;
        const rateMax = p.rateMax[i];
        if (rateMax > 0 && ts > prevTs && isFinite(prevTs)) {
          const gapS = (ts - prevTs) * 0.001;
          if (absf(v - p.prevValue[i]) > rateMax * gapS) rateFault = 1;
        }
        q.rateFault[i] = rateFault;
        p.prevValue[i] = v;
        p.prevTs[i] = ts;
      }
      if (q.rateFault[i] !== 0) raw |= L.Q_RATE;
      const stuckMs = p.stuckMs[i];
      if (stuckMs > 0) {
        // judged by the plant around it where the point has a loop (layout.ts, PF_STUCK_MOVE)
        const byPlant = stuckByPlant(views, i);
        const move = p.stuckMove[i];
        const out = byPlant ? views.loopF.out[q.stuckLoop[i]] : 0;
        if (!(absf(v - p.stuckRef[i]) <= p.stuckEps[i])) {
          p.stuckRef[i] = v;
          p.stuckSince[i] = now;
          p.stuckOutRef[i] = out;
          p.stuckMovedAt[i] = Infinity;
        } else {
          if (byPlant && p.stuckMovedAt[i] === Infinity && absf(out - p.stuckOutRef[i]) >= move) p.stuckMovedAt[i] = now;
          if (now - stuckClock(views, i) >= stuckMs) raw |= L.Q_STUCK;
        }
      }
    }
    const staleMs = p.staleMs[i];
    if (staleMs > 0 && !(now - ts <= staleMs)) raw |= L.Q_STALE;

    q.raw[i] = raw;
    let settled = false;
    if (raw !== 0) {
      const n = incSat(q.faultCount[i]);
      q.faultCount[i] = n;
      q.clearCount[i] = 0;
      if (n >= q.debounceFault[i]) {
        q.quality[i] = raw;
        settled = true;
      }
    } else {
      p.held[i] = v;
      const n = incSat(q.clearCount[i]);
      q.clearCount[i] = n;
      q.faultCount[i] = 0;
      if (n >= q.debounceClear[i]) {
        q.quality[i] = 0;
        settled = true;
      }
    }

    let quiet = -Infinity;
    if (settled && kind !== L.KIND_LEAK) {
      quiet = Infinity;
      if (staleMs > 0 && (raw & L.Q_STALE) === 0) quiet = ts + staleMs;
      const stuckMs = p.stuckMs[i];
      if (stuckMs > 0 && (raw & (L.Q_STUCK | L.Q_NOT_FINITE)) === 0) {
        const due = stuckClock(views, i) + stuckMs;
        if (due < quiet) quiet = due;
      }
    }
    p.quietUntil[i] = quiet;

    if (kind === L.KIND_LEAK) {
      if (raw === 0 && v === L.LEAK_WET) {
        q.wetCount[i] = incSat(q.wetCount[i]);
        q.dryCount[i] = 0;
      } else {
        const dry = incSat(q.dryCount[i]);
        q.dryCount[i] = dry;
        if (dry >= q.debounceClear[i]) q.wetCount[i] = 0;
      }
      const wet = q.wetCount[i] >= q.debounceFault[i] ? 1 : 0;
      q.wet[i] = wet;
      const r = q.rack[i];
      if (r >= 0 && r < rackCount) {
        if (wet !== 0) ri.wet[r] = 1;
        if (q.quality[i] !== 0) ri.leakFault[r] = 1;
      }
    }
  }
}
