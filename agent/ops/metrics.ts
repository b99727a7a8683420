// Prometheus metrics and health endpoints, on 127.0.0.1 by default (docs/operations.md).
//   GET /metrics   prom-client registry, names prefixed podwarden_, base units
//   GET /healthz   200 while the control loop is healthy, 503 otherwise
//   GET /readyz    200 once the agent runs with valid outputs (mode not Starting/Failsafe)
// Values are collected when scraped, so nothing here runs between scrapes.
import { createServer, type Server } from "node:http";
import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";
import { measuredValue, QUALITIES } from "../../lib/points.js";
import { closeHttp, listenHttp } from "../../lib/http-server.js";
import type { PodDiagnostics, PodReader } from "../pod-api.js";
import { inFailsafe } from "../../pod/status-words.js";
import type { PlaneCounts } from "../plane/control-plane.js";
import type { ValveHealthView } from "../../pod/status-view.js";
import type { StrokeResult } from "../health/isolation-stroke.js";
import type { MetricsConfig } from "./metrics-schema.js";
import { controlMetrics } from "./control-metrics.js";
import { busMetrics, redfishMetrics } from "./field-metrics.js";
import { hmiMetrics, sparkplugMetrics, uplinkMetrics } from "./service-metrics.js";
import type { UplinkStats } from "../uplink/uplink.js";
import type { SparkplugStats } from "../uplink/sparkplug/edge-node.js";
import type { HmiStats } from "../hmi/server.js";

const MODES = ["Starting", "Running", "Degraded", "Failsafe"];
/** What metrics read of the pod; the daemon's also says what its queues between the planes refused and dropped. */
export type MetricsPod = PodReader & PodDiagnostics & { planeCounts?(): PlaneCounts };

export class Metrics {
  readonly registry = new Registry();
  private server: Server | null = null;

