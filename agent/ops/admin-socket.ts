// The local admin socket: HTTP over a Unix socket in the state directory, mode 0600, so only the
// service's user (or root) can use it — the same authority as `systemctl`. It carries the
// operator actions that must be possible on the controller itself, such as the authorised reset
// of a leak latch (`podwarden reset-leak`), the live I/O list (`podwarden io`), an operator's
// flight recording (`podwarden recording trigger`), maintenance (`podwarden maintenance`), and an
// engineer's relay autotune, gains, partial-stroke tests and loop checks (`podwarden tune`,
// `podwarden gains`, `podwarden stroke`, `podwarden io force`), carried out by the command
// executor, so they meet the same checks a signed command does.
// Remote commands go through the uplink instead.
import { chmodSync, existsSync, unlinkSync } from "node:fs";
import { dirname } from "node:path";
import { createServer, request, type Server } from "node:http";
import { closeHttp, listenHttp } from "../../lib/http-server.js";
import { validateParams } from "../commands/schema.js";
import type { PodCommands, PodDiagnostics, PodReader } from "../pod-api.js";
import { monoMs } from "../../lib/clock.js";
import { ioList } from "./io-list.js";
import type { AgentConfig } from "../config/load.js";
import { writeCommissionRecord } from "../commissioning/commission-files.js";
import type { ScanOptions, ScanRow } from "../../drivers/modbus/bus-scan.js";

/** What the admin socket takes of the pod: status, the live I/O, commands, and the two operations it carries out itself. */
export type AdminPod = Pick<PodReader, "status" | "fieldPoints"> &
  Pick<PodDiagnostics, "modbusStats" | "redfishStats"> &
  PodCommands & {
    resetLeak(rack: number): Promise<"accepted" | "refused-wet" | "timeout">;
    recordNow(by: string): string | Promise<string>;
    /** probes every unit id of a serial bus (drivers/modbus/bus-scan.ts) */
    scanBus(bus: string, o: ScanOptions): Promise<ScanRow[]>;
    /** what a commissioning record names and walks: the pod and its outputs */
    readonly config: Pick<AgentConfig, "site" | "pod" | "racks" | "cdu">;
    readonly configHash: string;
  };

const BY = "local admin socket";

/** The engineer's commands the socket carries to the executor. */
type LocalCommand = "tune" | "gains" | "stroke" | "force" | "mode";
const LOCAL_COMMANDS: readonly string[] = ["tune", "gains", "stroke", "force", "mode"] satisfies LocalCommand[];
/** Parameters given as numbers and as flags, by command: the rest are strings. */
const NUMBERS: Partial<Record<LocalCommand, readonly string[]>> = { gains: ["kp", "ki", "kd"], force: ["value", "leaseS"] };
const FLAGS: Partial<Record<LocalCommand, readonly string[]>> = { gains: ["revert"], force: ["release"], mode: ["maintenance"] };

/** A command's parameters from the query string: numbers as numbers, flags as booleans (the schema then checks them). */
function queryParams(command: LocalCommand, q: URLSearchParams): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  for (const [k, v] of q) {
    if (NUMBERS[command]?.includes(k) === true) p[k] = v === "" ? NaN : Number(v);
    else if (FLAGS[command]?.includes(k) === true) p[k] = v === "1" || v === "true" ? true : v === "0" || v === "false" ? false : v;
    else p[k] = v;
  }
  return p;
}

/** What the audit trail says a local command did, or null for one that only reads. */
function auditOf(command: LocalCommand, p: Record<string, unknown>): { what: string; target: string } | null {
  switch (command) {
    case "stroke":
      return p.action === "status" ? null : { what: `stroke ${String(p.action)}`, target: [p.rack, p.valve].filter((x) => x !== undefined).map(String).join(" ") };
    case "tune":
      return p.action === "status" ? null : { what: `tune ${String(p.action)}`, target: String(p.loop) };
    case "gains":
      return Object.keys(p).length === 1 ? null : { what: "gains", target: String(p.loop) };
    case "force":
      return { what: p.release === true ? "force release" : `force ${String(p.value)} for ${String(p.leaseS)} s`, target: String(p.output) };
    case "mode":
      return { what: `maintenance ${p.maintenance === true ? "on" : "off"}`, target: "pod" };
  }
}

/** A whole scan is held under this, ms: the admin socket's HTTP request ends at 300 s. */
export const SCAN_MAX_MS = 120_000;

/** A scan's options from the query string, or what is wrong with them. */
function scanOptions(q: URLSearchParams): ScanOptions | string {
  const int = (key: string, dflt: number, min: number, max: number): number | string => {
    const v = q.get(key);
    const n = v === null ? dflt : Number(v);
    return Number.isInteger(n) && n >= min && n <= max ? n : `${key} must be an integer from ${min} to ${max}`;
  };
  const from = int("from", 1, 1, 247);
  const to = int("to", 247, 1, 247);
  const timeoutMs = int("timeoutMs", 100, 10, 2000);
  const register = int("register", 0, 0, 65535);
  for (const x of [from, to, timeoutMs, register]) if (typeof x === "string") return x;
  const o = { from: from as number, to: to as number, timeoutMs: timeoutMs as number, register: register as number };
  if (o.from > o.to) return `from ${o.from} is past to ${o.to}`;
  if ((o.to - o.from + 1) * o.timeoutMs > SCAN_MAX_MS) return `${o.to - o.from + 1} ids at ${o.timeoutMs} ms each could take past ${SCAN_MAX_MS / 1000} s: scan fewer ids or with a shorter timeout`;
  return o;
}

