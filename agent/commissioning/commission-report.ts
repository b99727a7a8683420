// `podwarden commission`: a walk over every field point and every output the pod drives, as the
// daemon sees them now, kept as a signed-off record of the pod's field wiring: for a point, its
// value, quality, age and its device's health; for an output, what its device read back of the
// last command and what its feedback (a valve's position, the limit switches, the rack's power,
// the pump's running input) said at the same moment. Pure: the admin socket hands it the I/O list
// and writes what it returns (JSON, and HTML to print and sign).
import { createHash } from "node:crypto";
import type { PodConfig } from "../../pod/config.js";
import { cduPumps } from "../../pod/pumps.js";
import type { IoRow } from "../ops/io-list.js";

/** One point, as seen. */
export interface PointCheck extends IoRow {
  ok: boolean;
  /** why not, in words */
  why: string;
}

/** One output: its device's read-back of the last command, and its feedback. */
export interface OutputCheck {
  id: string;
  what: string;
  /** the device's read-back of the command (null: never read back, or no read-back configured) */
  readBack: { value: number | null; quality: string; ageMs: number | null } | null;
  feedback: { id: string; value: number | null; quality: string }[];
  ok: boolean;
  why: string;
}

export interface CommissionReport {
  format: "podwarden-commission-1";
  site: string;
  pod: string;
  version: string;
  configHash: string;
  /** wall time, ISO 8601 */
  at: string;
  /** who signed it off */
  by: string;
  points: PointCheck[];
  outputs: OutputCheck[];
  summary: { points: number; pointsOk: number; outputs: number; outputsOk: number };
  /** SHA-256 of the report without this field: the printed copy and the file can be matched */
  sha256: string;
}

type Source = Pick<PodConfig, "racks" | "cdu">;

/** Every output the pod drives, with what it is and the points that show it took effect. */
export function outputsWithFeedback(c: Source): { id: string; what: string; feedback: string[] }[] {
  const out: { id: string; what: string; feedback: string[] }[] = [];
  const add = (id: string | undefined, what: string, feedback: (string | undefined)[]): void => {
    if (id !== undefined) out.push({ id, what, feedback: feedback.filter((f): f is string => f !== undefined) });
  };
  for (const r of c.racks) {
    const o = r.outputs;
    const p = r.points;
    add(o.valve, `${r.name} control valve`, [p.valvePositionPct]);
    add(o.supplyIsolation, `${r.name} supply isolation valve`, [p.supplyIsolationOpenLimit, p.supplyIsolationClosedLimit]);
    add(o.returnIsolation, `${r.name} return isolation valve`, [p.returnIsolationOpenLimit, p.returnIsolationClosedLimit]);
    add(o.powerCap, `${r.name} power cap`, [p.powerKw]);
    add(o.powerOff, `${r.name} power off`, [p.powerKw]);
    add(o.failValve, `${r.name} valve's lease fail position`, []);
    add(o.failIsolationOpen, `${r.name} isolation valves' lease fail position`, []);
  }
  for (const pump of cduPumps(c.cdu)) {
    add(pump.speed, `pump ${pump.name} speed`, [pump.running, c.cdu.points.dpKpa]);
    add(pump.enable, `pump ${pump.name} run enable`, [pump.running]);
    add(pump.failSpeed, `pump ${pump.name} lease fail speed`, []);
  }
  const supply = c.cdu.supplyControl;
  if (supply !== undefined) {
    add(supply.valve, "CDU supply (primary) valve", [c.cdu.points.supplyTempC]);
    add(supply.failValve, "CDU supply valve's lease fail position", []);
  }
  return out;
}

/** Points older than this are not taken as seen now (the slowest poll group is seconds). */
const STALE_MS = 30_000;

function pointCheck(r: IoRow): PointCheck {
  const why = [r.quality !== "good" ? `quality ${r.quality}` : "", r.ageMs === null ? "never read" : r.ageMs > STALE_MS ? `last read ${Math.round(r.ageMs / 1000)} s ago` : "", r.deviceOk === false ? `device: ${r.deviceWhy}` : ""].filter((x) => x !== "");
  return { ...r, ok: why.length === 0, why: why.join("; ") };
}

