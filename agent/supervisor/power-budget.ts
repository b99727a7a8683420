// Pod power budget: per-rack power caps from the pod budget and each rack's demand, with
// priorities and minimums, bounded by what the coolant can carry away (issue 53, item 7): each
// rack by the heat its coolant takes at its maximum flow, the pod by the CDU's rated heat
// rejection. The caps never sum to more than the lower of the budget and that rating.

export interface RackPowerDemand {
  name: string;
  /** 0 is served first */
  priority: number;
  minKw: number;
  maxKw: number;
  demandKw: number;
  /** the heat this rack's coolant can carry away now, kW (coolantLimitKw); absent: no coolant bound */
  coolantKw?: number;
}

export interface Allocation {
  caps: number[];
  /** the minimums alone exceed the budget: every cap was scaled below its minimum */
  minimumsScaled: boolean;
  /** some demand could not be met within the budget (or the CDU's heat rejection) */
  constrained: boolean;
  /** per rack: its coolant limit is below its demand, so its cap is the coolant's, not its share's */
  coolantBound: boolean[];
  /** the CDU's heat rejection, not the electrical budget, is what constrained the caps */
  heatBound: boolean;
}

const finiteOr = (v: number, otherwise: number): number => (Number.isFinite(v) ? v : otherwise);

/**
 * Divides min(budgetKw, heatKw) among the racks. A rack's ceiling is the lower of its rating and
 * its coolant limit, and its minimum bows to that ceiling: a rack whose coolant can take 30 kW is
 * not held to a 40 kW minimum. What a coolant-bound rack cannot take stays in the pool for the
 * racks that have cooling headroom, first to those that asked, then as headroom.
 */
export function allocatePower(budgetKw: number, racks: readonly RackPowerDemand[], heatKw = Infinity): Allocation {
  const electrical = Math.max(0, finiteOr(budgetKw, 0));
  // NaN heat rejection is a config that says nothing: no bound; a negative one is none at all
  const heat = Number.isNaN(heatKw) ? Infinity : Math.max(0, heatKw);
  const budget = Math.min(electrical, heat);
  const ceil = racks.map((r) => Math.max(0, Math.min(r.maxKw, r.coolantKw === undefined || Number.isNaN(r.coolantKw) ? Infinity : r.coolantKw)));
  const asked = racks.map((r) => Math.max(0, Math.min(finiteOr(r.demandKw, r.maxKw), r.maxKw)));
  const coolantBound = racks.map((_, i) => ceil[i] < asked[i] - 1e-9);
  const mins = racks.map((r, i) => Math.max(0, Math.min(r.minKw, ceil[i])));
  const minSum = mins.reduce((a, b) => a + b, 0);
  if (minSum > budget) {
    const k = minSum > 0 ? budget / minSum : 0;
    return { caps: mins.map((m) => m * k), minimumsScaled: true, constrained: true, coolantBound, heatBound: heat < electrical };
  }
  const caps = [...mins];
  let remaining = budget - minSum;
  const want = asked.map((a, i) => Math.max(0, Math.min(a, ceil[i]) - caps[i]));
  let constrained = false;
  const levels = [...new Set(racks.map((r) => r.priority))].sort((a, b) => a - b);
  const at = (p: number): number[] => racks.map((r, i) => (r.priority === p ? i : -1)).filter((i) => i >= 0);
  for (const p of levels) {
    const idx = at(p);
    const total = idx.reduce((a, i) => a + want[i], 0);
    if (total <= remaining) {
      for (const i of idx) caps[i] += want[i];
      remaining -= total;
    } else {
      // not enough for this level: share what is left in proportion to what each asked for
      for (const i of idx) caps[i] += total > 0 ? (remaining * want[i]) / total : 0;
      remaining = 0;
      constrained = true;
    }
  }
  // Headroom: what no one asked for goes to racks below their ceiling, by priority, so a rack
  // whose load rises is not pinned at its last demand until the next pass.
  for (const p of levels) {
    if (remaining <= 1e-9) break;
    const idx = at(p);
    const room = idx.reduce((a, i) => a + (ceil[i] - caps[i]), 0);
    const give = Math.min(room, remaining);
    for (const i of idx) caps[i] += room > 0 ? (give * (ceil[i] - caps[i])) / room : 0;
    remaining -= give;
  }
  return { caps, minimumsScaled: false, constrained, coolantBound, heatBound: constrained && heat < electrical };
}
