// `podwarden io`: the running daemon's live I/O list over its admin socket (agent/ops/io-list.ts),
// as a table or as JSON; `podwarden io force`: an engineer's loop check of one output, carried
// out by the daemon's command executor (the `force` command: maintenance only, leased, audited);
// `podwarden maintenance on|off`, which a loop check needs; `podwarden scan`: who answers on a
// serial bus, asked through the daemon's own bus queue behind its traffic; `podwarden commission`:
// every point and output as seen now, kept as a signed-off record. Exit 1 when the daemon cannot be
// reached or refuses.
import { join } from "node:path";
import { adminRequest, SCAN_MAX_MS } from "../agent/ops/admin-socket.js";
import type { ScanRow } from "../drivers/modbus/bus-scan.js";
import type { WrittenRecord } from "../agent/commissioning/commission-files.js";
import { ioTable, type IoRow } from "../agent/ops/io-list.js";
import { textTable } from "../lib/text-table.js";
import { UsageError } from "./usage-error.js";

interface Common {
  stateDir: string;
  log: (line: string) => void;
}

/** One request to the daemon; its body, or null when it failed (said on stderr). */
async function ask(a: Common, method: string, path: string, timeoutMs?: number): Promise<Record<string, unknown> | null> {
  const sock = join(a.stateDir, "admin.sock");
  let r;
  try {
    r = await adminRequest(sock, method, path, timeoutMs);
  } catch (err) {
    process.stderr.write(`podwarden: cannot reach the daemon at ${sock}: ${(err as Error).message}\n`);
    return null;
  }
  if (r.status !== 200) {
    process.stderr.write(`podwarden: ${typeof r.body.error === "string" ? r.body.error : `status ${r.status}`}\n`);
    return null;
  }
  return r.body;
}

export async function ioCommand(a: Common & { json: boolean }): Promise<number> {
  const body = await ask(a, "GET", "/io");
  if (body === null) return 1;
  const rows = body.io as IoRow[];
  a.log(a.json ? JSON.stringify(rows, null, 2) : ioTable(rows));
  return 0;
}

/** `io force <output> <value> --lease <s>` or `io force <output> --release`. */
export async function ioForceCommand(a: Common & { output?: string; value?: string; lease?: string; release: boolean }): Promise<number> {
  if (a.output === undefined) throw new UsageError("io force needs <output> (as `podwarden io` names the outputs' devices: rack-2.valveCommandPct)");
  const q = new URLSearchParams({ output: a.output });
  if (a.release) {
    if (a.value !== undefined || a.lease !== undefined) throw new UsageError("io force --release takes no value or --lease");
    q.set("release", "true");
  } else {
    if (a.value === undefined || a.lease === undefined) throw new UsageError("io force needs <output> <value> --lease <s> (or <output> --release)");
    q.set("value", a.value);
    q.set("leaseS", a.lease);
  }
  const body = await ask(a, "POST", `/force?${q.toString()}`);
  if (body === null) return 1;
  a.log(a.release ? `${a.output}: force released; ${String(body.loop)} back to its own mode` : `${a.output} (${String(body.what)}): forced to ${String(body.value)} for ${String(body.leaseS)} s, as ${String(body.loop)}'s Override; it reverts when the lease ends (io force ${a.output} --release ends it now)`);
  return 0;
}

/** `maintenance on|off`. */
export async function maintenanceCommand(a: Common & { state?: string }): Promise<number> {
  if (a.state !== "on" && a.state !== "off") throw new UsageError("maintenance needs on or off");
  const body = await ask(a, "POST", `/mode?maintenance=${a.state === "on" ? "true" : "false"}`);
  if (body === null) return 1;
  a.log(`maintenance ${a.state}`);
  return 0;
}

/** `scan --bus <name> [--from <id>] [--to <id>] [--timeout-ms <ms>]`: who answers on a serial bus. */
export async function scanCommand(a: Common & { bus?: string; from?: string; to?: string; timeoutMs?: string; json: boolean }): Promise<number> {
  if (a.bus === undefined) throw new UsageError("scan needs --bus <name> (one of modbus.buses)");
  const q = new URLSearchParams({ bus: a.bus });
  if (a.from !== undefined) q.set("from", a.from);
  if (a.to !== undefined) q.set("to", a.to);
  if (a.timeoutMs !== undefined) q.set("timeoutMs", a.timeoutMs);
  // the daemon holds a scan under SCAN_MAX_MS; the answer comes when the last id has been asked
  const body = await ask(a, "POST", `/scan?${q.toString()}`, SCAN_MAX_MS + 30_000);
  if (body === null) return 1;
  const rows = body.rows as ScanRow[];
  if (a.json) {
    a.log(JSON.stringify(rows, null, 2));
    return 0;
  }
  const shown = rows.filter((r) => r.result !== "silent" || r.device !== undefined);
  a.log(scanTable(shown));
  a.log(`${a.bus}: ${rows.length} ids asked, ${rows.filter((r) => r.result === "answered").length} answered, ${rows.filter((r) => r.result === "framing").length} with framing errors, ${rows.filter((r) => r.result === "silent").length} silent`);
  return 0;
}

/** The rows worth a look (every answer, every configured id) as a table. */
export function scanTable(rows: readonly ScanRow[]): string {
  const cells = rows.map((r) => [String(r.unitId), r.result, r.result === "silent" ? "—" : `${r.ms} ms`, r.device ?? "", r.detail ?? ""]);
  return textTable(["unit", "result", "time", "configured", "detail"], cells);
}

/** `commission --by <name>`: the walk's record written in the state directory; exit 1 when anything is not ok. */
export async function commissionCommand(a: Common & { by?: string }): Promise<number> {
  if (a.by === undefined) throw new UsageError("commission needs --by <name>: who signs the record off");
  const body = await ask(a, "POST", `/commission?${new URLSearchParams({ by: a.by }).toString()}`);
  if (body === null) return 1;
  const w = body as unknown as WrittenRecord;
  for (const p of w.problems) a.log(`CHECK ${p.id}: ${p.why}`);
  a.log(`points ${w.summary.pointsOk} of ${w.summary.points} ok, outputs ${w.summary.outputsOk} of ${w.summary.outputs} ok`);
  a.log(`record: ${w.json}\n        ${w.html} (to print and sign)\nsha256 ${w.sha256}`);
  return w.problems.length === 0 ? 0 : 1;
}