/** The report of the I/O list `rows` (agent/ops/io-list.ts) against the config's outputs. */
export function commissionReport(c: Source, rows: readonly IoRow[], head: { site: string; pod: string; version: string; configHash: string; at: string; by: string }): CommissionReport {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const outputIds = new Set(outputsWithFeedback(c).map((o) => o.id));
  // a point that is an output's read-back goes with its output, not among the inputs
  const points = rows.filter((r) => !outputIds.has(r.id)).map(pointCheck);
  const outputs = outputsWithFeedback(c).map((o): OutputCheck => {
    const rb = byId.get(o.id);
    const readBack = rb === undefined ? null : { value: rb.value, quality: rb.quality, ageMs: rb.ageMs };
    const feedback = o.feedback.map((id) => {
      const f = byId.get(id);
      return { id, value: f?.value ?? null, quality: f?.quality ?? "not read" };
    });
    // a read-back is of the last write: its device's health now says whether it still holds
    const why = [
      readBack === null ? "no read-back of the command (the output has no verify, or was never written)" : readBack.quality !== "good" ? `read-back ${readBack.quality}` : "",
      rb?.deviceOk === false ? `device: ${rb.deviceWhy}` : "",
      ...feedback.filter((f) => f.quality !== "good").map((f) => `feedback ${f.id} ${f.quality}`),
    ].filter((x) => x !== "");
    return { id: o.id, what: o.what, readBack, feedback, ok: why.length === 0, why: why.join("; ") };
  });
  const body = {
    format: "podwarden-commission-1" as const,
    ...head,
    points,
    outputs,
    summary: { points: points.length, pointsOk: points.filter((p) => p.ok).length, outputs: outputs.length, outputsOk: outputs.filter((o) => o.ok).length },
  };
  return { ...body, sha256: createHash("sha256").update(JSON.stringify(body)).digest("hex") };
}

const esc = (s: string): string => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
const num = (v: number | null, unit = ""): string => (v === null ? "—" : `${Number(v.toPrecision(6))}${unit === "" ? "" : ` ${unit}`}`);

/** The report as a page to print and sign: self-contained, no script. */
export function commissionHtml(r: CommissionReport): string {
  const mark = (ok: boolean): string => (ok ? `<td class="ok">ok</td>` : `<td class="no">CHECK</td>`);
  const pointRows = r.points.map((p) => `<tr>${mark(p.ok)}<td>${esc(p.id)}</td><td>${esc(num(p.value, p.unit))}</td><td>${esc(p.quality)}</td><td>${p.ageMs === null ? "never" : `${p.ageMs} ms`}</td><td>${esc(p.why)}</td></tr>`).join("\n");
  const outputRows = r.outputs
    .map((o) => `<tr>${mark(o.ok)}<td>${esc(o.id)}</td><td>${esc(o.what)}</td><td>${o.readBack === null ? "—" : `${esc(num(o.readBack.value))} (${esc(o.readBack.quality)})`}</td><td>${o.feedback.map((f) => `${esc(f.id)} ${esc(num(f.value))} (${esc(f.quality)})`).join("<br>") || "—"}</td><td>${esc(o.why)}</td></tr>`)
    .join("\n");
  const s = r.summary;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Commissioning ${esc(r.site)}/${esc(r.pod)} ${esc(r.at)}</title>
<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #999;padding:2px 6px;text-align:left}.ok{color:#060}.no{color:#b00;font-weight:bold}.sign{margin-top:3em}</style></head>
<body>
<h1>Commissioning record: ${esc(r.site)}/${esc(r.pod)}</h1>
<p>podwarden ${esc(r.version)}, config ${esc(r.configHash)}, taken ${esc(r.at)}, signed off by <b>${esc(r.by)}</b>.</p>
<p>Points: ${s.pointsOk} of ${s.points} ok. Outputs: ${s.outputsOk} of ${s.outputs} ok.</p>
<h2>Points</h2>
<table><tr><th></th><th>point</th><th>value</th><th>quality</th><th>age</th><th>why not</th></tr>
${pointRows}
</table>
<h2>Outputs</h2>
<table><tr><th></th><th>output</th><th>what</th><th>read back</th><th>feedback</th><th>why not</th></tr>
${outputRows}
</table>
<p class="sign">Signed: ______________________ (${esc(r.by)}) &nbsp; Date: ____________</p>
<p><small>SHA-256 of the JSON record: ${esc(r.sha256)}</small></p>
</body></html>
`;
}
