// The pod's web HMI (docs/hmi.md): a page and its live data, served by the daemon over HTTP or
// HTTPS, on loopback unless configured otherwise.
//   GET /            the page (index.html, hmi.js, hmi.css: every asset is in the package)
//   GET /api/state   the view (view.ts) as JSON, once
//   GET /api/trends  the series the trends hold; GET /api/trend?series=<id>&...: their last minutes
//   GET /api/events?type=<prefix>&q=<text>: the alarm history and event log, newest first
//   GET /api/health  devices, uplink, control thread and build, for the health view
//   GET /api/live    Server-Sent Events: the view (`state`) `updateHz` a second, the health view
//                    (`health`) every 2 s, the history so far (`events`) at once and each new
//                    event (`event`) as it happens; EventSource reconnects by itself, and the
//                    page marks its data stale while it is not receiving
//   GET /api/recordings  the flight recordings' summaries, newest first; GET /api/recording.csv?id=<id>:
//                    one of them as CSV (docs/engineering.md), one export at a time
//   /api/session, /api/login, /api/logout, /api/action: logging in and acting (actions.ts)
// Any other method on any other path is refused with 405 before a byte of a body is read.
// Every request is bounded before it is looked at: headers (8 KB), the URL (1 KB), the time to
// send the request, the number of live pages, and what a page that stops reading may hold
// buffered (it is dropped, not buffered for).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { boundedServer, closeHttp, listenHttp, type BoundedServer, type ConnectionCounts } from "../../lib/http-server.js";
import { findPackage } from "../../lib/package-root.js";
import type { AgentEvent, PodDiagnostics, PodReader } from "../pod-api.js";
import type { UplinkStats } from "../uplink/uplink.js";
import { hmiHealth, RequestRates } from "./health.js";
import { EventLog, MAX_EVENTS_PER_REQUEST } from "./event-log.js";
import { HmiActions, type HmiCommander } from "./actions.js";
import { hostAllowed, refuse, SECURITY_HEADERS, sendJson, sendJsonText } from "./http.js";
import { connectionLimits, type HmiConfig } from "./schema.js";
import { MAX_SERIES_PER_REQUEST, TrendRing, trendSamples } from "./trends.js";
import { recordingCsv } from "../recorder/recording-csv.js";
import { findRecording, readRecording } from "../recorder/recording-file.js";
import { hmiView } from "./view.js";
import { LivePages, type PageRefusal } from "./live-pages.js";

/** What the HMI reads of the pod. */
export type HmiPod = Pick<PodReader, "identity" | "status" | "snapshot" | "activeAlarms" | "healthy" | "fieldPoints" | "onEvent" | "powerBudgetKw"> & Pick<PodDiagnostics, "controlStats" | "modbusStats">;

const MAX_HEADER_BYTES = 8 * 1024;
const MAX_URL_CHARS = 1024;

/** How many of the pod's last events the history keeps. */
const EVENT_LOG_SIZE = 1000;

/** How often the health view goes to the live pages, ms. */
const HEALTH_MS = 2000;

/** How often the trends are sampled, ms. */
const TREND_PERIOD_MS = 1000;

// the page's own files, and uPlot's (a dependency: served from the installed package, no CDN)
const uplot = (file: string): string => createRequire(import.meta.url).resolve(`uplot/dist/${file}`);
const ASSETS: Record<string, [path: () => string, type: string]> = {
  "/": [() => join(hmiStaticDir(), "index.html"), "text/html; charset=utf-8"],
  "/hmi.js": [() => join(hmiStaticDir(), "hmi.js"), "text/javascript; charset=utf-8"],
  // the modules hmi.js imports, each with one job
  "/common.js": [() => join(hmiStaticDir(), "common.js"), "text/javascript; charset=utf-8"],
  "/overview.js": [() => join(hmiStaticDir(), "overview.js"), "text/javascript; charset=utf-8"],
  "/trends.js": [() => join(hmiStaticDir(), "trends.js"), "text/javascript; charset=utf-8"],
  "/hmi.css": [() => join(hmiStaticDir(), "hmi.css"), "text/css; charset=utf-8"],
  "/uplot.js": [() => uplot("uPlot.iife.min.js"), "text/javascript; charset=utf-8"],
  "/uplot.css": [() => uplot("uPlot.min.css"), "text/css; charset=utf-8"],
};

