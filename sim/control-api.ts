// The simulator's live control interface: HTTP JSON on loopback (docs/simulator.md).
//   GET  /truth     ground truth: actual valve positions, flows, coolant lost, device writes
//   GET  /devices   the devices with their ports, unit ids and last write
//   POST /fault     one fault action (the scenario vocabulary), JSON body
//   POST /clear     clear every injected fault
//   GET  /healthz   200 while the sim runs
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { ConfigError } from "../lib/config-file.js";
import { closeHttp, listenHttp } from "../lib/http-server.js";
import { validateFaultAction } from "./faults.js";
import type { PodSim } from "./pod-sim.js";

const MAX_BODY = 64 * 1024;

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > MAX_BODY) throw new Error(`body larger than ${MAX_BODY} bytes`);
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString("utf8");
}

export class SimControlApi {
  private server: Server | null = null;

  constructor(private readonly sim: PodSim) {}

  async listen(port: number, host = "127.0.0.1"): Promise<number> {
    const server = createServer((req, res) => {
      this.route(req, res).catch((err: Error) => send(res, 500, { error: err.message }));
    });
    this.server = server;
    return await listenHttp(server, { port, host });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" && path === "/truth") return send(res, 200, this.sim.truth());
    if (req.method === "GET" && path === "/devices") return send(res, 200, this.sim.truth().devices);
    if (req.method === "GET" && path === "/healthz") return send(res, 200, { ok: true, timeS: this.sim.plant.timeS });
    if (req.method === "POST" && path === "/clear") {
      this.sim.inject({ clear: "all" });
      return send(res, 200, { ok: true });
    }
    if (req.method === "POST" && path === "/fault") {
      let body: unknown;
      try {
        body = JSON.parse(await readBody(req));
      } catch (err) {
        return send(res, 400, { error: `body is not JSON: ${(err as Error).message}` });
      }
      try {
        this.sim.inject(validateFaultAction(body, "fault"));
      } catch (err) {
        const e = err as Error;
        return send(res, 400, { error: e instanceof ConfigError ? e.problems.join("; ") : e.message });
      }
      return send(res, 200, { ok: true });
    }
    return send(res, 404, { error: `no route ${req.method ?? "?"} ${path}` });
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    await closeHttp(s);
  }
}
