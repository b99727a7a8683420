// The runner's reports: JUnit XML for CI, and one self-contained HTML page for a person, one
// section per scenario with each expectation's verdict, its measured figure against its limit,
// and a plot of the signals it read with its window and bounds drawn. Both are functions of the
// runs alone (no wall time, no host name), so the same seed gives the same report, byte for byte.
// The HTML is also well-formed XML (every element closed, every attribute quoted), so one XML
// parser checks both.
import { conditionLines, conditionWords, ms, type Series, type Verdict } from "./expectations.js";
import { runName, type ScenarioRun } from "./virtual-runner.js";
import { isFlightRecording } from "./scenario.js";

const esc = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&apos;");

const skippedCount = (r: ScenarioRun): number => r.verdicts.filter((v) => v.skipped !== undefined).length;
const result = (v: Verdict): string => (v.skipped !== undefined ? "skipped" : v.passed ? "pass" : "fail");

/** JUnit XML: a test suite per scenario, a test case per expectation, a failure with its figure (a skipped one: why). */
export function junitXml(runs: readonly ScenarioRun[]): string {
  const tests = runs.reduce((n, r) => n + r.verdicts.length, 0);
  const failures = runs.reduce((n, r) => n + r.verdicts.filter((v) => !v.passed).length, 0);
  const skipped = runs.reduce((n, r) => n + skippedCount(r), 0);
  const out = [`<?xml version="1.0" encoding="UTF-8"?>`, `<testsuites name="podwarden hil" tests="${tests}" failures="${failures}" errors="0" skipped="${skipped}">`];
  for (const r of runs) {
    const s = r.scenario;
    const f = r.verdicts.filter((v) => !v.passed).length;
    // time: the scenario time run (virtual time is deterministic; wall time is not)
    out.push(`  <testsuite name="${esc(runName(r))}" tests="${r.verdicts.length}" failures="${f}" errors="0" skipped="${skippedCount(r)}" time="${(r.durationMs / 1000).toFixed(3)}">`);
    out.push(`    <properties>`);
    out.push(`      <property name="file" value="${esc(s.file)}"/>`);
    out.push(`      <property name="mode" value="${r.mode}"/>`);
    out.push(`      <property name="seed" value="${r.mode === "real-time" ? "none: real time" : (r.campaign?.seed ?? s.seed ?? "the sim config's")}"/>`);
    if (r.campaign !== undefined) out.push(`      <property name="campaign" value="run ${r.campaign.run} of ${r.campaign.of}${r.campaign.ioPhaseMs === undefined ? "" : `, I/O phase ${r.campaign.ioPhaseMs} ms`}"/>`);
    if (r.rig !== undefined) out.push(`      <property name="rig" value="${esc(r.rig)}"/>`);
    out.push(`    </properties>`);
    for (const v of r.verdicts) {
      const head = `    <testcase classname="${esc(runName(r))}" name="${esc(v.name)}" time="0">`;
      if (v.skipped !== undefined) out.push(`${head}<skipped message="${esc(v.skipped)}"/></testcase>`);
      else if (v.passed) out.push(`${head}<system-out>${esc(v.figure)}</system-out></testcase>`);
      else out.push(`${head}<failure type="${v.kind}" message="${esc(v.figure)}">${esc(`${v.kind} on ${v.signals.join(", ")}: ${v.figure}`)}</failure></testcase>`);
    }
    out.push(`  </testsuite>`);
  }
  out.push(`</testsuites>`, "");
  return out.join("\n");
}

const W = 640;
const H = 170;
const PAD = { l: 56, r: 12, t: 10, b: 24 };
const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#d62728"];
const fmtNum = (x: number): string => (Math.abs(x) >= 1000 || Number.isInteger(x) ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2));

