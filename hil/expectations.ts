// What a scenario says must happen, judged against the signals a run sampled: pure functions of
// the series, so the same run always gives the same verdicts. Each verdict carries its measured
// figure in words ("isolated in 7.2 ms, limit 50 ms") and the window and limits its plot draws.

/** A condition on a signal's value. Every bound given must hold. */
export interface Condition {
  eq?: number;
  ne?: number;
  lt?: number;
  le?: number;
  gt?: number;
  ge?: number;
  /** inclusive */
  between?: [number, number];
}

export type ExpectationKind = "within" | "hold" | "never" | "eventually" | "count";

/** One expectation, its times in ms of scenario time. */
export interface Expectation {
  name: string;
  kind: ExpectationKind;
  /** the signals it reads (a pattern expanded) */
  signals: string[];
  is: Condition;
  /** within: the condition must first hold this long after `afterMs` at most */
  withinMs?: number;
  afterMs?: number;
  /** within: from the first sample at which this signal meets this condition, instead of a time */
  afterSignal?: { signal: string; is: Condition };
  /** hold, never, count: the window (default: the whole run) */
  fromMs?: number;
  toMs?: number;
  /** eventually: by this time */
  byMs?: number;
  /** count: bounds on how many times the condition became true (writes: how many writes met it) */
  min?: number;
  max?: number;
}

/** A signal sampled over a run: `t` in ms, one value per sample (NaN: no value yet). */
export interface Series {
  name: string;
  unit: string;
  t: Float64Array;
  v: Float64Array;
  /** discrete events (device writes) rather than a level: count counts them, not rising edges */
  events?: { tMs: number; value: number }[];
}

export interface Verdict {
  name: string;
  kind: ExpectationKind;
  passed: boolean;
  /** the measured figure against the limit, in words */
  figure: string;
  /** the measured number (ms, a value or a count), null when there is none */
  measured: number | null;
  /** why it was not judged (real time cannot see a device write): not a pass, not a failure */
  skipped?: string;
  /** what the plot draws: the window, and the condition's bounds */
  window: { fromMs: number; toMs: number };
  signals: string[];
}

export function holds(c: Condition, x: number): boolean {
  if (Number.isNaN(x)) return false;
  if (c.eq !== undefined && x !== c.eq) return false;
  if (c.ne !== undefined && x === c.ne) return false;
  if (c.lt !== undefined && !(x < c.lt)) return false;
  if (c.le !== undefined && !(x <= c.le)) return false;
  if (c.gt !== undefined && !(x > c.gt)) return false;
  if (c.ge !== undefined && !(x >= c.ge)) return false;
  if (c.between !== undefined && !(x >= c.between[0] && x <= c.between[1])) return false;
  return true;
}

/** The condition in words: "= 0", "≤ 1", "in [44, 46]". */
export function conditionWords(c: Condition): string {
  const w: string[] = [];
  if (c.eq !== undefined) w.push(`= ${c.eq}`);
  if (c.ne !== undefined) w.push(`≠ ${c.ne}`);
  if (c.lt !== undefined) w.push(`< ${c.lt}`);
  if (c.le !== undefined) w.push(`≤ ${c.le}`);
  if (c.gt !== undefined) w.push(`> ${c.gt}`);
  if (c.ge !== undefined) w.push(`≥ ${c.ge}`);
  if (c.between !== undefined) w.push(`in [${c.between[0]}, ${c.between[1]}]`);
  return w.join(" and ");
}

/** The bounds a plot draws as lines. */
export function conditionLines(c: Condition): number[] {
  return [c.eq, c.lt, c.le, c.gt, c.ge, ...(c.between ?? [])].filter((x): x is number => x !== undefined);
}

export const ms = (x: number): string => (x === 0 ? "0 s" : x < 1000 ? `${x.toFixed(x < 10 ? 1 : 0)} ms` : `${(x / 1000).toFixed(x < 10_000 ? 2 : 1)} s`);
const num = (x: number): string => (Number.isInteger(x) ? String(x) : Math.abs(x) >= 100 ? x.toFixed(1) : x.toPrecision(4));

