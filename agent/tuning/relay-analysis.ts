// What a relay autotune's data say about a loop: its ultimate gain and period (Åström–Hägglund),
// a first-order-plus-dead-time model where the data allow one, and PI gains by three rules with
// the margins the model expects of each. Pure and off the tick: the hot path runs the relay
// (hotpath-as/assembly/index.ts), the tuning session samples it and calls this at the end.
//
// Ku and Pu come from the first harmonics of the PV and the output over whole relay periods,
// not from the describing function's peak amplitude (4d / πa). On a lag-dominant loop, which
// every rack's return temperature is, the PV's wave is nearly a triangle, whose first harmonic
// is only 8/π² (0.81) of its peak: the peak overstates the PV's response, and 4d / πa came out
// 18 % low on the FOPDT rig (K 0.15 °C/%, τ 30 s, θ 3 s).
// The ratio of the two harmonics is the process's own frequency response at the relay's
// frequency, exactly, whatever the wave's shape.

export interface TuneSample {
  /** tick time, ms */
  tMs: number;
  pv: number;
  out: number;
  /** the hot path's relay switch count at this sample */
  switches: number;
}

export interface RelayRun {
  samples: readonly TuneSample[];
  /** direct: the output rises when the PV rises above the setpoint (a cooling valve); reverse: a pump on pressure */
  action: "direct" | "reverse";
  /** relay amplitude the hot path used, output units */
  d: number;
  /** hysteresis it used, PV units */
  hysteresis: number;
  /** whole relay periods to analyse (the latest ones; the first half-period is always left out) */
  cycles: number;
}

/** First order plus dead time: gain (PV units per output unit, signed), lag, dead time. */
export interface FopdtModel {
  gain: number;
  tauS: number;
  deadTimeS: number;
  /**
   * How well the model reproduces the process's measured response at the relay's frequency and
   * at three times it (the relay's square wave carries both): 1 − the larger relative error.
   */
  fit: number;
}

export type TuneRule = "simc" | "tyreus-luyben" | "ziegler-nichols";

export interface GainProposal {
  rule: TuneRule;
  kp: number;
  ki: number;
  kd: number;
  /** the loop's margins with these gains, from the FOPDT model; null without one */
  margins: { gain: number; phaseDeg: number } | null;
}

export interface RelayAnalysis {
  /** ultimate gain, output units per PV unit */
  ku: number;
  /** ultimate period, s */
  puS: number;
  /** the process's phase at the relay's frequency, degrees (-180 for a relay without hysteresis) */
  phaseDeg: number;
  /** the phase a relay with this hysteresis gives at the ultimate point, degrees: −180 plus asin(ε / amplitude); the phase warning is judged against it */
  expectedPhaseDeg: number;
  /** the PV's peak amplitude around its mean, PV units */
  amplitude: number;
  /** the describing function's estimate, 4d / π√(a² − ε²), for comparison */
  kuDescribingFunction: number;
  cycles: number;
  fopdt: FopdtModel | null;
  /** why there is no model, when there is none */
  fopdtWhyNot?: string;
  proposals: GainProposal[];
  recommended: TuneRule;
  /** what makes Ku and Pu doubtful, in words (none: nothing seen) */
  warnings: string[];
}

/**
 * A relay oscillates where the process's phase is −180° (less the hysteresis's asin(ε/a)).
 * Further from it than this, something else shaped the oscillation, and Ku and Pu describe
 * that, not the loop's ultimate point: on the simulator's pump loop the output's slew limit
 * (10 %/s against a 0.4 s period) held the output to a triangle, and the phase came out −68°.
 */
export const PHASE_TOLERANCE_DEG = 30;

/** The model is used only if it reproduces the PV at least this well. */
export const MIN_FOPDT_FIT = 0.8;

/** Switch k's time: the first sample that shows k switches. */
function switchTimes(s: readonly TuneSample[]): number[] {
  const t: number[] = [];
  for (const x of s) while (t.length < x.switches) t.push(x.tMs);
  return t;
}

