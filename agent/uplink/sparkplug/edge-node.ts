// The pod as a Sparkplug B 3.0 edge node (docs/sparkplug.md): the edge node is the pod, its
// devices the CDU and each rack. Topics spBv1.0/<group>/<verb>/<edge node>[/<device>].
//
// A connection of its own, beside the JSON uplink's: the NDEATH must be the Will of the
// connection that carries the births, and the JSON uplink's Will is its retained `state`; and a
// Sparkplug session is ended on purpose (a primary host going offline, §5.5), which must not
// take mission control's signed commands and store-and-forward down with it.
//
// One session per connection: each CONNECT carries a new bdSeq (kept in the state directory,
// so a restart continues it), the NBIRTH repeats it, seq restarts at 0 with each NBIRTH and runs
// to 255 and wraps over every message after it. Births wait for the primary host's STATE when one
// is configured. DATA goes out by exception against the JSON telemetry's deadbands; while there
// is no session it is stored (history.ts) and replayed after the next births, historical.
import { join } from "node:path";
import mqtt, { type MqttClient } from "mqtt";
import { Backoff } from "../../../lib/backoff.js";
import { BrokerList, type BrokerTarget } from "../../../lib/broker-list.js";
import { monoMs } from "../../../lib/clock.js";
import { JsonStateFile } from "../../../lib/json-state-file.js";
import { disableNagle, endOnProtocolError, guardPacketSize, HARD_PACKET_FACTOR, redactUrl, watchBrokerSilence } from "../../../lib/mqtt-connection.js";
import type { Point } from "../../../lib/points.js";
import type { Logger } from "../../log.js";
import type { PodCommands, PodReader, ProblemReporter } from "../../pod-api.js";
import { brokerUrls, type UplinkConfig } from "../schema.js";
import { brokerOptions, type UplinkStats } from "../uplink.js";
import { SparkplugCommands, type CommandCounts } from "./commands.js";
import { DataHistory } from "./history.js";
import { MetricReports } from "./metric-reports.js";
import { deviceLost, sparkplugModel, type DeviceDef, type ModelSource, type PodSample, type SparkplugModel } from "./metrics.js";
import { encodePayload, type UMetric } from "./payload.js";

export const NAMESPACE = "spBv1.0";
/** A STATE message is a few dozen bytes of JSON; anything much longer is not one, and is not parsed. */
const MAX_STATE_BYTES = 1024;
/** STATE messages taken a second (a host publishes one per session change); beyond it they are dropped unread. */
const MAX_STATE_PER_S = 10;
/** Historical metrics per replayed message: ~40 bytes each, so a message stays near 10 KB. */
const REPLAY_METRICS = 256;

export type SparkplugPod = PodReader & PodCommands & ProblemReporter;

export interface SparkplugOptions {
  pod: SparkplugPod;
  /** the uplink's broker connection, its exception deadbands and `sparkplug` */
  uplink: UplinkConfig;
  /** the racks and the CDU as configured, and the identity the NBIRTH carries */
  model: ModelSource;
  /** the JSON uplink's counters, when it runs */
  jsonUplink: () => UplinkStats | null;
  log: Logger;
}

export interface SparkplugStats {
  connected: boolean;
  /** births published on this connection: DATA flows */
  session: boolean;
  /** the primary host's last STATE (null: none configured, or none seen yet) */
  hostOnline: boolean | null;
  bdSeq: number;
  sessions: number;
  births: number;
  messages: number;
  bytes: number;
  /** STATE messages over the rate, dropped unread */
  stateDropped: number;
  /** rebirth requests folded into a later rebirth (uplink.sparkplug.rebirthMinMs) */
  rebirthsFolded: number;
  stored: number;
  dropped: number;
  commands: CommandCounts;
}

