// Uplink to mission control over MQTT: the reporting half (docs/mqtt.md).
//   podwarden/<site>/<pod>/state       retained, QoS 1; also the MQTT Will ("offline")
//   podwarden/<site>/<pod>/info        retained, QoS 1: version, config hash, racks, capabilities
//   podwarden/<site>/<pod>/telemetry   QoS 0, periodic snapshot with a sequence number
//   podwarden/<site>/<pod>/alarms      retained, QoS 1: the active alarm set
//   podwarden/<site>/<pod>/events      QoS 1: alarm transitions, mode changes, escalations, with a sequence number
// Retained state is republished on every (re)connect. TCP no-delay is on: with Nagle, loopback
// publishes showed a 35–44 ms tail.
import mqtt, { type MqttClient } from "mqtt";
import type { Agent, AgentEvent } from "../agent.js";
import { packageVersion } from "../version.js";
import type { UplinkConfig } from "./schema.js";

export const topicBase = (site: string, pod: string): string => `podwarden/${site}/${pod}/`;

export class Uplink {
  private client: MqttClient | null = null;
  private timer: NodeJS.Timeout | null = null;
  private telemetrySeq = 0;
  private eventSeq = 0;
  private readonly base: string;
  private readonly since = new Date().toISOString();

  constructor(
    private agent: Agent,
    private readonly c: UplinkConfig,
  ) {
    this.base = topicBase(agent.config.site, agent.config.pod);
  }

  topic(name: string): string {
    return this.base + name;
  }

  private stateMessage(state: "online" | "offline"): string {
    return JSON.stringify({ state, mode: state === "online" ? this.agent.supervisor.mode : "Disabled", since: this.since, timestamp: new Date().toISOString() });
  }

  async start(): Promise<void> {
    const cfg = this.agent.config;
    const client = mqtt.connect(this.c.url, {
      clientId: this.c.clientId ?? `podwarden-${cfg.site}-${cfg.pod}`,
      username: this.c.username,
      password: this.c.password,
      keepalive: this.c.keepaliveS,
      reconnectPeriod: 1000,
      connectTimeout: 5000,
      clean: true,
      will: { topic: this.topic("state"), payload: Buffer.from(this.stateMessage("offline")), qos: 1, retain: true },
    });
    this.client = client;
    client.on("error", () => undefined); // reconnects on its own
    client.on("connect", () => {
      (client.stream as { setNoDelay?: (b: boolean) => void }).setNoDelay?.(true);
      this.publishRetained();
    });
    this.attach(this.agent);
    this.timer = setInterval(() => this.publishTelemetry(), this.c.telemetryMs);
    await new Promise<void>((resolve) => {
      if (client.connected) resolve();
      else client.once("connect", () => resolve());
      setTimeout(resolve, 5000); // an unreachable broker does not hold the agent up
    });
  }

  /** Follows a new agent after a reload replaced it. */
  attach(agent: Agent): void {
    this.agent = agent;
    agent.onEvent((e) => this.onEvent(e));
    if (this.client?.connected === true) this.publishRetained();
  }

  private publish(topic: string, body: unknown, retain: boolean, qos: 0 | 1): void {
    this.client?.publish(this.topic(topic), JSON.stringify(body), { retain, qos });
  }

  private publishRetained(): void {
    const a = this.agent;
    this.client?.publish(this.topic("state"), this.stateMessage("online"), { retain: true, qos: 1 });
    this.publish(
      "info",
      {
        version: packageVersion(),
        configHash: a.configHash,
        site: a.config.site,
        pod: a.config.pod,
        racks: a.config.racks.map((r) => ({ name: r.name, ratedKw: r.ratedKw })),
        capabilities: ["telemetry", "alarms", "events"],
      },
      true,
      1,
    );
    this.publishAlarms();
  }

  private publishAlarms(): void {
    this.publish(
      "alarms",
      {
        timestamp: new Date().toISOString(),
        alarms: this.agent.supervisor.alarms.active().map((x) => ({
          id: x.id,
          severity: x.severity,
          message: x.message,
          source: x.source,
          latched: x.latched,
          acknowledged: x.acknowledged,
          raisedAt: x.raisedAt,
        })),
      },
      true,
      1,
    );
  }

  private onEvent(e: AgentEvent): void {
    this.publish("events", { seq: ++this.eventSeq, timestamp: new Date().toISOString(), ...e }, false, 1);
    if (e.type.startsWith("alarm.")) this.publishAlarms();
    if (e.type === "mode.changed") this.client?.publish(this.topic("state"), this.stateMessage("online"), { retain: true, qos: 1 });
  }

  private publishTelemetry(): void {
    const s = this.agent.status();
    const unitOf = (id: string): string | undefined => this.agent.driver.points.get(id)?.unit;
    this.publish("telemetry", { seq: ++this.telemetrySeq, timestamp: new Date().toISOString(), ...s, units: { temperature: unitOf(this.agent.config.racks[0].points.returnTempC) ?? "°C", flow: "L/min", power: "kW", valve: "%" } }, false, 0);
  }

  /** Publishes "offline" (retained) and disconnects. */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    const c = this.client;
    this.client = null;
    if (c === null) return;
    if (c.connected) {
      await new Promise<void>((resolve) => {
        c.publish(this.topic("state"), this.stateMessage("offline"), { retain: true, qos: 1 }, () => resolve());
        setTimeout(resolve, 1000);
      });
    }
    await c.endAsync(true);
  }
}