/** ∫ f(t)·e^(−jωt) dt over the samples, by trapezoids: [re, im]. */
function harmonic(s: readonly TuneSample[], f: (x: TuneSample) => number, w: number): [number, number] {
  let re = 0;
  let im = 0;
  for (let k = 1; k < s.length; k++) {
    const a = s[k - 1];
    const b = s[k];
    const dt = (b.tMs - a.tMs) / 1000;
    const ta = a.tMs / 1000;
    const tb = b.tMs / 1000;
    re += (dt * (f(a) * Math.cos(w * ta) + f(b) * Math.cos(w * tb))) / 2;
    im -= (dt * (f(a) * Math.sin(w * ta) + f(b) * Math.sin(w * tb))) / 2;
  }
  return [re, im];
}

/** Ku, Pu and the rest from a finished relay run; throws when it holds too few whole periods. */
export function analyseRelay(run: RelayRun): RelayAnalysis {
  const s = run.samples;
  const sw = switchTimes(s);
  const need = 2 * run.cycles + 1;
  if (sw.length < need) throw new Error(`the relay switched ${sw.length} times; ${need} are needed for ${run.cycles} whole periods after the first half`);
  const tA = sw[sw.length - 1 - 2 * run.cycles];
  const tB = sw[sw.length - 1];
  const win = s.filter((x) => x.tMs >= tA && x.tMs <= tB);
  const puS = (tB - tA) / 1000 / run.cycles;
  const w = (2 * Math.PI) / puS;
  // the first harmonics of the PV and the output; their ratio is the process's response at w
  const [yr, yi] = harmonic(win, (x) => x.pv, w);
  const [ur, ui] = harmonic(win, (x) => x.out, w);
  const den = ur * ur + ui * ui;
  if (!(den > 0)) throw new Error("the output did not move over the relay periods");
  // G = Y / U, and the loop sees -G on a direct-acting loop (more output, less PV)
  const sign = run.action === "direct" ? -1 : 1;
  const gr = (sign * (yr * ur + yi * ui)) / den;
  const gi = (sign * (yi * ur - yr * ui)) / den;
  const mag = Math.hypot(gr, gi);
  if (!(mag > 0)) throw new Error("the PV did not follow the relay");
  let lo = Infinity;
  let hi = -Infinity;
  for (const x of win) {
    lo = Math.min(lo, x.pv);
    hi = Math.max(hi, x.pv);
  }
  const amplitude = (hi - lo) / 2;
  const eps = Math.min(run.hysteresis, amplitude * 0.99);
  const ku = 1 / mag;
  const fit = fitFopdt(s.filter((x) => x.tMs >= sw[0]), puS);
  let fopdt: FopdtModel | null = null;
  let whyNot = "why" in fit ? fit.why : undefined;
  if ("model" in fit) {
    // the model's response against the measured one, at w and 3w
    const m = fit.model;
    let worst = 0;
    for (const h of [1, 3]) {
      const [y3r, y3i] = h === 1 ? [yr, yi] : harmonic(win, (x) => x.pv, h * w);
      const [u3r, u3i] = h === 1 ? [ur, ui] : harmonic(win, (x) => x.out, h * w);
      const d3 = u3r * u3r + u3i * u3i;
      const mr = (y3r * u3r + y3i * u3i) / d3;
      const mi = (y3i * u3r - y3r * u3i) / d3;
      const wh = h * w;
      // K·e^(−jωθ) / (1 + jωτ)
      const pr = m.gain * Math.cos(wh * m.deadTimeS);
      const pim = -m.gain * Math.sin(wh * m.deadTimeS);
      const q = 1 + (wh * m.tauS) ** 2;
      const gr3 = (pr + pim * wh * m.tauS) / q;
      const gi3 = (pim - pr * wh * m.tauS) / q;
      worst = Math.max(worst, Math.hypot(gr3 - mr, gi3 - mi) / Math.hypot(mr, mi));
    }
    m.fit = 1 - worst;
    if (m.fit >= MIN_FOPDT_FIT) fopdt = m;
    else whyNot = `the best model matches the measured response to ${(100 * m.fit).toFixed(0)} % only (at least ${100 * MIN_FOPDT_FIT} % needed)`;
  }
  const proposals = proposeGains(ku, puS, fopdt);
  const phaseDeg = ((Math.atan2(gi, gr) * 180) / Math.PI + 360) % 360 - 360;
  const expected = -180 + (Math.asin(eps / amplitude) * 180) / Math.PI;
  const warnings: string[] = [];
  let reach = 0;
  const mid = win.reduce((a, x) => a + x.out, 0) / win.length;
  for (const x of win) reach = Math.max(reach, Math.abs(x.out - mid));
  if (reach < 0.9 * run.d) warnings.push(`the output reached ±${reach.toPrecision(3)} of the relay's ±${run.d.toPrecision(3)}: its slew limit (outRate) or the envelope shaped the relay`);
  if (Math.abs(phaseDeg - expected) > PHASE_TOLERANCE_DEG) warnings.push(`the process's phase at the relay's period is ${phaseDeg.toFixed(0)}°, not near ${expected.toFixed(0)}°: Ku and Pu describe this oscillation, not the loop's ultimate point; check the loop's outRate and tune again`);
  return {
    ku,
    puS,
    // in (−360, 0]: a process lags
    phaseDeg,
    expectedPhaseDeg: expected,
    amplitude,
    kuDescribingFunction: (4 * run.d) / (Math.PI * Math.sqrt(amplitude * amplitude - eps * eps)),
    cycles: run.cycles,
    fopdt,
    ...(fopdt === null && whyNot !== undefined ? { fopdtWhyNot: whyNot } : {}),
    proposals,
    recommended: fopdt !== null ? "simc" : "tyreus-luyben",
    warnings,
  };
}