  constructor(
    private agent: () => MetricsPod,
    private uplink: () => UplinkStats | null = () => null,
    private readonly hmi: () => HmiStats | null = () => null,
    private sparkplug: () => SparkplugStats | null = () => null,
  ) {
    const r = this.registry;
    collectDefaultMetrics({ register: r, prefix: "podwarden_" });
    const a = (): MetricsPod => this.agent();
    new Gauge({
      name: "podwarden_point_value",
      help: "Latest value of every field point, in its engineering unit",
      labelNames: ["point", "unit"],
      registers: [r],
      collect() {
        this.reset();
        for (const p of a().fieldPoints()) {
          const v = measuredValue(p);
          if (v !== null) this.set({ point: p.id, unit: p.unit ?? "" }, v);
        }
      },
    });
    new Gauge({
      name: "podwarden_point_quality",
      help: "1 for the point's current quality (good, timeout, offline, ...)",
      labelNames: ["point", "quality"],
      registers: [r],
      collect() {
        this.reset();
        for (const p of a().fieldPoints()) for (const q of QUALITIES) if (q === p.quality) this.set({ point: p.id, quality: q }, 1);
      },
    });
    new Gauge({
      name: "podwarden_valve_position_ratio",
      help: "Commanded control valve position (0..1) per rack",
      labelNames: ["rack"],
      registers: [r],
      collect() {
        this.reset();
        for (const x of a().status().racks) if (Number.isFinite(x.valvePct)) this.set({ rack: x.name }, x.valvePct / 100);
      },
    });
    // control-valve health (agent/health): racks whose valve is watched and has shown the figure
    const valveGauge = (name: string, help: string, pick: (v: ValveHealthView) => number | null): void => {
      new Gauge({
        name,
        help,
        labelNames: ["rack"],
        registers: [r],
        collect() {
          this.reset();
          for (const x of a().status().racks) {
            const v = x.valveHealth === null ? null : pick(x.valveHealth);
            if (v !== null) this.set({ rack: x.name }, v);
          }
        },
      });
    };
    valveGauge("podwarden_valve_stick_band_ratio", "A control valve's stiction, or its dead band's width, as a fraction of travel (from its position feedback)", (v) => (v.stickBandPct === null ? null : v.stickBandPct / 100));
    valveGauge("podwarden_valve_travel_seconds", "A control valve's full-stroke time, as last seen stroking", (v) => v.travelS);
    valveGauge("podwarden_valve_stuck", "1 while a control valve's position stays frozen against its command", (v) => (v.stuck ? 1 : 0));
    valveGauge("podwarden_valve_tracking_error_ratio", "A control valve's command minus its position feedback, as a fraction of travel", (v) => (v.trackingErrorPct === null ? null : v.trackingErrorPct / 100));
    // isolation valves' partial-stroke tests (agent/health/isolation-strokes.ts): each valve's last verdict
    const strokeGauge = (name: string, help: string, pick: (v: StrokeResult) => number | null): void => {
      new Gauge({
        name,
        help,
        labelNames: ["rack", "valve"],
        registers: [r],
        collect() {
          this.reset();
          for (const s of a().strokeStatus().last) {
            const v = pick(s);
            if (v !== null) this.set({ rack: s.rack, valve: s.valve }, v);
          }
        },
      });
    };
    strokeGauge("podwarden_isolation_stroke_failed", "1 when an isolation valve failed its last partial-stroke test", (s) => (s.state === "failed" ? 1 : 0));
    strokeGauge("podwarden_isolation_stroke_breakaway_seconds", "From the close command to the open limit switch clearing, at an isolation valve's last partial-stroke test", (s) => (s.breakawayMs === undefined ? null : s.breakawayMs / 1000));
    strokeGauge("podwarden_isolation_stroke_return_seconds", "From the open command to the open limit switch made again, at an isolation valve's last partial-stroke test", (s) => (s.returnMs === undefined ? null : s.returnMs / 1000));
    strokeGauge("podwarden_isolation_stroke_timestamp_seconds", "When an isolation valve's last partial-stroke test started, Unix time", (s) => Date.parse(s.startedAt) / 1000);
    new Gauge({
      name: "podwarden_isolation_valves_open",
      help: "1 when both isolation valves of a rack are commanded open",
      labelNames: ["rack"],
      registers: [r],
      collect() {
        this.reset();
        for (const x of a().status().racks) this.set({ rack: x.name }, x.supplyIsolationOpen && x.returnIsolationOpen ? 1 : 0);
      },
    });
    const pumpGauge = (name: string, help: string, pick: (role: string) => boolean): void => {
      new Gauge({
        name,
        help,
        labelNames: ["pump"],
        registers: [r],
        collect() {
          this.reset();
          for (const p of a().status().pump.pumps) this.set({ pump: p.name }, pick(p.role) ? 1 : 0);
        },
      });
    };
    pumpGauge("podwarden_pump_running", "1 while a CDU pump is commanded to run (the lead, or the old lead through a rotation's overlap)", (role) => role !== "standby");
    pumpGauge("podwarden_pump_lead", "1 for the CDU pump that leads", (role) => role === "lead");
    new Gauge({
      name: "podwarden_loop_failsafe",
      help: "1 while a rack's control loop is in fail-safe",
      labelNames: ["rack"],
      registers: [r],
      collect() {
        this.reset();
        for (const x of a().status().racks) this.set({ rack: x.name }, inFailsafe(x.loopStatus) ? 1 : 0);
      },
    });
    new Gauge({
      name: "podwarden_alarms_active",
      help: "Active alarms by severity",
      labelNames: ["severity"],
      registers: [r],
      collect() {
        const all = a().activeAlarms();
        for (const s of ["Warning", "Critical"]) this.set({ severity: s }, all.filter((x) => x.severity === s).length);
      },
    });
    new Gauge({
      name: "podwarden_alarms_suppressed",
      help: "Active alarms suppressed by maintenance (also counted in podwarden_alarms_active)",
      registers: [r],
      collect() {
        this.set(a().activeAlarms().filter((x) => x.suppressed).length);
      },
    });
    new Gauge({
      name: "podwarden_alarms_chattering",
      help: "Alarms raised more than supervisor.alarmChatter.maxRaises times within its window (ISA-18.2 chattering)",
      registers: [r],
      collect() {
        this.set(a().status().alarms.chattering.length);
      },
    });
    new Counter({
      name: "podwarden_alarms_raised_total",
      help: "Alarms raised since the start",
      registers: [r],
      collect() {
        this.reset();
        this.inc(a().status().alarms.raisedTotal);
      },
    });
    new Gauge({
      name: "podwarden_maintenance",
      help: "1 while an operator has the pod in maintenance",
      registers: [r],
      collect() {
        this.set(a().status().maintenance ? 1 : 0);
      },
    });
    new Gauge({
      name: "podwarden_mode",
      help: "1 for the pod's current mode",
      labelNames: ["mode"],
      registers: [r],
      collect() {
        const m = a().mode();
        for (const x of MODES) this.set({ mode: x }, x === m ? 1 : 0);
      },
    });
    controlMetrics(r, a);
    const outcomes = ["ok", "timeouts", "exceptions", "corrupt", "collisions", "disconnected", "offlineSkips", "retries"] as const;
    new Counter({
      name: "podwarden_modbus_requests_total",
      help: "Modbus requests per device by outcome",
      labelNames: ["device", "outcome"],
      registers: [r],
      collect() {
        this.reset();
        for (const d of a().modbusStats().devices) for (const o of outcomes) this.inc({ device: d.name, outcome: o }, d.stats[o]);
      },
    });
    const ingestOutcomes = ["messages", "rejected", "retainedIgnored", "outOfOrder", "oversized"] as const;
    new Counter({
      name: "podwarden_mqtt_ingest_messages_total",
      help: "MQTT sensor ingest: messages received, samples rejected (no number, no valid time), retained messages ignored, samples older than the point's, messages beyond maxPacketBytes refused unparsed",
      labelNames: ["outcome"],
      registers: [r],
      collect() {
        this.reset();
        const i = a().ingestStats();
        if (i !== null) for (const o of ingestOutcomes) this.inc({ outcome: o }, i[o]);
      },
    });
    new Gauge({
      name: "podwarden_mqtt_ingest_connected",
      help: "1 while the MQTT sensor ingest's broker connection is up (absent without mqttIngest)",
      registers: [r],
      collect() {
        this.reset();
        const i = a().ingestStats();
        if (i !== null) this.set(i.connected ? 1 : 0);
      },
    });
    new Counter({
      name: "podwarden_mqtt_ingest_silent_broker_drops_total",
      help: "MQTT sensor ingest connections given up because the broker sent nothing for 1.45 keepalives",
      registers: [r],
      collect() {
        this.reset();
        const i = a().ingestStats();
        if (i !== null) this.inc(i.silentBrokerDrops);
      },
    });
    new Counter({
      name: "podwarden_mqtt_ingest_protocol_error_drops_total",
      help: "MQTT sensor ingest connections ended on a packet that breaks the protocol (a malformed packet, a second CONNACK)",
      registers: [r],
      collect() {
        this.reset();
        const i = a().ingestStats();
        if (i !== null) this.inc(i.protocolErrorDrops);
      },
    });
    new Gauge({
      name: "podwarden_modbus_request_duration_seconds",
      help: "Modbus request duration quantiles per device",
      labelNames: ["device", "quantile"],
      registers: [r],
      collect() {
        this.reset();
        for (const d of a().modbusStats().devices) {
          if (d.stats.latency.count === 0) continue;
          for (const q of [0.5, 0.99]) this.set({ device: d.name, quantile: String(q) }, d.stats.latency.percentile(q * 100) / 1e9);
        }
      },
    });
    new Gauge({
      name: "podwarden_modbus_device_up",
      help: "1 while a device is connected and its circuit breaker closed",
      labelNames: ["device"],
      registers: [r],
      collect() {
        this.reset();
        for (const d of a().modbusStats().devices) this.set({ device: d.name }, d.connected && d.breaker === "closed" ? 1 : 0);
      },
    });
    redfishMetrics(r, () => this.agent().redfishStats());
    busMetrics(r, () => this.agent().modbusStats().buses);
    uplinkMetrics(r, () => this.uplink());
    hmiMetrics(r, () => this.hmi());
    sparkplugMetrics(r, () => this.sparkplug());
  }