/** One expectation's plot: its signals over its window (with a margin), min and max per pixel column, its bounds dashed. */
export function plotSvg(v: Verdict, series: ReadonlyMap<string, Series>, endMs: number, bounds: number[]): string {
  const span = Math.max(1, v.window.toMs - v.window.fromMs);
  const a = Math.max(0, v.window.fromMs - span * 0.1);
  const b = Math.min(endMs, v.window.toMs + span * 0.1);
  const cols = W - PAD.l - PAD.r;
  const shown = v.signals.slice(0, COLORS.length);
  // per signal, per column: the min and max of its samples there (so a spike one tick long shows)
  const lines = shown.map((name) => {
    const s = series.get(name);
    const lo = new Float64Array(cols).fill(NaN);
    const hi = new Float64Array(cols).fill(NaN);
    if (s !== undefined) {
      for (let k = 0; k < s.t.length; k++) {
        const t = s.t[k];
        if (t < a || t > b) continue;
        const c = Math.min(cols - 1, Math.floor(((t - a) / Math.max(1, b - a)) * cols));
        const x = s.v[k];
        if (Number.isNaN(x)) continue;
        if (!(x >= lo[c])) lo[c] = x;
        if (!(x <= hi[c])) hi[c] = x;
      }
    }
    return { name, lo, hi };
  });
  const seen = [...bounds];
  for (const l of lines) for (let c = 0; c < cols; c++) if (!Number.isNaN(l.lo[c])) seen.push(l.lo[c], l.hi[c]);
  if (seen.length === 0) seen.push(0, 1);
  let ymin = Math.min(...seen);
  let ymax = Math.max(...seen);
  if (ymax - ymin < 1e-9) {
    ymin -= 0.5;
    ymax += 0.5;
  }
  const m = (ymax - ymin) * 0.08;
  ymin -= m;
  ymax += m;
  const px = (t: number): number => PAD.l + ((t - a) / Math.max(1, b - a)) * cols;
  const py = (y: number): number => PAD.t + (1 - (y - ymin) / (ymax - ymin)) * (H - PAD.t - PAD.b);
  const out: string[] = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(v.name)}">`];
  out.push(`<rect x="${PAD.l}" y="${PAD.t}" width="${cols}" height="${H - PAD.t - PAD.b}" fill="#fafafa" stroke="#ccc"/>`);
  // the window the expectation judged
  out.push(`<rect x="${px(v.window.fromMs).toFixed(1)}" y="${PAD.t}" width="${Math.max(1, px(v.window.toMs) - px(v.window.fromMs)).toFixed(1)}" height="${H - PAD.t - PAD.b}" fill="${v.passed ? "#e8f5e9" : "#ffebee"}"/>`);
  for (const y of bounds) out.push(`<line x1="${PAD.l}" x2="${W - PAD.r}" y1="${py(y).toFixed(1)}" y2="${py(y).toFixed(1)}" stroke="#d62728" stroke-dasharray="5,4"/><text x="${W - PAD.r - 2}" y="${(py(y) - 3).toFixed(1)}" font-size="10" text-anchor="end" fill="#d62728">${esc(fmtNum(y))}</text>`);
  lines.forEach((l, i) => {
    const pts: string[] = [];
    for (let c = 0; c < cols; c++) {
      if (Number.isNaN(l.lo[c])) continue;
      const x = (PAD.l + c + 0.5).toFixed(1);
      pts.push(`${x},${py(l.lo[c]).toFixed(1)}`);
      if (l.hi[c] !== l.lo[c]) pts.push(`${x},${py(l.hi[c]).toFixed(1)}`);
    }
    if (pts.length > 0) out.push(`<polyline fill="none" stroke="${COLORS[i]}" stroke-width="1.3" points="${pts.join(" ")}"/>`);
  });
  // axes' labels: the value range and the time range
  out.push(`<text x="${PAD.l - 4}" y="${PAD.t + 9}" font-size="10" text-anchor="end">${esc(fmtNum(ymax))}</text>`);
  out.push(`<text x="${PAD.l - 4}" y="${H - PAD.b}" font-size="10" text-anchor="end">${esc(fmtNum(ymin))}</text>`);
  out.push(`<text x="${PAD.l}" y="${H - 8}" font-size="10">${esc(ms(a))}</text>`);
  out.push(`<text x="${W - PAD.r}" y="${H - 8}" font-size="10" text-anchor="end">${esc(ms(b))}</text>`);
  out.push(`</svg>`);
  const legend = lines.map((l, i) => `<span class="key"><span class="swatch" style="background:${COLORS[i]}"></span>${esc(l.name)}</span>`).join(" ");
  const more = v.signals.length > shown.length ? ` <span class="key">and ${v.signals.length - shown.length} more</span>` : "";
  return `${out.join("")}<div class="legend">${legend}${more}</div>`;
}

