// Uplink to mission control over MQTT (docs/mqtt.md). Under podwarden/<site>/<pod>/:
//   state              retained, QoS 1; also the MQTT Will ("offline")
//   info               retained, QoS 1: version, config hash, racks, capabilities
//   alarms             retained, QoS 1: the active alarm set
//   telemetry          QoS 1, periodic snapshots and report-by-exception, seq per message
//   events             QoS 1: alarm transitions, mode changes, trips, command audit, seq per message
//   request/<command>  subscribed: signed commands (commands/)
//   ack                subscribed with uplink.consumerAck: mission control's {"events": n} (consumer-ack.ts)
//   response/<command> QoS 1: the answers
//
// Telemetry and events are written to the on-disk spool first and removed only after their
// PUBACK, so an outage or a restart loses nothing (spool.ts has the overflow policy). Retained
// topics are state, not history: they are republished, current, on every connect.
//
// Connection: one client (one session per client id), reconnecting with exponential backoff and
// jitter (drivers/backoff.ts), to the next broker of uplink.brokers. A hung broker is caught by a
// silence watchdog (watchBrokerSilence in lib/mqtt-connection.ts): no packet at all from the
// broker for 1.45 x keepalive ends the connection, and so does no PUBACK for 3 x keepalive while
// publishes await one (a cluster node cut off from its peers answers pings and acknowledges
// nothing). mqtt.js's own keepalive times out at 1.5x after the last acknowledgement, on an
// interval timer that a busy event loop runs late, so on its own it caught a hang at 1.49-1.53 s
// with keepalive 1 s: at, not within, 1.5x. TCP no-delay is on: with Nagle, loopback publishes
// showed a 35–44 ms tail.
import { tmpdir } from "node:os";
import { join } from "node:path";
import mqtt, { type IClientOptions, type IClientPublishOptions, type MqttClient } from "mqtt";
import { Backoff } from "../../lib/backoff.js";
import { BrokerList, type BrokerTarget } from "../../lib/broker-list.js";
import { LogHistogram } from "../../lib/log-histogram.js";
import { disableNagle, endOnProtocolError, guardPacketSize, HARD_PACKET_FACTOR, mqttConnectionOptions, redactUrl, watchBrokerSilence } from "../../lib/mqtt-connection.js";
import type { AgentEvent, PodCommands, PodReader, ProblemReporter } from "../pod-api.js";
import type { Logger } from "../log.js";
import { CommandService, type LocalCommands } from "./command-service.js";
import { ConsumerAck } from "./consumer-ack.js";
import { alarmsMessage, infoMessage, stateMessage } from "./retained.js";
import { brokerUrls, type UplinkConfig } from "./schema.js";
import { Spool, type SpoolClass } from "./spool.js";
import { subscribeUntilGranted } from "./subscribe-until-granted.js";
import { topicBase, type UplinkStats } from "./uplink-stats.js";
import { ExceptionReporter, periodicTelemetry } from "./telemetry.js";

export { topicBase, type UplinkStats };

/** The MQTT client options for the uplink: the shared connection options and the protocol version. */
export function brokerOptions(c: UplinkConfig): IClientOptions {
  return { ...mqttConnectionOptions(c), protocolVersion: c.protocolVersion };
}

/** What the uplink needs of the pod: to read it, to command it (for mission control's commands), and to report its own problems. */
export type UplinkPod = PodReader & PodCommands & ProblemReporter;