export class SparkplugEdgeNode {
  readonly model: SparkplugModel;
  private readonly c: UplinkConfig["sparkplug"];
  private readonly group: string;
  private readonly node: string;
  private readonly bdSeqFile: JsonStateFile<{ bdSeq: number }> | null;
  private bdSeq = -1;
  private seq = 0;
  private client: MqttClient | null = null;
  private session = false;
  private hostOnline: boolean | null = null;
  /** the timestamp of the last online STATE: an offline one older than it is a past session's (§5.5) */
  private hostOnlineTs = -Infinity;
  private readonly born = new Set<string>();
  private readonly reports: MetricReports;
  private readonly history: DataHistory;
  private readonly commands: SparkplugCommands;
  private readonly backoff: Backoff;
  private readonly timers: NodeJS.Timeout[] = [];
  private reconnectTimer: NodeJS.Timeout | null = null;
  /** the uplink's brokers, in the same order: the edge node moves through them on its own connection */
  private readonly brokers: BrokerList;
  private target: BrokerTarget | null = null;
  private stopSilenceWatch: () => void = () => undefined;
  private stopping = false;
  private readonly counts = { sessions: 0, births: 0, messages: 0, bytes: 0, stateDropped: 0, rebirthsFolded: 0 };
  private lastRebirthMs = -Infinity;
  private rebirthTimer: NodeJS.Timeout | null = null;
  private stateIntake = MAX_STATE_PER_S;

  constructor(private readonly o: SparkplugOptions) {
    this.c = o.uplink.sparkplug;
    this.reports = new MetricReports(o.uplink.exception);
    this.group = this.c.groupId;
    this.node = this.c.edgeNodeId ?? o.pod.identity.pod;
    this.model = sparkplugModel(o.model);
    this.history = new DataHistory(this.c.maxStoredMessages);
    const dir = o.pod.identity.stateDir;
    this.bdSeqFile = dir === undefined ? null : new JsonStateFile(join(dir, "sparkplug-bdseq.json"), checkBdSeq);
    this.backoff = new Backoff({ baseMs: o.uplink.reconnect.baseMs, maxMs: o.uplink.reconnect.maxMs });
    this.brokers = new BrokerList(brokerUrls(o.uplink));
    this.commands = new SparkplugCommands(() => this.o.pod, this.model, this.c, o.uplink.maxPacketBytes, () => this.rebirth());
  }

  topic(verb: string, device?: string): string {
    return `${NAMESPACE}/${this.group}/${verb}/${this.node}${device === undefined ? "" : `/${device}`}`;
  }

  private get stateTopic(): string | null {
    return this.c.primaryHostId === undefined ? null : `${NAMESPACE}/STATE/${this.c.primaryHostId}`;
  }

  start(): void {
    const loaded = this.bdSeqFile?.load() ?? {};
    if (loaded.problem !== undefined) this.o.pod.reportProblem("sparkplug:bdseq", { severity: "Warning", source: "sparkplug", message: `bdSeq state unreadable, starting again from 0: ${loaded.problem}`, untilAcknowledged: true });
    if (this.bdSeqFile === null) this.o.log.warn("no state directory: the Sparkplug bdSeq restarts at 0 with the daemon, and a host may take a new NBIRTH for an old session");
    this.bdSeq = loaded.value?.bdSeq ?? -1;
    const ex = this.o.uplink.exception;
    this.timers.push(setInterval(() => this.check(), ex.checkMs));
    if (this.c.refreshMs > 0) this.timers.push(setInterval(() => this.refresh(), this.c.refreshMs));
    this.timers.push(
      setInterval(() => {
        this.commands.refill();
        this.stateIntake = MAX_STATE_PER_S;
      }, 1000),
    );
    void this.connect();
  }