interface Asset {
  type: string;
  body: Buffer;
  gzip: Buffer;
}

/** The directory the page's files are served from. */
export function hmiStaticDir(): string {
  const root = findPackage(import.meta.url)?.dir;
  if (root === undefined) throw new Error("cannot find the podwarden package to serve the HMI from");
  return join(root, "agent", "hmi", "static");
}

export interface HmiStats {
  clients: number;
  /** live pages refused, by the cap they met */
  refused: Record<PageRefusal, number>;
  /** live pages dropped because they stopped reading */
  dropped: number;
  /** connections: open now, and closed as they were accepted past a cap */
  connections: ConnectionCounts;
}

export interface HmiServerOptions {
  pod: () => HmiPod;
  /** what actions go through (the command executor's face) */
  commander: () => HmiCommander;
  /** the uplink's counters for the health view (null without an uplink) */
  uplink?: () => UplinkStats | null;
  config: HmiConfig;
  version: string;
  /** where the flight recordings are (undefined: no recorder) */
  recordingsDir?: () => string | undefined;
  /** the pod could not be read, or an action failed unexpectedly (the page then shows its data as stale) */
  onError?: (err: unknown) => void;
}

export class HmiServer {
  private server: BoundedServer | null = null;
  private readonly assets = new Map<string, Asset>();
  private readonly pages: LivePages;
  private timer: NodeJS.Timeout | null = null;
  private pod: () => HmiPod;
  private readonly commander: () => HmiCommander;
  private readonly recordingsDir: () => string | undefined;
  private exporting = false;
  private readonly c: HmiConfig;
  private readonly version: string;
  private readonly onError: (err: unknown) => void;
  private readonly actions: HmiActions;
  private readonly trends: TrendRing;
  private readonly rates = new RequestRates();
  private readonly events = new EventLog(EVENT_LOG_SIZE);
  private unsubscribe: () => void;
  private uplink: () => UplinkStats | null;
  private sampler: NodeJS.Timeout | null = null;
  /** live-view periods since the first page opened */
  private ticks = 0;

  constructor(o: HmiServerOptions) {
    this.pod = o.pod;
    this.c = o.config;
    this.version = o.version;
    this.onError = o.onError ?? (() => undefined);
    this.uplink = o.uplink ?? (() => null);
    this.commander = o.commander;
    this.recordingsDir = o.recordingsDir ?? (() => undefined);
    this.unsubscribe = o.pod().onEvent((e) => this.onEvent(e));
    this.actions = new HmiActions(o.commander, o.config, this.onError);
    this.pages = new LivePages({ maxClients: o.config.maxClients, maxClientsPerAddress: o.config.maxClientsPerAddress, maxClientsPerUser: o.config.maxClientsPerUser, lifetimeMs: o.config.livePageS * 1000, logins: o.config.usersFile !== undefined });
    this.trends = new TrendRing((o.config.trendMinutes * 60_000) / TREND_PERIOD_MS);
    // read once: the page is ~70 KB, and a file changed under a running daemon is not served half-written
    for (const [path, [file, type]] of Object.entries(ASSETS)) {
      const body = readFileSync(file());
      this.assets.set(path, { type, body, gzip: gzipSync(body, { level: 9 }) });
    }
  }

  /** Serve another agent from now on (a reload restarted the agent). */
  attach(pod: () => HmiPod, commander: () => HmiCommander, uplink: () => UplinkStats | null = this.uplink): void {
    this.pod = pod;
    this.uplink = uplink;
    this.unsubscribe();
    this.unsubscribe = pod().onEvent((e) => this.onEvent(e));
    this.actions.attach(commander);
  }

  /** Listens; resolves with the port. */
  async listen(): Promise<number> {
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.handle(req, res);
    const server = boundedServer({ maxHeaderBytes: MAX_HEADER_BYTES, tls: this.c.tls, limits: connectionLimits(this.c) }, handler);
    this.server = server;
    const port = await listenHttp(server, { host: this.c.host, port: this.c.port });
    this.sample();
    this.sampler = setInterval(() => this.sample(), TREND_PERIOD_MS);
    return port;
  }