/** The self-contained HTML report. */
export function htmlReport(runs: readonly ScenarioRun[], title = "podwarden HIL report"): string {
  const total = runs.reduce((n, r) => n + r.verdicts.length, 0);
  const failed = runs.reduce((n, r) => n + r.verdicts.filter((v) => !v.passed).length, 0);
  const skippedAll = runs.reduce((n, r) => n + skippedCount(r), 0);
  const out: string[] = [
    "<!DOCTYPE html>",
    `<html xmlns="http://www.w3.org/1999/xhtml" lang="en"><head><meta charset="utf-8"/><title>${esc(title)}</title>`,
    "<style>body{font:14px system-ui,sans-serif;margin:24px;max-width:980px;color:#222}table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}.pass{color:#1b5e20;font-weight:600}.fail{color:#b71c1c;font-weight:600}.legend{font-size:12px;margin:2px 0 14px}.key{margin-right:12px}.swatch{display:inline-block;width:10px;height:10px;margin-right:4px}h2{margin-top:32px;border-bottom:1px solid #ccc}.muted{color:#666}.skipped{color:#666;font-weight:600}</style>",
    "</head><body>",
    `<h1>${esc(title)}</h1>`,
    `<p class="${failed === 0 ? "pass" : "fail"}">${failed === 0 ? "PASS" : "FAIL"}: ${total - failed - skippedAll} of ${total} expectations met${skippedAll === 0 ? "" : ` (${skippedAll} skipped)`} in ${runs.length} scenario${runs.length === 1 ? "" : "s"}.</p>`,
    "<table><tr><th>scenario</th><th>mode</th><th>result</th><th>expectations</th></tr>",
    ...runs.map((r) => `<tr><td><a href="#${esc(runName(r))}">${esc(runName(r))}</a></td><td>${r.mode}</td><td class="${r.passed ? "pass" : "fail"}">${r.passed ? "PASS" : "FAIL"}</td><td>${r.verdicts.filter((v) => v.passed && v.skipped === undefined).length} of ${r.verdicts.length}${skippedCount(r) === 0 ? "" : `, ${skippedCount(r)} skipped`}</td></tr>`),
    "</table>",
  ];
  for (const r of runs) {
    const s = r.scenario;
    out.push(`<h2 id="${esc(runName(r))}">${esc(runName(r))} <span class="${r.passed ? "pass" : "fail"}">${r.passed ? "PASS" : "FAIL"}</span></h2>`);
    if (s.description !== "") out.push(`<p>${esc(s.description)}</p>`);
    const what =
      r.mode === "real-time"
        ? `real time on the rig ${r.rig ?? "?"}, ${ms(r.durationMs)}; ${(r.notes ?? []).join("; ") || "no steps"}`
        : s.replay === undefined
        ? `virtual time, ${ms(r.durationMs)}, seed ${r.campaign?.seed ?? s.seed ?? "of the sim config"}${r.campaign?.ioPhaseMs === undefined ? "" : `, I/O phase ${r.campaign.ioPhaseMs} ms`}; steps: ${s.steps.length === 0 ? "none" : s.steps.map((x) => `${x.atS} s ${JSON.stringify(x.action)}`).join("; ")}`
        : `the ${isFlightRecording(s.replay) ? "flight recording" : "telemetry log"} ${s.replay} replayed into the virtual pod, ${ms(r.durationMs)}`;
    out.push(`<p class="muted">${esc(`${s.file}: ${what}`)}</p>`);
    out.push("<table><tr><th>expectation</th><th>kind</th><th>result</th><th>measured</th></tr>");
    for (const v of r.verdicts) out.push(`<tr><td>${esc(v.name)}</td><td>${v.kind}</td><td class="${result(v)}">${result(v).toUpperCase()}</td><td>${esc(v.figure)}</td></tr>`);
    out.push("</table>");
    r.verdicts.forEach((v, i) => {
      const e = s.expect[i];
      if (v.skipped !== undefined) return;
      out.push(`<h3>${esc(v.name)}</h3><p class="muted">${esc(`${v.kind}: ${v.signals.length} signal${v.signals.length === 1 ? "" : "s"} ${conditionWords(e.is)}`)}</p>`);
      out.push(plotSvg(v, r.series, r.durationMs, conditionLines(e.is)));
    });
  }
  out.push("</body></html>", "");
  return out.join("\n");
}