export class Uplink {
  private client: MqttClient | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  private reconnectTimer: NodeJS.Timeout | null = null;
  private restateTimer: NodeJS.Timeout | null = null;
  /** stops asking again for a refused command subscription */
  private cancelSubscribe: () => void = () => undefined;
  private readonly brokers: BrokerList;
  /** the target of the current (or last) connection attempt, and the last that came up */
  private target: BrokerTarget | null = null;
  private lastConnected: string | null = null;
  private firstConnect: () => void = () => undefined;
  private stopSilenceWatch: () => void = () => undefined;
  private backgroundFlush: Promise<void> | null = null;
  private readonly base: string;
  private readonly since = new Date().toISOString();
  private readonly spool: Spool;
  private readonly backoff: Backoff;
  private readonly exceptions: ExceptionReporter;
  private readonly commands: CommandService;
  /** mission control's own acknowledgement of the events, with uplink.consumerAck */
  private readonly consumerAck: ConsumerAck | null;
  private cancelAckSubscribe: () => void = () => undefined;
  private inflight = 0;
  /** publish -> PUBACK, µs: how fast the broker takes what the pod says */
  readonly ackLatency = new LogHistogram();
  private lastAckAtMs: number | null = null;
  private connects = 0;
  /** wall-clock ms the current connection came up: records made before it are historical */
  private connectedAtMs = 0;
  private commandsLive = false;
  private stopping = false;
  private pumping = false;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private agent: UplinkPod,
    private readonly c: UplinkConfig,
    private readonly log: Logger,
    local: LocalCommands = {},
  ) {
    const id = agent.identity;
    this.base = topicBase(id.site, id.pod);
    const dir = id.stateDir ?? join(tmpdir(), `podwarden-${id.site}-${id.pod}`);
    this.spool = new Spool({ dir: join(dir, "spool"), maxBytes: c.spool.maxBytes, segmentBytes: c.spool.segmentBytes });
    this.backoff = new Backoff({ baseMs: c.reconnect.baseMs, maxMs: c.reconnect.maxMs });
    this.brokers = new BrokerList(brokerUrls(c));
    this.exceptions = new ExceptionReporter(c.exception);
    this.commands = new CommandService(() => this.agent, c.commands, this.log, (topic, body, opts) => this.publishNow(topic, body, opts), local);
    this.consumerAck = c.consumerAck.enabled ? new ConsumerAck(this.spool, c.consumerAck, (o, msg) => this.log.warn(o, msg)) : null;
  }

  topic(name: string): string {
    return this.base + name;
  }

  async start(): Promise<void> {
    const opened = this.spool.open();
    if (this.agent.identity.stateDir === undefined) this.log.warn("no state directory: the spool lives under the temporary directory and may not survive a reboot");
    if (opened.quarantined.length > 0) {
      const { critical, telemetry } = opened.lost;
      const lost = critical + telemetry > 0 ? ` ${critical} events and ${telemetry} telemetry messages lost (their seq numbers are never reused: a consumer sees the gap);` : "";
      this.agent.reportProblem("uplink:spool-corrupt", { severity: "Critical", source: "uplink", message: `store-and-forward spool damaged:${lost} ${opened.quarantined.join("; ")}`, untilAcknowledged: true });
    }
    if (opened.tornTail) this.log.warn("spool: an incomplete last record (a write cut short) was cut off");
    if (opened.pending.critical + opened.pending.telemetry > 0) this.log.info({ pending: opened.pending }, "spool: records from before the restart will be sent");
    this.commands.start();
    if (this.commands.problem !== null) this.agent.reportProblem("uplink:commands", { severity: "Warning", source: "uplink", message: `commands: ${this.commands.problem}`, untilAcknowledged: true });

    this.attach(this.agent);
    this.timers.push(setInterval(() => this.publishTelemetry(), this.c.telemetryMs));
    if (this.c.exception.enabled) this.timers.push(setInterval(() => this.publishExceptions(), this.c.exception.checkMs));
    if (this.c.spool.fsyncMs > 0) this.timers.push(setInterval(() => this.flushSpoolInBackground(), this.c.spool.fsyncMs));
    if (this.consumerAck !== null) this.timers.push(setInterval(() => this.resendIfDue(), 1000));
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, Math.min(5000, this.c.connectTimeoutMs)); // an unreachable broker does not hold the agent up
      this.firstConnect = () => {
        clearTimeout(t);
        resolve();
      };
      void this.connect();
    });
  }

  /** A connection attempt to the broker list's current target: a new client, so a new socket to wherever the list now points. */
  private async connect(): Promise<void> {
    const target = await this.brokers.current();
    if (this.stopping) return;
    const id = this.agent.identity;
    const client = mqtt.connect(target.url, {
      ...brokerOptions(this.c),
      // an address resolved from a name: the certificate still has to carry the name
      ...(target.servername !== undefined && this.c.tls !== undefined ? { servername: this.c.tls.servername ?? target.servername } : {}),
      clientId: this.c.clientId ?? `podwarden-${id.site}-${id.pod}`,
      reconnectPeriod: 0, // reconnects are ours: backoff with jitter, and the next broker
      clean: true,
      will: { topic: this.topic("state"), payload: Buffer.from(stateMessage("will", this.agent, this.since)), qos: 1, retain: true },
    });
    this.client = client;
    this.target = target;
    guardPacketSize(client, HARD_PACKET_FACTOR * this.c.maxPacketBytes, (o) => this.log.warn({ claimedBytes: o.claimedBytes, maxPacketBytes: this.c.maxPacketBytes }, "broker sent a packet far over maxPacketBytes: connection ended before reading it"));
    client.on("error", (err) => this.log.debug({ err: err.message, broker: redactUrl(target.url) }, "mqtt error"));
    endOnProtocolError(client, (err) => this.log.warn({ err: err.message, broker: redactUrl(target.url) }, "broker sent a packet that breaks the protocol: connection ended"));
    client.on("connect", () => this.onConnect(client));
    client.on("close", () => this.onClose(client));
    client.on("message", (topic, payload, packet) => (this.consumerAck !== null && topic === this.topic("ack") ? this.consumerAck.handle(payload) : this.commands.handle(topic.slice(this.base.length), payload, packet)));
    this.stopSilenceWatch();
    this.stopSilenceWatch = watchBrokerSilence(client, this.c.keepaliveS, (ms, why) =>
      this.log.warn(
        { [why === "silent" ? "silentMs" : "unacknowledgedMs"]: Math.round(ms), keepaliveS: this.c.keepaliveS, inflight: this.inflight, broker: redactUrl(target.url) },
        why === "silent" ? "broker silent: giving up the connection" : "broker acknowledges none of the messages in flight: giving up the connection",
      ),
    );
  }

  private onConnect(client: MqttClient): void {
    if (client !== this.client) return;
    this.connects++;
    this.connectedAtMs = Date.now();
    this.backoff.reset();
    disableNagle(client);
    const switched = this.target !== null && this.lastConnected !== null && this.target.url !== this.lastConnected;
    this.lastConnected = this.target?.url ?? null;
    this.log.info({ url: redactUrl(this.target?.url ?? ""), connects: this.connects, switched }, "uplink connected");
    if (!this.c.commands.enabled) this.firstConnect();
    this.publishRetained();
    // A broker the pod left while it still ran (silent to the pod, or cut off from it) publishes
    // the pod's Will ("offline", retained) once its keepalive runs out, 1.5x after the pod's last
    // packet to it: on a cluster or a bridge that overwrites the "online" just sent. The state is
    // said once more after that moment, so the retained truth is the last word.
    if (switched) {
      if (this.restateTimer !== null) clearTimeout(this.restateTimer);
      this.restateTimer = setTimeout(() => {
        this.restateTimer = null;
        if (client === this.client && client.connected) this.publishNow(this.topic("state"), stateMessage("online", this.agent, this.since), { retain: true, qos: 1 });
      }, 2000 * this.c.keepaliveS);
    }
    // QoS 0: a command is acknowledged by its response, and its sender re-sends without one. At
    // QoS 1, mosquitto 2.0 kept requests above our maximumPacketSize in our in-flight window and
    // after 20 delivered nothing more (test/fuzz-mqtt-commands.test.ts): a silenced command channel
    this.commandsLive = false;
    this.cancelSubscribe();
    if (this.c.commands.enabled)
      this.cancelSubscribe = subscribeUntilGranted(
        client,
        this.topic("request/+"),
        0,
        () => {
          if (client !== this.client) return;
          this.commandsLive = true;
          // start() is done once the pod can hear commands, not merely once it is connected
          this.firstConnect();
        },
        (o) => this.log.warn({ ...o, broker: redactUrl(this.target?.url ?? "") }, "broker refused the command subscription: asking again"),
      );
    this.cancelAckSubscribe();
    if (this.consumerAck !== null) this.cancelAckSubscribe = this.consumerAck.connected(client, this.topic("ack"));
    this.pump();
  }

  /** The connection closed (lost, refused, or given up by the silence watchdog): spool, and retry after a backoff. */
  private onClose(client: MqttClient): void {
    if (client !== this.client) return;
    this.commandsLive = false;
    this.cancelSubscribe();
    this.cancelAckSubscribe();
    // what was in flight is sent again from the spool: keep mqtt.js from also resending it
    for (const id of Object.keys(client.outgoing)) client.removeOutgoingMessage(Number(id));
    this.inflight = 0;
    this.spool.rewind();
    if (this.stopping || this.reconnectTimer !== null) return;
    // lost, refused or silent: the next attempt goes to the next broker (the spool, its seq
    // numbers and the replay guard are the pod's, not the connection's: they carry over)
    this.brokers.failed();
    const delay = this.backoff.next();
    this.log.warn({ retryInMs: Math.round(delay), attempt: this.backoff.attempts, broker: redactUrl(this.target?.url ?? "") }, "uplink disconnected; spooling");
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (this.stopping) return;
      this.client = null; // first: ending it must not count as another loss
      client.end(true);
      void this.connect();
    }, delay);
  }

  /** Follows a new agent after a reload replaced it. */
  attach(agent: UplinkPod): void {
    this.unsubscribe?.();
    this.agent = agent;
    this.unsubscribe = agent.onEvent((e) => this.onEvent(e));
    if (this.client?.connected === true) this.publishRetained();
  }

  /** Publishes now if connected (retained state, responses): not spooled. */
  private publishNow(topic: string, body: string, opts: IClientPublishOptions): void {
    if (this.client?.connected === true) this.client.publish(topic, body, opts);
  }

  private publishRetained(): void {
    this.publishNow(this.topic("state"), stateMessage("online", this.agent, this.since), { retain: true, qos: 1 });
    this.publishNow(this.topic("info"), infoMessage(this.agent, this.c, this.commands.names()), { retain: true, qos: 1 });
    this.publishAlarms();
  }

  private publishAlarms(): void {
    this.publishNow(this.topic("alarms"), alarmsMessage(this.agent), { retain: true, qos: 1 });
  }

  /** Spools a message, then sends what the spool holds. `content` gets seq and timestamp. */
  private spoolAndSend(cls: SpoolClass, topic: string, content: Record<string, unknown>): void {
    const ts = Date.now();
    try {
      const { dropped } = this.spool.append(cls, this.topic(topic), (seq) => JSON.stringify({ seq, timestamp: new Date(ts).toISOString(), ...content }), ts);
      this.agent.resolveProblem("uplink:spool-write");
      if (dropped.telemetry > 0) this.log.warn({ dropped: dropped.telemetry, total: this.spool.dropped().telemetry }, "spool full: oldest telemetry dropped");
      if (dropped.critical > 0) {
        this.agent.reportProblem("uplink:spool-overflow", { severity: "Critical", source: "uplink", message: `store-and-forward spool full: ${this.spool.dropped().critical} events dropped (oldest first)`, untilAcknowledged: true });
      }
    } catch (err) {
      // the disk refused (full, read-only): send live if possible, and say so
      this.agent.reportProblem("uplink:spool-write", { severity: "Critical", source: "uplink", message: `cannot write the store-and-forward spool: ${(err as Error).message}` });
      this.publishNow(this.topic(topic), JSON.stringify({ seq: null, timestamp: new Date(ts).toISOString(), historical: false, ...content }), { qos: 1 });
      return;
    }
    if (this.c.spool.fsyncMs === 0) this.flushSpool();
    this.pump();
  }

  /** The periodic flush, off the event loop; a round still running when the next is due covers it. */
  private flushSpoolInBackground(): void {
    if (this.backgroundFlush !== null) return;
    this.backgroundFlush = this.spool
      .flushInBackground()
      .catch((err: unknown) => this.log.error({ err }, "spool flush failed"))
      .finally(() => (this.backgroundFlush = null));
  }

  private flushSpool(): void {
    try {
      this.spool.flush();
    } catch (err) {
      this.log.error({ err }, "spool flush failed");
    }
  }

  /**
   * Sends spooled records while connected, up to maxInflight awaiting PUBACK. Records sent
   * right after they were made are live; anything older than the connection is historical.
   */
  private pump(): void {
    const client = this.client;
    if (this.pumping || client === null || !client.connected) return;
    this.pumping = true;
    try {
      const window = this.c.spool.maxInflight;
      let sent = 0;
      while (this.inflight < window && sent < window) {
        let t;
        try {
          t = this.spool.take();
        } catch (err) {
          // a spool file damaged while running: say so and stop sending from it, rather than throw
          this.agent.reportProblem("uplink:spool-read", { severity: "Critical", source: "uplink", message: `cannot read the store-and-forward spool: ${(err as Error).message}` });
          break;
        }
        this.agent.resolveProblem("uplink:spool-read");
        if (t === undefined) break;
        const { cls, record } = t;
        const historical = record.ts < this.connectedAtMs;
        // the body is JSON object text: the flag goes in before its closing brace
        // with consumerAck an event also says what mission control has acknowledged so far: a
        // consumer meeting the pod for the first time counts from there (fleet/seq-ledger.ts)
        const acked = cls === "critical" && this.consumerAck !== null ? `,"acked":${this.spool.acked("critical")}` : "";
        const body = `${record.body.slice(0, -1)},"historical":${historical}${acked}}`;
        this.inflight++;
        sent++;
        const sentAt = performance.now();
        client.publish(record.topic, body, { qos: 1 }, (err) => {
          if (client !== this.client) return;
          this.inflight = Math.max(0, this.inflight - 1);
          if (err === undefined || err === null) {
            this.spool.ack(cls, record.id);
            this.ackLatency.record((performance.now() - sentAt) * 1000);
            this.lastAckAtMs = Date.now();
          }
          if (this.inflight === 0 || this.inflight < window / 2) setImmediate(() => this.pump());
        });
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Mission control has not acknowledged the held events for a while: they go again (consumer-ack.ts). */
  private resendIfDue(): void {
    if (this.client?.connected !== true || this.consumerAck?.due() !== true) return;
    this.spool.rewindClass("critical");
    this.pump();
  }

  private onEvent(e: AgentEvent): void {
    this.spoolAndSend("critical", "events", { ...e });
    // maintenance changes which alarms are suppressed: the retained list says so at once
    if (e.type.startsWith("alarm.") || e.type === "maintenance.changed") this.publishAlarms();
    if (e.type === "mode.changed" || e.type === "maintenance.changed") this.publishNow(this.topic("state"), stateMessage("online", this.agent, this.since), { retain: true, qos: 1 });
  }

  private publishTelemetry(): void {
    this.spoolAndSend("telemetry", "telemetry", periodicTelemetry(this.agent));
    this.exceptions.reportedAll(this.agent.fieldPoints());
  }

  private publishExceptions(): void {
    const points = this.exceptions.changed(this.agent.fieldPoints());
    if (points !== null) this.spoolAndSend("telemetry", "telemetry", { kind: "exception", points });
  }

  stats(): UplinkStats {
    return {
      connected: this.client?.connected === true,
      connects: this.connects,
      broker: this.target === null ? null : redactUrl(this.target.url),
      brokerSwitches: this.brokers.switches,
      spoolDepth: this.spool.depth(),
      spoolBytes: this.spool.bytes,
      spoolDropped: this.spool.dropped(),
      spoolLost: this.spool.lost(),
      lastSeq: this.spool.lastSeq(),
      inflight: this.inflight,
      ackUs: { p50: this.ackLatency.percentile(0.5), p99: this.ackLatency.percentile(0.99) },
      lastAckAt: this.lastAckAtMs === null ? null : new Date(this.lastAckAtMs).toISOString(),
      commands: this.commands.stats(),
      commandsLive: this.commandsLive && this.client?.connected === true,
      ...(this.consumerAck === null ? {} : { consumerAck: this.consumerAck.stats() }),
    };
  }

  /** Publishes "offline" (retained), flushes the spool and disconnects. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    this.timers.length = 0;
    this.stopSilenceWatch();
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    if (this.restateTimer !== null) clearTimeout(this.restateTimer);
    this.cancelSubscribe();
    this.cancelAckSubscribe();
    this.unsubscribe?.();
    this.commands.stop();
    const c = this.client;
    if (c !== null && c.connected) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 1000);
        c.publish(this.topic("state"), stateMessage("stopped", this.agent, this.since), { retain: true, qos: 1 }, () => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    this.client = null;
    // A DISCONNECT, not a dropped socket: a broker publishes the Will on anything else, which
    // would overwrite the "stopped" state just published with "connection lost". A broker that
    // does not take the DISCONNECT within a second is cut off (and its Will is then the truth).
    if (c !== null) {
      let cut: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((resolve) => (cut = setTimeout(() => resolve(true), 1000)));
      const tooLate = await Promise.race([c.endAsync(false).then(() => false, () => false), late]);
      clearTimeout(cut);
      // a second end() is ignored while one is under way: cut the socket itself
      if (tooLate) c.stream.destroy();
    }
    await this.backgroundFlush; // the only background flush: the closing one comes after it
    this.spool.close();
  }
}