  private sample(): void {
    try {
      const pod = this.pod();
      const now = Date.now();
      this.trends.record(now, trendSamples(pod.fieldPoints(), pod.status()));
      this.rates.sample(now, pod.modbusStats().devices);
    } catch (err) {
      this.onError(err);
    }
  }

  /** GET /api/trend?series=<id>&series=<id>...: up to MAX_SERIES_PER_REQUEST known series. */
  private trend(res: ServerResponse, query: string): void {
    const ids = new URLSearchParams(query).getAll("series");
    if (ids.length === 0 || ids.length > MAX_SERIES_PER_REQUEST) return refuse(res, 400, `ask for 1 to ${MAX_SERIES_PER_REQUEST} series`);
    const unknown = ids.find((id) => !this.trends.has(id));
    if (unknown !== undefined) return refuse(res, 404, `no series "${unknown.slice(0, 128)}" (GET /api/trends lists them)`);
    sendJson(res, 200, this.trends.window(ids));
  }

  /**
   * A recording as CSV, streamed with backpressure: a few MB of text for the default window,
   * produced a few hundred rows per turn of the event loop so the daemon's other work goes on.
   */
  private async recordingCsv(res: ServerResponse, id: string): Promise<void> {
    const dir = this.recordingsDir();
    if (dir === undefined) return refuse(res, 404, "the flight recorder is off");
    if (!/^[0-9TZ]{18,}-[A-Za-z0-9-]{1,80}$/.test(id)) return refuse(res, 400, "id: a recording id, as GET /api/recordings lists them");
    if (this.exporting) return refuse(res, 503, "another recording is being exported: try again when it is done", { "retry-after": "5" });
    this.exporting = true;
    try {
      const rec = await readRecording(findRecording(dir, id).file);
      res.writeHead(200, { ...SECURITY_HEADERS, "content-type": "text/csv; charset=utf-8", "content-disposition": `attachment; filename="${rec.header.id}.csv"` });
      let n = 0;
      for (const line of recordingCsv(rec)) {
        if (res.destroyed) return;
        if (!res.write(line)) await new Promise((r) => res.once("drain", r));
        if (++n % 200 === 0) await new Promise((r) => setImmediate(r));
      }
      res.end();
    } catch (err) {
      if (res.headersSent) res.destroy();
      else refuse(res, 404, (err as Error).message.replace(dir, "<recordings>"));
    } finally {
      this.exporting = false;
    }
  }

  stats(): HmiStats {
    return { clients: this.pages.size, refused: this.pages.refused, dropped: this.pages.dropped, connections: this.server?.connectionCounts() ?? { open: 0, refusedTotal: 0, refusedPerAddress: 0 } };
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? "/";
    if (url.length > MAX_URL_CHARS) return refuse(res, 414, "URL too long");
    // before anything is read or done: a page elsewhere must not reach the HMI through a name it
    // points at the controller (issue #54: with Host: evil.example, /api/state answered and a login succeeded)
    if (!hostAllowed(req.headers.host, this.c.allowedHosts)) return refuse(res, 421, "this HMI does not answer to that host name (hmi.allowedHosts)");
    const path = url.split("?")[0];
    if (HmiActions.owns(path)) return this.actions.handle(req, res, path);
    // a body is never read: refuse closes the connection after the answer
    if (req.method !== "GET" && req.method !== "HEAD") return refuse(res, 405, "only GET and HEAD here", { allow: "GET, HEAD" });
    if (path === "/api/live") return this.live(req, res);
    if (path === "/api/trends") return sendJson(res, 200, { periodMs: TREND_PERIOD_MS, minutes: this.c.trendMinutes, series: this.trends.list() });
    if (path === "/api/trend") return this.trend(res, url.slice(path.length + 1));
    if (path === "/api/events") {
      const q = new URLSearchParams(url.slice(path.length + 1));
      const limit = Math.min(MAX_EVENTS_PER_REQUEST, Math.max(1, Number(q.get("limit") ?? MAX_EVENTS_PER_REQUEST) || MAX_EVENTS_PER_REQUEST));
      return sendJson(res, 200, { events: this.events.query((q.get("type") ?? "").slice(0, 64), (q.get("q") ?? "").slice(0, 128), limit) });
    }
    if (path === "/api/recordings") return sendJson(res, 200, { recordings: this.commander().recentRecordings(100) });
    if (path === "/api/recording.csv") return void this.recordingCsv(res, new URLSearchParams(url.slice(path.length + 1)).get("id") ?? "");
    if (path === "/api/health") {
      const health = this.healthJson();
      if (health === null) return refuse(res, 500, "the pod's counters cannot be read now");
      return sendJsonText(res, 200, health);
    }
    if (path === "/api/state") {
      const view = this.viewJson();
      if (view === null) return refuse(res, 500, "the pod's state cannot be read now");
      return sendJsonText(res, 200, view);
    }
    const asset = this.assets.get(path === "/index.html" ? "/" : path);
    if (asset === undefined) return refuse(res, 404, "not found");
    const gzip = /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
    const body = gzip ? asset.gzip : asset.body;
    res.writeHead(200, { ...SECURITY_HEADERS, "cache-control": "no-cache", vary: "accept-encoding", ...(gzip ? { "content-encoding": "gzip" } : {}), "content-type": asset.type, "content-length": body.length });
    res.end(body); // no body goes to a HEAD request
  }

