// A flight recording as CSV, one row per recorded tick: what a spreadsheet or a plotting script
// reads. Times are relative to the trigger's tick; every point's sample, source age and quality
// bits, every loop's setpoint, mode, output, PV and status bits, every rack's isolation state,
// status bits and valve commands.
import { recordLayout } from "../control/flight-ring.js";
import type { Recording } from "./recording-file.js";

const quote = (s: string): string => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

export function* recordingCsv(rec: Recording): Generator<string> {
  const h = rec.header;
  const w = rec.window;
  const { points: P, loops: Lc, racks: R } = h.sizes;
  const l = recordLayout(P, Lc, R);
  const { f, i } = l;
  const head = ["seq", "t_ms", "tick_ms", "dt_s", "flags"];
  for (const p of h.names.points) head.push(p, `${p}.age_ms`, `${p}.quality`);
  for (const n of h.names.loops) head.push(`${n}.sp`, `${n}.mode`, `${n}.out`, `${n}.pv`, `${n}.status`);
  for (const r of h.names.racks) head.push(`${r}.state`, `${r}.status`, `${r}.supplyOpen`, `${r}.returnOpen`);
  yield head.map(quote).join(",") + "\n";
  const trigger = h.triggerSeq - w.firstSeq;
  const t0 = trigger >= 0 && trigger < w.count ? w.f64[trigger * l.f64Width + f.tickMs] : w.f64[f.tickMs];
  const num = (x: number): string => (Number.isFinite(x) ? String(x) : x > 0 ? "inf" : x < 0 ? "-inf" : "");
  for (let k = 0; k < w.count; k++) {
    const fo = k * l.f64Width;
    const io = k * l.i32Width;
    const F = w.f64;
    const I = w.i32;
    const tick = F[fo + f.tickMs];
    const row: string[] = [String(w.firstSeq + k), (tick - t0).toFixed(3), tick.toFixed(3), String(F[fo + f.dtS]), String(I[io + i.flags])];
    for (let p = 0; p < P; p++) row.push(num(F[fo + f.value + p]), num(tick - F[fo + f.ts + p]), String(I[io + i.quality + p]));
    for (let n = 0; n < Lc; n++) row.push(num(F[fo + f.sp + n]), String(I[io + i.mode + n]), num(F[fo + f.out + n]), num(F[fo + f.pv + n]), String(I[io + i.loopStatus + n]));
    for (let r = 0; r < R; r++) row.push(String(I[io + i.rackState + r]), String(I[io + i.rackStatus + r]), String(I[io + i.supplyOpen + r]), String(I[io + i.returnOpen + r]));
    yield row.join(",") + "\n";
  }
}