/**
 * Least squares on y[k+1] = a·y[k] + b·u[k−n] + c over the samples put on an even grid, for
 * each dead time n up to half a relay period (the half period is the dead time plus the time
 * the lag takes to turn the PV round), keeping the n with the least error. The caller checks
 * the model against the measured frequency response (analyseRelay).
 *
 * On a lag-dominant loop a relay pins down the dead time and the ratio of gain to lag (the
 * slope the PV moves at), better than either alone: the fitted gain and lag trade off against
 * each other. SIMC's gains depend on that ratio there (Kc = τ / 2θ|K|), so they stay sound.
 */
export function fitFopdt(samples: readonly TuneSample[], puS: number): { model: FopdtModel } | { why: string } {
  if (samples.length < 20) return { why: "too few samples" };
  const t0 = samples[0].tMs;
  const span = samples[samples.length - 1].tMs - t0;
  // the grid: the samples' median spacing, so the grid neither invents nor drops data
  const gaps = samples.slice(1).map((x, k) => x.tMs - samples[k].tMs).sort((a, b) => a - b);
  const ts = Math.max(gaps[gaps.length >> 1], 1);
  const n = Math.floor(span / ts) + 1;
  const y = new Float64Array(n);
  const u = new Float64Array(n);
  let j = 0;
  for (let k = 0; k < n; k++) {
    const t = t0 + k * ts;
    while (j + 1 < samples.length && samples[j + 1].tMs <= t) j++;
    const a = samples[j];
    const b = samples[Math.min(j + 1, samples.length - 1)];
    const f = b.tMs > a.tMs ? (t - a.tMs) / (b.tMs - a.tMs) : 0;
    y[k] = a.pv + f * (b.pv - a.pv);
    u[k] = a.out; // the output holds between samples
  }
  const maxDelay = Math.min(Math.floor((puS * 500) / ts), n - 10);
  let best: { sse: number; a: number; b: number; c: number; delay: number } | null = null;
  for (let d = 0; d <= maxDelay; d++) {
    // normal equations of [y[k], u[k-d], 1] -> y[k+1]
    let s11 = 0, s12 = 0, s13 = 0, s22 = 0, s23 = 0, s33 = 0, r1 = 0, r2 = 0, r3 = 0;
    for (let k = d; k + 1 < n; k++) {
      const x1 = y[k];
      const x2 = u[k - d];
      const z = y[k + 1];
      s11 += x1 * x1; s12 += x1 * x2; s13 += x1; s22 += x2 * x2; s23 += x2; s33 += 1;
      r1 += x1 * z; r2 += x2 * z; r3 += z;
    }
    const sol = solve3([s11, s12, s13, s12, s22, s23, s13, s23, s33], [r1, r2, r3]);
    if (sol === null) continue;
    const [a, b, c] = sol;
    let sse = 0;
    for (let k = d; k + 1 < n; k++) {
      const e = y[k + 1] - (a * y[k] + b * u[k - d] + c);
      sse += e * e;
    }
    sse /= n - 1 - d;
    if (best === null || sse < best.sse) best = { sse, a, b, c, delay: d };
  }
  if (best === null) return { why: "the data do not determine a model" };
  const { a, b, delay } = best;
  if (!(a > 0 && a < 1)) return { why: `the fitted pole ${a.toFixed(4)} is not a stable lag` };
  return { model: { gain: b / (1 - a), tauS: -ts / 1000 / Math.log(a), deadTimeS: (delay * ts) / 1000, fit: 0 } };
}

