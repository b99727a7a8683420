// Pod power budget: per-rack power caps from the pod budget and each rack's demand, with
// priorities and minimums. The caps never sum to more than the budget.

export interface RackPowerDemand {
  name: string;
  /** 0 is served first */
  priority: number;
  minKw: number;
  maxKw: number;
  demandKw: number;
}

export interface Allocation {
  caps: number[];
  /** the minimums alone exceed the budget: every cap was scaled below its minimum */
  minimumsScaled: boolean;
  /** some demand could not be met */
  constrained: boolean;
}

export function allocatePower(budgetKw: number, racks: readonly RackPowerDemand[]): Allocation {
  const budget = Math.max(0, Number.isFinite(budgetKw) ? budgetKw : 0);
  const mins = racks.map((r) => Math.max(0, Math.min(r.minKw, r.maxKw)));
  const minSum = mins.reduce((a, b) => a + b, 0);
  if (minSum > budget) {
    const k = minSum > 0 ? budget / minSum : 0;
    return { caps: mins.map((m) => m * k), minimumsScaled: true, constrained: true };
  }
  const caps = [...mins];
  let remaining = budget - minSum;
  const want = racks.map((r, i) => Math.max(0, Math.min(Number.isFinite(r.demandKw) ? r.demandKw : r.maxKw, r.maxKw) - caps[i]));
  let constrained = false;
  const levels = [...new Set(racks.map((r) => r.priority))].sort((a, b) => a - b);
  for (const p of levels) {
    const idx = racks.map((r, i) => (r.priority === p ? i : -1)).filter((i) => i >= 0);
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
  // Headroom: what no one asked for goes to racks below their maximum, by priority, so a
  // rack whose load rises is not pinned at its last demand until the next pass.
  for (const p of levels) {
    if (remaining <= 1e-9) break;
    const idx = racks.map((r, i) => (r.priority === p ? i : -1)).filter((i) => i >= 0);
    const room = idx.reduce((a, i) => a + (racks[i].maxKw - caps[i]), 0);
    const give = Math.min(room, remaining);
    for (const i of idx) caps[i] += room > 0 ? (give * (racks[i].maxKw - caps[i])) / room : 0;
    remaining -= give;
  }
  return { caps, minimumsScaled: false, constrained };
}
