// `podwarden io`: the running daemon's live I/O list over its admin socket (agent/ops/io-list.ts),
// as a table or as JSON; exit 1 when the daemon cannot be reached.
import { join } from "node:path";
import { adminRequest } from "../agent/ops/admin-socket.js";
import { ioTable, type IoRow } from "../agent/ops/io-list.js";

export async function ioCommand(a: { stateDir: string; json: boolean; log: (line: string) => void }): Promise<number> {
  const sock = join(a.stateDir, "admin.sock");
  let r;
  try {
    r = await adminRequest(sock, "GET", "/io");
  } catch (err) {
    process.stderr.write(`podwarden: cannot reach the daemon at ${sock}: ${(err as Error).message}\n`);
    return 1;
  }
  if (r.status !== 200) {
    process.stderr.write(`podwarden: ${typeof r.body.error === "string" ? r.body.error : `status ${r.status}`}\n`);
    return 1;
  }
  const rows = r.body.io as IoRow[];
  a.log(a.json ? JSON.stringify(rows, null, 2) : ioTable(rows));
  return 0;
}