  /** A new connection, a new session, to the broker list's current target: the next bdSeq, saved before the CONNECT that carries it. */
  private async connect(): Promise<void> {
    const target = await this.brokers.current();
    if (this.stopping) return;
    this.bdSeq = (this.bdSeq + 1) % 256;
    try {
      this.bdSeqFile?.save({ bdSeq: this.bdSeq });
    } catch (err) {
      this.o.log.error({ err }, "cannot save the Sparkplug bdSeq: a restart may repeat it");
    }
    const u = this.o.uplink;
    const will = encodePayload({ timestamp: Date.now(), metrics: [{ name: "bdSeq", type: "Int64", value: this.bdSeq }] });
    const client = mqtt.connect(target.url, {
      ...brokerOptions(u),
      ...(target.servername !== undefined && u.tls !== undefined ? { servername: u.tls.servername ?? target.servername } : {}),
      clientId: `${u.clientId ?? `podwarden-${this.o.pod.identity.site}-${this.o.pod.identity.pod}`}-spb`,
      // §5.4: a clean session, and (MQTT 5) a session that expires at once
      clean: true,
      ...(u.protocolVersion === 5 ? { properties: { sessionExpiryInterval: 0, maximumPacketSize: u.maxPacketBytes } } : {}),
      reconnectPeriod: 0,
      will: { topic: this.topic("NDEATH"), payload: Buffer.from(will), qos: 1, retain: false },
    });
    this.client = client;
    this.target = target;
    guardPacketSize(client, HARD_PACKET_FACTOR * u.maxPacketBytes, (o) => this.o.log.warn({ claimedBytes: o.claimedBytes }, "sparkplug: broker sent a packet far over maxPacketBytes: connection ended before reading it"));
    client.on("error", (err) => this.o.log.debug({ err: err.message }, "sparkplug mqtt error"));
    endOnProtocolError(client, (err) => this.o.log.warn({ err: err.message }, "sparkplug: broker sent a packet that breaks the protocol: connection ended"));
    client.on("connect", () => this.onConnect(client));
    client.on("close", () => this.onClose(client));
    client.on("message", (topic, payload) => this.onMessage(client, topic, payload));
    this.stopSilenceWatch();
    this.stopSilenceWatch = watchBrokerSilence(client, u.keepaliveS, (ms, why) => this.o.log.warn({ ms: Math.round(ms), why }, `sparkplug: broker ${why === "silent" ? "silent" : "acknowledges nothing in flight"}: giving up the connection`));
  }

  private onConnect(client: MqttClient): void {
    if (client !== this.client) return;
    this.backoff.reset();
    disableNagle(client);
    this.counts.sessions++;
    this.o.log.info({ url: redactUrl(this.target?.url ?? ""), bdSeq: this.bdSeq, group: this.group, edgeNode: this.node }, "sparkplug connected");
    // §5.4: the NCMD (and DCMD, STATE) subscriptions come before the NBIRTH
    const topics = [this.topic("NCMD"), `${this.topic("DCMD")}/+`, ...(this.stateTopic === null ? [] : [this.stateTopic])];
    client.subscribe(topics, { qos: 1 }, (err) => {
      if (client !== this.client) return;
      if (err !== null && err !== undefined) {
        this.o.log.warn({ err: err.message }, "sparkplug: subscribe refused; ending the connection");
        client.end(true);
        return;
      }
      if (this.stateTopic === null || this.hostOnline === true) this.births();
      else this.o.log.info({ host: this.c.primaryHostId }, "sparkplug: waiting for the primary host to be online before the births");
    });
  }

  private onClose(client: MqttClient): void {
    if (client !== this.client) return;
    if (this.session) this.o.log.warn({ bdSeq: this.bdSeq }, "sparkplug session lost; storing data until the next");
    this.session = false;
    this.born.clear();
    this.brokers.failed();
    this.scheduleReconnect(this.backoff.next());
  }