  /** Follows a new agent (and uplink) after a reload replaced them. */
  attach(agent: () => MetricsPod, uplink: () => UplinkStats | null = this.uplink, sparkplug: () => SparkplugStats | null = this.sparkplug): void {
    this.agent = agent;
    this.uplink = uplink;
    this.sparkplug = sparkplug;
  }

  async listen(c: MetricsConfig): Promise<number> {
    const server = createServer((req, res) => {
      const path = (req.url ?? "/").split("?")[0];
      const agent = this.agent();
      if (path === "/metrics") {
        this.registry.metrics().then(
          (text) => {
            res.writeHead(200, { "content-type": this.registry.contentType });
            res.end(text);
          },
          (err: Error) => {
            res.writeHead(500);
            res.end(err.message);
          },
        );
        return;
      }
      if (path === "/healthz") {
        const ok = agent.healthy();
        res.writeHead(ok ? 200 : 503, { "content-type": "application/json" });
        res.end(JSON.stringify({ healthy: ok, mode: agent.mode() }));
        return;
      }
      if (path === "/readyz") {
        const m = agent.mode();
        const ok = agent.healthy() && m !== "Starting" && m !== "Failsafe";
        res.writeHead(ok ? 200 : 503, { "content-type": "application/json" });
        res.end(JSON.stringify({ ready: ok, mode: m }));
        return;
      }
      res.writeHead(404);
      res.end();
    });
    this.server = server;
    return await listenHttp(server, c);
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    await closeHttp(s);
  }
}
