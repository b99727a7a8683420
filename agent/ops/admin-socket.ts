// The local admin socket: HTTP over a Unix socket in the state directory, mode 0600, so only the
// service's user (or root) can use it — the same authority as `systemctl`. It carries the
// operator actions that must be possible on the controller itself, such as the authorised reset
// of a leak latch (`podwarden reset-leak`), the live I/O list (`podwarden io`), an operator's
// flight recording (`podwarden recording trigger`), and an engineer's relay autotune, gains and partial-stroke tests (`podwarden tune`,
// `podwarden gains`, `podwarden stroke`, carried out by the command executor, so they meet the
// same checks a signed command does).
// Remote commands go through the uplink instead.
import { chmodSync, existsSync, unlinkSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { closeHttp, listenHttp } from "../../lib/http-server.js";
import { validateParams } from "../commands/schema.js";
import type { PodCommands, PodDiagnostics, PodReader } from "../pod-api.js";
import { monoMs } from "../../lib/clock.js";
import { ioList } from "./io-list.js";

/** What the admin socket takes of the pod: status, the live I/O, commands, and the two operations it carries out itself. */
export type AdminPod = Pick<PodReader, "status" | "fieldPoints"> &
  Pick<PodDiagnostics, "modbusStats" | "redfishStats"> &
  PodCommands & {
    resetLeak(rack: number): Promise<"accepted" | "refused-wet" | "timeout">;
    recordNow(by: string): string | Promise<string>;
  };

const BY = "local admin socket";

/** A tune, gains or stroke command's parameters from the query string (numbers as numbers). */
function queryParams(command: "tune" | "gains" | "stroke", q: URLSearchParams): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  for (const [k, v] of q) {
    if (command === "gains" && (k === "kp" || k === "ki" || k === "kd")) p[k] = v === "" ? NaN : Number(v);
    else if (command === "gains" && k === "revert") p[k] = v === "1" || v === "true" ? true : v;
    else p[k] = v;
  }
  return p;
}

export class AdminSocket {
  private server: Server | null = null;

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
      if (req.method === "GET" && url.pathname === "/status") return send(200, agent.status());
      if (req.method === "GET" && url.pathname === "/io") return send(200, { io: ioList(agent.fieldPoints(), agent.modbusStats(), agent.redfishStats(), monoMs()) });
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
      if (req.method === "GET" && url.pathname === "/recordings") return send(200, { recordings: agent.recentRecordings(1000) });
      if (req.method === "POST" && (url.pathname === "/tune" || url.pathname === "/gains" || url.pathname === "/stroke")) {
        const command = url.pathname.slice(1) as "tune" | "gains" | "stroke";
        const params = validateParams(command, queryParams(command, url.searchParams));
        if (!params.ok) return send(400, { error: params.reason });
        agent.execute({ command, params: params.value }, BY).then(
          (outcome) => {
            // names and enums, by the schema
            const rack = params.value.rack as string | undefined;
            const target = command === "stroke" ? [rack, params.value.valve as string | undefined].filter((x) => x !== undefined).join(" ") : (params.value.loop as string);
            const what = command === "gains" ? "gains" : `${command} ${String(params.value.action)}`;
            const readOnly = params.value.action === "status" || (command === "gains" && Object.keys(params.value).length === 1);
            if (!readOnly) {
              agent.audit({ action: what, by: BY, result: outcome.status === "ok" ? "accepted" : outcome.code, ...(rack === undefined ? {} : { rack }), ...(outcome.status === "ok" ? {} : { reason: `${target}: ${outcome.reason}` }) });
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