/** Index of the first sample at or after t. */
function from(s: Series, t: number): number {
  let lo = 0;
  let hi = s.t.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (s.t[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first sample time in [a, b] at which the condition holds, or null. */
function firstHolding(s: Series, c: Condition, a: number, b: number): number | null {
  for (let k = from(s, a); k < s.t.length && s.t[k] <= b; k++) if (holds(c, s.v[k])) return s.t[k];
  return null;
}

/** The first sample time in [a, b] at which the condition does not hold, with its value, or null. */
function firstBreaking(s: Series, c: Condition, a: number, b: number): { t: number; v: number } | null {
  for (let k = from(s, a); k < s.t.length && s.t[k] <= b; k++) if (!holds(c, s.v[k])) return { t: s.t[k], v: s.v[k] };
  return null;
}

/** Judges one expectation against the run's series (`endMs`: the run's length). */
export function judge(e: Expectation, series: ReadonlyMap<string, Series>, endMs: number): Verdict {
  const all = e.signals.map((n) => {
    const s = series.get(n);
    if (s === undefined) throw new Error(`${e.name}: no series for ${n}`);
    return s;
  });
  const cond = conditionWords(e.is);
  const base = { name: e.name, kind: e.kind, signals: e.signals };
  switch (e.kind) {
    case "within": {
      const limit = e.withinMs ?? 0;
      let after = e.afterMs ?? 0;
      if (e.afterSignal !== undefined) {
        const ref = series.get(e.afterSignal.signal);
        const at = ref === undefined ? null : firstHolding(ref, e.afterSignal.is, 0, endMs);
        if (at === null) return { ...base, passed: false, figure: `its reference, ${e.afterSignal.signal} ${conditionWords(e.afterSignal.is)}, never happened`, measured: null, window: { fromMs: 0, toMs: endMs } };
        after = at;
      }
      // every signal must meet it in time: the figure is the slowest
      let worst = -Infinity;
      let late: string | null = null;
      for (const s of all) {
        const t = firstHolding(s, e.is, after, Math.min(endMs, after + limit));
        if (t === null) {
          late ??= s.name;
          const eventual = firstHolding(s, e.is, after, endMs);
          worst = Math.max(worst, eventual === null ? Infinity : eventual - after);
        } else worst = Math.max(worst, t - after);
      }
      const passed = late === null;
      const since = e.afterSignal === undefined ? "" : ` after ${e.afterSignal.signal} ${conditionWords(e.afterSignal.is)} (at ${ms(after)})`;
      const figure = passed
        ? `${cond} in ${ms(worst)}${since} (limit ${ms(limit)})`
        : Number.isFinite(worst)
          ? `${late} ${cond} only after ${ms(worst)} (limit ${ms(limit)})`
          : `${late} never ${cond} by the end of the run (limit ${ms(limit)})`;
      return { ...base, passed, figure, measured: Number.isFinite(worst) ? worst : null, window: { fromMs: after, toMs: Math.min(endMs, after + Math.max(limit, Number.isFinite(worst) ? worst : limit) * 1.5 + 1) } };
    }
    case "hold":
    case "never": {
      const a = e.fromMs ?? 0;
      const b = Math.min(e.toMs ?? endMs, endMs);
      let first: { t: number; v: number; name: string } | null = null;
      for (const s of all) {
        const hit = e.kind === "hold" ? firstBreaking(s, e.is, a, b) : ((): { t: number; v: number } | null => {
          const t = firstHolding(s, e.is, a, b);
          return t === null ? null : { t, v: s.v[from(s, t)] };
        })();
        if (hit !== null && (first === null || hit.t < first.t)) first = { ...hit, name: s.name };
      }
      const span = `from ${ms(a)} to ${ms(b)}`;
      const figure =
        first === null
          ? `${e.kind === "hold" ? "held" : "never"} ${cond} ${span}${e.kind === "hold" ? "" : ": as expected"}`
          : e.kind === "hold"
            ? `${first.name} was ${Number.isNaN(first.v) ? "without a value" : num(first.v)} at ${ms(first.t)}: not ${cond}`
            : `${first.name} was ${num(first.v)} at ${ms(first.t)}: ${cond}`;
      return { ...base, passed: first === null, figure, measured: first === null ? null : first.t, window: { fromMs: a, toMs: b } };
    }
    case "eventually": {
      const by = Math.min(e.byMs ?? endMs, endMs);
      let worst = -Infinity;
      let missing: string | null = null;
      for (const s of all) {
        const t = firstHolding(s, e.is, 0, by);
        if (t === null) missing ??= s.name;
        else worst = Math.max(worst, t);
      }
      const passed = missing === null;
      return { ...base, passed, figure: passed ? `${cond} at ${ms(worst)} (by ${ms(by)})` : `${missing} not ${cond} by ${ms(by)}`, measured: passed ? worst : null, window: { fromMs: 0, toMs: endMs } };
    }
    case "count": {
      const a = e.fromMs ?? 0;
      const b = Math.min(e.toMs ?? endMs, endMs);
      let n = 0;
      for (const s of all) {
        if (s.events !== undefined) {
          n += s.events.filter((x) => x.tMs >= a && x.tMs <= b && holds(e.is, x.value)).length;
          continue;
        }
        // a level: the times it came to hold
        let was = false;
        for (let k = from(s, a); k < s.t.length && s.t[k] <= b; k++) {
          const now = holds(e.is, s.v[k]);
          if (now && !was) n++;
          was = now;
        }
      }
      const lo = e.min ?? 0;
      const hi = e.max ?? Infinity;
      const passed = n >= lo && n <= hi;
      const bounds = hi === Infinity ? `at least ${lo}` : lo === hi ? `exactly ${lo}` : lo === 0 ? `at most ${hi}` : `${lo} to ${hi}`;
      return { ...base, passed, figure: `${n} time${n === 1 ? "" : "s"} ${cond} from ${ms(a)} to ${ms(b)} (expected ${bounds})`, measured: n, window: { fromMs: a, toMs: b } };
    }
  }
}