/** x from A·x = r (A row-major 3×3), by Gaussian elimination with partial pivoting; null if singular. */
function solve3(A: number[], r: number[]): [number, number, number] | null {
  const m = [
    [A[0], A[1], A[2], r[0]],
    [A[3], A[4], A[5], r[1]],
    [A[6], A[7], A[8], r[2]],
  ];
  for (let c = 0; c < 3; c++) {
    let p = c;
    for (let k = c + 1; k < 3; k++) if (Math.abs(m[k][c]) > Math.abs(m[p][c])) p = k;
    if (!(Math.abs(m[p][c]) > 1e-300)) return null;
    [m[c], m[p]] = [m[p], m[c]];
    for (let k = c + 1; k < 3; k++) {
      const f = m[k][c] / m[c][c];
      for (let q = c; q < 4; q++) m[k][q] -= f * m[c][q];
    }
  }
  const x = [0, 0, 0];
  for (let c = 2; c >= 0; c--) {
    let v = m[c][3];
    for (let q = c + 1; q < 3; q++) v -= m[c][q] * x[q];
    x[c] = v / m[c][c];
  }
  return x.every(Number.isFinite) ? [x[0], x[1], x[2]] : null;
}

/**
 * PI gains by three rules. Tyreus–Luyben (Kc = Ku/3.2, Ti = 2.2·Pu) is the conservative one
 * from Ku and Pu; Ziegler–Nichols (0.45·Ku, Pu/1.2) the classic and aggressive one, shown for
 * comparison; SIMC (Skogestad, τc = θ: Kc = τ / (|K|·2θ), Ti = min(τ, 8θ)) needs the model and
 * is recommended when there is one. PI only: the loops run no derivative by default, and a
 * relay's data do not pin a derivative's filter down.
 */
export function proposeGains(ku: number, puS: number, model: FopdtModel | null): GainProposal[] {
  const out: GainProposal[] = [];
  const pi = (rule: TuneRule, kc: number, tiS: number): GainProposal => ({ rule, kp: kc, ki: kc / tiS, kd: 0, margins: model === null ? null : margins(kc, tiS, model) });
  if (model !== null) {
    const theta = Math.max(model.deadTimeS, 1e-3);
    out.push(pi("simc", model.tauS / (Math.abs(model.gain) * 2 * theta), Math.min(model.tauS, 8 * theta)));
  }
  out.push(pi("tyreus-luyben", ku / 3.2, 2.2 * puS));
  out.push(pi("ziegler-nichols", 0.45 * ku, puS / 1.2));
  return out;
}

/** Gain and phase margins of a PI loop around the FOPDT model (bisection on the loop's monotone phase and magnitude). */
export function margins(kc: number, tiS: number, m: FopdtModel): { gain: number; phaseDeg: number } {
  const K = Math.abs(m.gain);
  const mag = (w: number): number => (kc * K * Math.sqrt(1 + 1 / (w * tiS) ** 2)) / Math.sqrt(1 + (w * m.tauS) ** 2);
  const phase = (w: number): number => -Math.atan(1 / (w * tiS)) - w * m.deadTimeS - Math.atan(w * m.tauS);
  const bisect = (f: (w: number) => number): number | null => {
    // f falls with w; find where it crosses 0, on a log scale
    let lo = 1e-6;
    let hi = 1e4;
    if (!(f(lo) > 0) || !(f(hi) < 0)) return null;
    for (let k = 0; k < 200; k++) {
      const mid = Math.sqrt(lo * hi);
      if (f(mid) > 0) lo = mid;
      else hi = mid;
    }
    return Math.sqrt(lo * hi);
  };
  const w180 = bisect((w) => phase(w) + Math.PI);
  const wc = bisect((w) => Math.log(mag(w)));
  return { gain: w180 === null ? Infinity : 1 / mag(w180), phaseDeg: wc === null ? 180 : 180 + (phase(wc) * 180) / Math.PI };
}