  /** An event goes into the history, and out to every live page at once. */
  private onEvent(e: AgentEvent): void {
    const logged = this.events.add(e);
    if (this.pages.size > 0) this.pages.broadcast(`event: event\ndata: ${JSON.stringify(logged)}\n\n`, Date.now());
  }

  /** The health view as JSON, or null (reported) if the pod's counters cannot be read now. */
  private healthJson(): string | null {
    try {
      return JSON.stringify(hmiHealth(this.pod(), this.uplink(), this.rates, this.version));
    } catch (err) {
      this.onError(err);
      return null;
    }
  }

  /** The view as JSON, or null (reported) if the pod cannot be read now. */
  private viewJson(): string | null {
    try {
      const k = this.actions.commander();
      return JSON.stringify(hmiView(this.pod(), this.version, { layout: k.layout, limits: k.limits }));
    } catch (err) {
      this.onError(err);
      return null;
    }
  }

  private live(req: IncomingMessage, res: ServerResponse): void {
    const user = this.actions.userOf(req);
    const refusal = this.pages.refusal(req.socket.remoteAddress ?? "unknown", user);
    if (refusal !== null) return refuse(res, 503, refusal);
    res.writeHead(200, { ...SECURITY_HEADERS, "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive" });
    if (req.method === "HEAD") return void res.end();
    this.pages.add(req, res, user, () => this.stopTimer());
    // EventSource retries after 1 s; the first view, the health view and the history so far go
    // out now, not at the next period: everything a page shows comes over this one connection
    // (only a trend the user asks for is a request of its own)
    res.write("retry: 1000\n\n");
    const view = this.viewJson();
    if (view !== null) res.write(`event: state\ndata: ${view}\n\n`);
    const health = this.healthJson();
    if (health !== null) res.write(`event: health\ndata: ${health}\n\n`);
    res.write(`event: events\ndata: ${JSON.stringify(this.events.query("", "", MAX_EVENTS_PER_REQUEST).reverse())}\n\n`);
    if (this.timer === null) {
      this.ticks = 0;
      this.timer = setInterval(() => this.push(), Math.round(1000 / this.c.updateHz));
    }
  }

  /** One view, computed once, to every live page (and the health view every HEALTH_MS). */
  private push(): void {
    const view = this.viewJson();
    if (view === null) return; // nothing new goes out: the pages mark their data stale
    let frame = `event: state\ndata: ${view}\n\n`;
    if (++this.ticks % Math.max(1, Math.round((HEALTH_MS * this.c.updateHz) / 1000)) === 0) {
      const health = this.healthJson();
      if (health !== null) frame += `event: health\ndata: ${health}\n\n`;
    }
    this.pages.broadcast(frame, Date.now());
  }

  private stopTimer(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  async close(): Promise<void> {
    this.unsubscribe();
    this.stopTimer();
    if (this.sampler !== null) clearInterval(this.sampler);
    this.sampler = null;
    this.pages.endAll();
    const s = this.server;
    this.server = null;
    await closeHttp(s);
  }
}