  private scheduleReconnect(delayMs: number): void {
    if (this.stopping || this.reconnectTimer !== null) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      const old = this.client;
      this.client = null;
      old?.end(true);
      void this.connect();
    }, delayMs);
  }

  private onMessage(client: MqttClient, topic: string, payload: Buffer): void {
    if (client !== this.client) return;
    if (topic === this.stateTopic) return this.onState(payload);
    if (topic === this.topic("NCMD")) return void this.commands.handle(null, payload).catch((err: unknown) => this.o.log.error({ err }, "sparkplug: NCMD failed"));
    const dcmd = `${this.topic("DCMD")}/`;
    if (topic.startsWith(dcmd)) return void this.commands.handle(topic.slice(dcmd.length), payload).catch((err: unknown) => this.o.log.error({ err }, "sparkplug: DCMD failed"));
  }

  /** §5.4 and §5.5: the primary host's STATE (JSON {online, timestamp}). */
  private onState(payload: Buffer): void {
    // rate and size before anything is parsed
    if (this.stateIntake <= 0) {
      this.counts.stateDropped++;
      return;
    }
    this.stateIntake--;
    if (payload.length > MAX_STATE_BYTES) return this.o.log.warn({ bytes: payload.length }, "sparkplug: STATE message too long to be one; ignored");
    let s: unknown;
    try {
      s = JSON.parse(payload.toString("utf8"));
    } catch {
      return this.o.log.warn("sparkplug: STATE message is not JSON; ignored");
    }
    const online = (s as { online?: unknown } | null)?.online;
    const ts = (s as { timestamp?: unknown } | null)?.timestamp;
    if (typeof online !== "boolean" || typeof ts !== "number" || !Number.isFinite(ts)) return this.o.log.warn("sparkplug: STATE message without a boolean online and a numeric timestamp; ignored");
    // an older timestamp is from a host session that has already been replaced
    if (ts < this.hostOnlineTs) return this.o.log.info({ online, timestamp: ts }, "sparkplug: STATE older than the host's last online one; ignored");
    this.hostOnline = online;
    if (online) {
      this.hostOnlineTs = ts;
      if (this.client?.connected === true && !this.session) this.births();
      return;
    }
    if (!this.session) return;
    // §5.5: the host went away: end the session (NDEATH, then disconnect), store, and start over
    this.o.log.warn({ host: this.c.primaryHostId }, "sparkplug: primary host offline; ending the session and storing data until it returns");
    void this.endSession(this.client).finally(() => this.scheduleReconnect(0));
  }

  /** An intentional end (§5.5): NDEATH published, then DISCONNECT (so the broker drops the Will). */
  private async endSession(client: MqttClient | null): Promise<void> {
    this.session = false;
    this.born.clear();
    if (client === null || !client.connected) return;
    const death = encodePayload({ timestamp: Date.now(), metrics: [{ name: "bdSeq", type: "Int64", value: this.bdSeq }] });
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 1000);
      client.publish(this.topic("NDEATH"), Buffer.from(death), { qos: 1, retain: false }, () => {
        clearTimeout(t);
        resolve();
      });
    });
    if (client === this.client) this.client = null;
    await Promise.race([client.endAsync(false).catch(() => undefined), new Promise((r) => setTimeout(r, 1000))]);
    client.end(true);
  }

  /** One reading of the pod for every metric. */
  private sample(): PodSample {
    const points = new Map<string, Point>();
    for (const p of this.o.pod.fieldPoints()) points.set(p.id, p);
    const u = this.o.jsonUplink();
    return {
      status: this.o.pod.status(),
      points,
      budgetKw: this.o.pod.powerBudgetKw(),
      activeAlarms: this.o.pod.activeAlarms().length,
      uplinkSpool: u === null ? null : u.spoolDepth.critical + u.spoolDepth.telemetry,
      stored: this.history.size,
      dropped: this.history.dropped,
      wallMs: Date.now(),
      monoMs: monoMs(),
    };
  }

  /** NBIRTH then every device's DBIRTH, then what was stored (historical), then the DDEATH of each device that cannot be read now. */
  private births(): void {
    const s = this.sample();
    this.seq = 0;
    this.born.clear();
    const node: UMetric[] = [
      { name: "bdSeq", type: "Int64", value: this.bdSeq, timestamp: s.wallMs },
      // §5.17: no alias, so a host that knows no aliases can still ask for a rebirth
      { name: "Node Control/Rebirth", type: "Boolean", value: false, timestamp: s.wallMs },
      ...this.model.node.map((m) => this.reports.birth(m, s)),
    ];
    this.send("NBIRTH", undefined, node, s.wallMs);
    for (const d of this.model.devices) this.deviceBirth(d, s);
    this.session = true;
    this.counts.births++;
    // The stored messages go out merged, per device, up to REPLAY_METRICS metrics a message,
    // each metric with its own time: DATA is QoS 0, and 791 stored messages sent one by one lost
    // all but the first ~200 between mosquitto and a host in a test (the broker drops QoS 0
    // messages it cannot queue for a subscriber)
    const stored = this.history.drain();
    const byDevice = new Map<string | null, UMetric[]>();
    for (const h of stored) {
      const list = byDevice.get(h.device) ?? [];
      for (const m of h.metrics) list.push({ ...m, isHistorical: true });
      byDevice.set(h.device, list);
    }
    for (const [device, metrics] of byDevice) {
      for (let i = 0; i < metrics.length; i += REPLAY_METRICS) {
        const chunk = metrics.slice(i, i + REPLAY_METRICS);
        this.send(device === null ? "NDATA" : "DDATA", device ?? undefined, chunk, s.wallMs);
      }
    }
    for (const d of this.model.devices) if (deviceLost(d, s.points)) this.deviceDeath(d, s.wallMs);
    this.o.log.info({ bdSeq: this.bdSeq, devices: this.born.size, replayedMessages: stored.length }, "sparkplug births published");
  }

  private deviceBirth(d: DeviceDef, s: PodSample): void {
    this.send(
      "DBIRTH",
      d.id,
      d.metrics.map((m) => this.reports.birth(m, s)),
      s.wallMs,
    );
    this.born.add(d.id);
  }

  private deviceDeath(d: DeviceDef, now: number): void {
    this.send("DDEATH", d.id, [], now);
    this.born.delete(d.id);
  }

  /** The exception check: device deaths and rebirths, then what changed, sent or stored. */
  private check(all = false): void {
    if (this.stopping) return;
    const s = this.sample();
    const node = this.reports.changed(this.model.node, s, all);
    if (node.length > 0) this.data(null, node, s.wallMs);
    for (const d of this.model.devices) {
      if (this.session) {
        const lost = deviceLost(d, s.points);
        const born = this.born.has(d.id);
        if (born && lost) {
          this.deviceDeath(d, s.wallMs);
          continue;
        }
        if (!born) {
          if (!lost) this.deviceBirth(d, s);
          continue;
        }
      }
      const metrics = this.reports.changed(d.metrics, s, all);
      if (metrics.length > 0) this.data(d.id, metrics, s.wallMs);
    }
  }

  private refresh(): void {
    if (this.session) this.check(true);
  }

  private data(device: string | null, metrics: UMetric[], now: number): void {
    if (this.session) this.send(device === null ? "NDATA" : "DDATA", device ?? undefined, metrics, now);
    else this.history.add({ device, timestamp: now, metrics });
  }

  /**
   * §5.17: a rebirth request; a node without a session has nothing to rebirth (its next session
   * starts with births). At most one per uplink.sparkplug.rebirthMinMs: requests within it are
   * folded into one rebirth at its end (9,440 requests in 10 s gave 110 NBIRTHs and 990 DBIRTHs).
   */
  private rebirth(): void {
    if (!this.session || this.client?.connected !== true) return;
    const wait = this.lastRebirthMs + this.c.rebirthMinMs - monoMs();
    if (wait <= 0) {
      this.lastRebirthMs = monoMs();
      this.births();
      return;
    }
    this.counts.rebirthsFolded++;
    this.rebirthTimer ??= setTimeout(() => {
      this.rebirthTimer = null;
      this.rebirth();
    }, wait);
  }

  /** Publishes one message with the next seq (births restart it at 0). QoS 0, not retained: §4.2. */
  private send(verb: string, device: string | undefined, metrics: UMetric[], timestamp: number): void {
    const client = this.client;
    if (client === null || !client.connected) return;
    const body = encodePayload({ timestamp, metrics, seq: this.seq });
    this.seq = (this.seq + 1) % 256;
    this.counts.messages++;
    this.counts.bytes += body.length;
    client.publish(this.topic(verb, device), Buffer.from(body.buffer, body.byteOffset, body.byteLength), { qos: 0, retain: false });
  }

  stats(): SparkplugStats {
    return {
      connected: this.client?.connected === true,
      session: this.session,
      hostOnline: this.stateTopic === null ? null : this.hostOnline,
      bdSeq: this.bdSeq,
      ...this.counts,
      stored: this.history.size,
      dropped: this.history.dropped,
      commands: { ...this.commands.counts },
    };
  }

  /** NDEATH published and the connection closed (§5.5); stored data that never went out is lost with the process. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    this.timers.length = 0;
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    if (this.rebirthTimer !== null) clearTimeout(this.rebirthTimer);
    this.rebirthTimer = null;
    this.stopSilenceWatch();
    const client = this.client;
    await this.endSession(client);
    client?.end(true);
    this.client = null;
  }
}

function checkBdSeq(d: unknown): { bdSeq: number } {
  const v = (d as { bdSeq?: unknown } | null)?.bdSeq;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > 255) throw new Error("bdSeq must be an integer 0..255");
  return { bdSeq: v };
}
