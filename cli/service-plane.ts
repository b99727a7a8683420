// The service plane around a running control plane, as `podwarden run` and the demo both set it
// up: metrics and health, the HMI, the Redfish service, the admin socket, the uplink and Sparkplug
// B, each from its config section, each loaded only when enabled; and one stop order for both.
// A service that cannot start is logged and left out: monitoring and pages must not stop control.
import { join } from "node:path";
import type { AgentConfig } from "../agent/config/load.js";
import type { HmiServer } from "../agent/hmi/server.js";
import type { Logger, Logs } from "../agent/log.js";
import { AdminSocket } from "../agent/ops/admin-socket.js";
import { Metrics } from "../agent/ops/metrics.js";
import type { PodPlane } from "../agent/plane/pod-plane.js";
import type { RedfishServer } from "../agent/redfish/server.js";
import type { SparkplugEdgeNode } from "../agent/uplink/sparkplug/edge-node.js";
import type { Uplink } from "../agent/uplink/uplink.js";
import type { LocalCommands } from "../agent/uplink/command-service.js";
import { packageVersion } from "../agent/version.js";

export interface ServicePlaneOptions {
  logs: Logs;
  /**
   * A port that is taken (metrics, the HMI, Redfish): serve on a free one instead. The demo's, so
   * that it runs beside a daemon; a daemon's ports are the operator's, and a taken one is an error.
   * A function says it per service: the demo's ports set by a flag are never moved.
   */
  freePortIfTaken?: boolean | ((service: "metrics" | "hmi" | "redfish") => boolean);
  /** commands the daemon carries out on this plane (a pushed config: agent/config-push/) */
  localCommands?: LocalCommands;
}

type UplinkConfig = AgentConfig["uplink"];

const url = (scheme: string, host: string, port: number, path: string): string => `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}${path}`;

export class ServicePlane {
  uplink: Uplink | null = null;
  sparkplug: SparkplugEdgeNode | null = null;
  hmi: HmiServer | null = null;
  redfish: RedfishServer | null = null;
  metrics: Metrics | null = null;
  admin: AdminSocket | null = null;
  /** where each HTTP service answers, once it does */
  readonly urls: { metrics?: string; hmi?: string; redfish?: string } = {};
  private readonly log: Logger;

  private constructor(
    private plane: PodPlane,
    private readonly o: ServicePlaneOptions,
  ) {
    this.log = o.logs.module("daemon");
  }

  /**
   * Starts every service the config enables, in the order health answers first: metrics, the HMI,
   * Redfish, the admin socket, then the uplink and Sparkplug (whose first connection may wait for
   * an unreachable broker).
   */
  static async start(plane: PodPlane, c: AgentConfig, o: ServicePlaneOptions): Promise<ServicePlane> {
    const s = new ServicePlane(plane, o);
    try {
      await s.startMetrics(c);
      await s.startHmi(c);
      await s.startRedfish(c);
      await s.startAdmin();
      await s.startUplinks(c.uplink);
    } catch (err) {
      // nothing is left half-started: what did start is closed, and the caller stops the plane
      await s.close();
      throw err;
    }
    return s;
  }

  /** Listens on the configured port, or on a free one if it is taken and the options allow. */
  private async listen(what: "metrics" | "hmi" | "redfish", listen: (port: number | undefined) => Promise<number>, port: number): Promise<number> {
    const free = this.o.freePortIfTaken;
    return await listen(undefined).catch((err: NodeJS.ErrnoException) => {
      if ((free === true || (typeof free === "function" && free(what))) && err.code === "EADDRINUSE" && port !== 0) return listen(0);
      throw err;
    });
  }

  private async startMetrics(c: AgentConfig): Promise<void> {
    if (!c.metrics.enabled) return;
    const m = new Metrics(
      () => this.plane,
      () => this.uplink?.stats() ?? null,
      () => this.hmi?.stats() ?? null,
      () => this.sparkplug?.stats() ?? null,
    );
    try {
      const port = await this.listen("metrics", (p) => m.listen(p === undefined ? c.metrics : { ...c.metrics, port: p }), c.metrics.port);
      this.metrics = m;
      this.urls.metrics = url("http", c.metrics.host, port, "/metrics");
      this.log.info({ host: c.metrics.host, port }, "metrics and health on /metrics, /healthz, /readyz");
    } catch (err) {
      // monitoring must not stop control: run without it, loudly
      this.log.error({ err }, "metrics endpoint could not start; running without it");
      this.leftOut("metrics", err);
      await m.close();
    }
  }

  /**
   * An HTTP service built by `make` for a port (undefined: the configured one), listening there or,
   * if it is taken and the options allow, on a free one. Null when it cannot start: it is logged and
   * left out (a page must not stop control), and what it had opened, its subscription to the pod's
   * events included, is closed.
   */
  private async serve<S extends { listen(): Promise<number>; close(): Promise<void> }>(
    what: "hmi" | "redfish",
    e: { host: string; port: number; tls?: unknown },
    path: string,
    make: (port: number | undefined) => S,
  ): Promise<{ server: S; url: string } | null> {
    // the one being tried: a taken port closes it and makes the next
    const held: { server: S | null } = { server: null };
    try {
      const port = await this.listen(what, async (p) => {
        await held.server?.close();
        held.server = make(p);
        return await held.server.listen();
      }, e.port);
      const u = url(e.tls === undefined ? "http" : "https", e.host, port, path);
      this.log.info({ host: e.host, port, url: u }, `${what} served`);
      return held.server === null ? null : { server: held.server, url: u };
    } catch (err) {
      this.log.error({ err }, `${what} could not start; running without it`);
      this.leftOut(what, err);
      await held.server?.close();
      return null;
    }
  }