export class AdminSocket {
  private server: Server | null = null;
  /** buses being scanned: one scan at a time on each */
  private readonly scanning = new Set<string>();

  constructor(
    private agent: () => AdminPod,
    readonly path: string,
  ) {}

  async listen(): Promise<void> {
    if (existsSync(this.path)) unlinkSync(this.path); // a socket left by a crash
    const server = createServer((req, res) => {
      const send = (status: number, body: unknown): void => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      const url = new URL(req.url ?? "/", "http://admin");
      const agent = this.agent();
      // the live I/O list: what `podwarden io` prints and a commissioning record walks
      const io = (): ReturnType<typeof ioList> => ioList(agent.fieldPoints(), agent.modbusStats(), agent.redfishStats(), monoMs());
      if (req.method === "GET" && url.pathname === "/status") return send(200, agent.status());
      if (req.method === "GET" && url.pathname === "/io") return send(200, { io: io() });
      if (req.method === "POST" && url.pathname === "/reset-leak") {
        const rack = url.searchParams.get("rack") ?? "";
        const index = agent.layout.rackIndex(rack);
        if (index === undefined) return send(404, { error: `no rack "${rack}"` });
        agent.resetLeak(index).then(
          (result) => {
            agent.audit({ action: "reset-leak", rack, by: BY, result });
            send(result === "accepted" ? 200 : 409, { rack, result });
          },
          (err: Error) => send(500, { error: err.message }),
        );
        return;
      }
      if (req.method === "POST" && url.pathname === "/record") {
        Promise.resolve()
          .then(() => agent.recordNow(BY))
          .then(
            (recording) => send(200, { recording }),
            (err: Error) => send(409, { error: err.message }),
          );
        return;
      }
      if (req.method === "POST" && url.pathname === "/commission") {
        const by = url.searchParams.get("by") ?? "";
        if (!/^[\p{L}\p{N} .,'_@-]{1,128}$/u.test(by)) return send(400, { error: "by: who signs the record off, 1 to 128 letters, digits, spaces and . , ' _ @ -" });
        writeCommissionRecord(dirname(this.path), agent.config, agent.configHash, io(), by).then(
          (written) => {
            agent.audit({ action: "commission", by: `${BY} (${by})`, result: `points ${written.summary.pointsOk}/${written.summary.points} ok, outputs ${written.summary.outputsOk}/${written.summary.outputs} ok` });
            send(200, written);
          },
          (err: Error) => send(500, { error: `the record could not be written: ${err.message}` }),
        );
        return;
      }
      if (req.method === "POST" && url.pathname === "/scan") {
        const o = scanOptions(url.searchParams);
        if (typeof o === "string") return send(400, { error: o });
        const bus = url.searchParams.get("bus") ?? "";
        if (this.scanning.has(bus)) return send(409, { error: `a scan of ${bus} is running already` });
        this.scanning.add(bus);
        agent
          .scanBus(bus, o)
          .then(
            (rows) => {
              agent.audit({ action: `scan ${bus} ${o.from}-${o.to}`, by: BY, result: `${rows.filter((r) => r.result === "answered").length} answered` });
              send(200, { bus, rows });
            },
            (err: Error) => send(404, { error: err.message }),
          )
          .finally(() => this.scanning.delete(bus));
        return;
      }
      if (req.method === "GET" && url.pathname === "/recordings") return send(200, { recordings: agent.recentRecordings(1000) });
      if (req.method === "POST" && LOCAL_COMMANDS.includes(url.pathname.slice(1))) {
        const command = url.pathname.slice(1) as LocalCommand;
        const params = validateParams(command, queryParams(command, url.searchParams));
        if (!params.ok) return send(400, { error: params.reason });
        // the socket's mode is maintenance alone: loop modes are the HMI's and mission control's
        if (command === "mode" && (typeof params.value.maintenance !== "boolean" || Object.keys(params.value).length !== 1)) return send(400, { error: "mode over the admin socket takes maintenance alone" });
        agent.execute({ command, params: params.value }, BY).then(
          (outcome) => {
            const audit = auditOf(command, params.value);
            // names and enums, by the schema
            const rack = outcome.rack ?? (params.value.rack as string | undefined);
            if (audit !== null) {
              agent.audit({ action: audit.what, by: BY, result: outcome.status === "ok" ? "accepted" : outcome.code, ...(rack === undefined ? {} : { rack }), ...(outcome.status === "ok" ? {} : { reason: `${audit.target}: ${outcome.reason}` }) });
            }
            if (outcome.status === "ok") send(200, outcome.data ?? {});
            else send(outcome.code === "not-found" ? 404 : 409, { error: outcome.reason });
          },
          (err: Error) => send(500, { error: err.message }),
        );
        return;
      }
      send(404, { error: `no route ${req.method ?? "?"} ${url.pathname}` });
    });
    this.server = server;
    await listenHttp(server, { path: this.path });
    chmodSync(this.path, 0o600);
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    await closeHttp(s);
  }
}

/** Client side, for the CLI: one request to the daemon's admin socket, given up after timeoutMs without an answer. */
export function adminRequest(socketPath: string, method: string, path: string, timeoutMs = 5000): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, timeout: timeoutMs }, (res) => {
      let text = "";
      res.on("data", (d: Buffer) => (text += d.toString()));
      res.on("end", () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> });
        } catch {
          resolve({ status: res.statusCode ?? 0, body: { error: text } });
        }
      });
    });
    req.on("timeout", () => req.destroy(new Error("the daemon did not answer")));
    req.on("error", reject);
    req.end();
  });
}
