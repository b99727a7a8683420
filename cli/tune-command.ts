// `podwarden tune <loop> [--status | --abort]` and `podwarden gains <loop> [--rule <r> | --kp <x>
// --ki <y> [--kd <z>] | --revert]`: an engineer's relay autotune and gains on the controller,
// through the daemon's admin socket (docs/engineering.md). `tune` follows the tuning to its end
// and prints what it found; Ctrl-C while it runs aborts it.
import { join } from "node:path";
import { adminRequest } from "../agent/ops/admin-socket.js";
import type { AppliedGains, LoopGainsStatus, TuningStatus } from "../agent/pod-api.js";

export interface TuneArgs {
  loop: string;
  stateDir: string;
  log: (line: string) => void;
  /** how often the tuning's progress is read while following it, ms */
  pollMs?: number;
}

const fmt = (x: number): string => (Math.abs(x) >= 100 ? x.toFixed(1) : x.toPrecision(3));

/** The tuning in lines: its state, and what it found. */
export function tuningLines(s: TuningStatus): string[] {
  const out = [`${s.loop}: ${s.state}${s.reason === undefined ? "" : ` (${s.reason})`}, started ${s.startedAt} by ${s.by}`];
  if (s.relay !== undefined) out.push(`  relay: ±${fmt(s.relay.amplitude)} % around the output, hysteresis ${fmt(s.relay.hysteresis)} around PV ${fmt(s.relay.center)}; ${s.switches} of ${s.switchesNeeded} switches`);
  const r = s.result;
  if (r === undefined) return out;
  out.push(`  Ku ${fmt(r.ku)} (%/PV unit), Pu ${fmt(r.puS)} s, phase ${r.phaseDeg.toFixed(0)}°, PV amplitude ${fmt(r.amplitude)} over ${r.cycles} periods`);
  for (const w of r.warnings) out.push(`  warning: ${w}`);
  out.push(r.fopdt === null ? `  no FOPDT model: ${r.fopdtWhyNot ?? "?"}` : `  FOPDT: gain ${fmt(r.fopdt.gain)} PV/%, lag ${fmt(r.fopdt.tauS)} s, dead time ${fmt(r.fopdt.deadTimeS)} s (matches ${(100 * r.fopdt.fit).toFixed(0)} %)`);
  out.push("  proposals (PI):");
  for (const p of r.proposals) {
    const m = p.margins === null ? "margins unknown (no model)" : `gain margin ${p.margins.gain.toFixed(2)}, phase margin ${p.margins.phaseDeg.toFixed(0)}°`;
    out.push(`    ${p.rule.padEnd(16)} kp ${fmt(p.kp).padStart(8)}  ki ${fmt(p.ki).padStart(8)}  ${m}${p.rule === r.recommended ? "  (recommended)" : ""}`);
  }
  out.push(`  apply one with: podwarden gains ${s.loop} --rule ${r.recommended}`);
  return out;
}

function gainsLines(g: LoopGainsStatus): string[] {
  const a = g.applied;
  return [
    `${g.loop}: config kp ${fmt(g.config.kp)} ki ${fmt(g.config.ki)} kd ${fmt(g.config.kd)}`,
    a === null ? "  running on the config's gains" : `  running on applied kp ${fmt(a.kp)} ki ${fmt(a.ki)} kd ${fmt(a.kd)} (${a.rule}, by ${a.by} at ${a.appliedAt}); undo with --revert`,
  ];
}

async function call(a: TuneArgs, path: string): Promise<Record<string, unknown>> {
  const r = await adminRequest(join(a.stateDir, "admin.sock"), "POST", path);
  if (r.status !== 200) throw new Error(`${a.loop}: ${typeof r.body.error === "string" ? r.body.error : `the daemon answered ${r.status}`}`);
  return r.body;
}

export async function tuneCommand(a: TuneArgs & { action: "start" | "status" | "abort" }): Promise<number> {
  const path = (action: string): string => `/tune?loop=${encodeURIComponent(a.loop)}&action=${action}`;
  if (a.action !== "start") {
    const t = (await call(a, path(a.action))).tuning as TuningStatus | null;
    for (const line of t === null ? [`${a.loop}: not tuned since the agent started`] : tuningLines(t)) a.log(line);
    return 0;
  }
  let t = (await call(a, path("start"))).tuning as TuningStatus;
  a.log(`${a.loop}: relay autotune started; Ctrl-C aborts it`);
  let aborting = false;
  const onInt = (): void => {
    aborting = true;
    void call(a, path("abort")).catch(() => undefined);
  };
  process.on("SIGINT", onInt);
  try {
    let said = "";
    while (t.state === "starting" || t.state === "noise" || t.state === "relay") {
      await new Promise((r) => setTimeout(r, a.pollMs ?? 1000));
      t = (await call(a, path("status"))).tuning as TuningStatus;
      const now = t.state === "relay" ? `relay: ${t.switches} of ${t.switchesNeeded} switches` : t.state;
      if (now !== said) a.log(`  ${now}`);
      said = now;
    }
  } finally {
    process.off("SIGINT", onInt);
  }
  for (const line of tuningLines(t)) a.log(line);
  return t.state === "done" && !aborting ? 0 : 1;
}

export async function gainsCommand(a: TuneArgs & { rule?: string; kp?: string; ki?: string; kd?: string; revert: boolean }): Promise<number> {
  const q = new URLSearchParams({ loop: a.loop });
  if (a.revert) q.set("revert", "1");
  if (a.rule !== undefined) q.set("rule", a.rule);
  for (const k of ["kp", "ki", "kd"] as const) if (a[k] !== undefined) q.set(k, a[k]);
  const body = await call(a, `/gains?${q.toString()}`);
  // a loop's gains status ({loop, config, applied}), after a show or a revert; or what was applied
  if (!("config" in body)) {
    const g = body.applied as AppliedGains;
    a.log(`${a.loop}: applied kp ${fmt(g.kp)} ki ${fmt(g.ki)} kd ${fmt(g.kd)} (${g.rule}); saved, and kept across restarts; undo with --revert`);
    return 0;
  }
  for (const line of gainsLines(body as unknown as LoopGainsStatus)) a.log(line);
  return 0;
}
