// The local admin socket: HTTP over a Unix socket in the state directory, mode 0600, so only the
// service's user (or root) can use it — the same authority as `systemctl`. It carries the
// operator actions that must be possible on the controller itself, such as the authorised reset
// of a leak latch (`podwarden reset-leak`) and an operator's flight recording (`podwarden recording
// trigger`). Remote commands go through the uplink instead.
import { chmodSync, existsSync, unlinkSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { closeHttp, listenHttp } from "../../lib/http-server.js";
import type { PodCommander, PodReader } from "../pod-api.js";

export class AdminSocket {
  private server: Server | null = null;

  constructor(
    private agent: () => Pick<PodReader, "status"> & PodCommander,
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
      if (req.method === "POST" && url.pathname === "/reset-leak") {
        const rack = url.searchParams.get("rack") ?? "";
        const index = agent.layout.rackIndex(rack);
        if (index === undefined) return send(404, { error: `no rack "${rack}"` });
        agent.resetLeak(index).then(
          (result) => {
            agent.audit({ action: "reset-leak", rack, by: "local admin socket", result });
            send(result === "accepted" ? 200 : 409, { rack, result });
          },
          (err: Error) => send(500, { error: err.message }),
        );
        return;
      }
      if (req.method === "POST" && url.pathname === "/record") {
        try {
          return send(200, { recording: agent.recordNow("local admin socket") });
        } catch (err) {
          return send(409, { error: (err as Error).message });
        }
      }
      if (req.method === "GET" && url.pathname === "/recordings") return send(200, { recordings: agent.recentRecordings(1000) });
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

/** Client side, for the CLI: one request to the daemon's admin socket. */
export function adminRequest(socketPath: string, method: string, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, timeout: 5000 }, (res) => {
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