  /**
   * A service left out at the start (metrics, the HMI, Redfish, the admin socket: none of them
   * stops control) is an alarm as well as a log line, so that the operator who finds no page
   * sees why on the others, and mission control sees it: service:<what>, until the next start.
   */
  private leftOut(what: string, err: unknown): void {
    const why = (err as NodeJS.ErrnoException).code === "EADDRINUSE" ? "its port is taken" : (err as Error).message;
    this.plane.reportProblem(`service:${what}`, { severity: "Warning", source: what, message: `${what} could not start (${why}); the daemon runs without it until its next start` });
  }

  private async startHmi(c: AgentConfig): Promise<void> {
    if (!c.hmi.enabled) return;
    // loaded only when enabled: a pod without an HMI does not carry it in memory
    const { HmiServer } = await import("../agent/hmi/server.js");
    const served = await this.serve("hmi", c.hmi, "/", (port) =>
      new HmiServer({
        pod: () => this.plane,
        commander: () => this.plane,
        recordingsDir: () => this.plane.recordingsDir,
        uplink: () => this.uplink?.stats() ?? null,
        config: port === undefined ? c.hmi : { ...c.hmi, port },
        version: packageVersion(),
        onError: (err) => this.log.error({ err }, "hmi: cannot read the pod's state or carry out an action"),
      }),
    );
    this.hmi = served?.server ?? null;
    if (served !== null) this.urls.hmi = served.url;
  }

  private async startRedfish(c: AgentConfig): Promise<void> {
    if (!c.redfish.enabled) return;
    // loaded only when enabled, like the HMI
    const { RedfishServer } = await import("../agent/redfish/server.js");
    const served = await this.serve("redfish", c.redfish, "/redfish/v1", (port) => new RedfishServer({ pod: this.plane, racks: c.racks, cdu: c.cdu, version: packageVersion(), nameplate: c.redfish.nameplate }, port === undefined ? c.redfish : { ...c.redfish, port }));
    this.redfish = served?.server ?? null;
    if (served !== null) this.urls.redfish = served.url;
  }

  private async startAdmin(): Promise<void> {
    const dir = this.plane.stateDir;
    if (dir === undefined) return;
    const admin = new AdminSocket(() => this.plane, join(dir, "admin.sock"));
    try {
      await admin.listen();
      this.admin = admin;
    } catch (err) {
      this.log.error({ err }, "admin socket could not start (podwarden reset-leak will not reach this pod)");
      this.leftOut("admin", err);
    }
  }

  /**
   * The uplink and Sparkplug on `c`, each loaded only when configured: a pod without an uplink
   * does not carry mqtt and the command schemas in memory.
   */
  async startUplinks(c: UplinkConfig): Promise<void> {
    if (c === undefined) return;
    const { logs } = this.o;
    if (!c.sparkplug.enabled || c.sparkplug.jsonTopics) {
      const { Uplink } = await import("../agent/uplink/uplink.js");
      this.uplink = new Uplink(this.plane, c, logs.module("uplink"), this.o.localCommands);
      await this.uplink.start();
    }
    // Sparkplug B on a connection of its own (docs/sparkplug.md)
    if (c.sparkplug.enabled) {
      const { SparkplugEdgeNode } = await import("../agent/uplink/sparkplug/edge-node.js");
      const { modelSourceOf } = await import("../agent/uplink/sparkplug/metrics.js");
      const p = this.plane;
      this.sparkplug = new SparkplugEdgeNode({ pod: p, uplink: c, model: modelSourceOf(p.config, p.configHash, packageVersion()), jsonUplink: () => this.uplink?.stats() ?? null, log: logs.module("sparkplug") });
      this.sparkplug.start();
    }
  }

  /** "offline" and the NDEATH go out; a structural reload starts them again on the new config. */
  async stopUplinks(): Promise<void> {
    await this.uplink?.stop();
    await this.sparkplug?.stop();
    this.uplink = null;
    this.sparkplug = null;
  }

  /** The control plane replaced its agent (a structural reload): Redfish serves the new racks. */
  replaced(plane: PodPlane): void {
    this.plane = plane;
    this.redfish?.attach({ pod: plane, racks: plane.config.racks, cdu: plane.config.cdu, version: packageVersion(), nameplate: plane.config.redfish.nameplate });
  }

  /**
   * The one stop order: the control plane first (actuators driven safe, then the device leases
   * hold), then the uplinks ("offline" and the NDEATH go out after the actuators are safe), then
   * the HTTP services and the admin socket.
   */
  async stop(opts: { driveSafe: boolean; reason: string; timeoutMs?: number }): Promise<void> {
    await this.plane.stop(opts);
    await this.close();
  }

  /** Every service closed, the control plane left as it is. */
  private async close(): Promise<void> {
    await this.stopUplinks();
    await this.metrics?.close();
    await this.hmi?.close();
    await this.redfish?.close();
    await this.admin?.close();
  }
}
