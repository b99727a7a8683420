// Fleet load without a daemon per pod: an emulated pod says on MQTT what a real podwarden says,
// played from a real daemon's recorded session (session.ts): the same topics, Will and retained
// state, the same telemetry and events at the same rates and sizes, numbered as a pod numbers
// them (per class from 1, never reused, kept until PUBACK and sent again after a reconnect, so
// delivery is at least once and a gap at mission control is a loss). It moves through its broker
// list on a lost connection as a pod does (lib/broker-list.ts), answers signed commands (the
// signature, the pod, the key's sequence number checked; carried out as nothing, answered and
// audited as a pod answers), and is driven to fault on cue: an alarm, a dropped connection (its
// Will), silence.
//
// What it is not: a pod. Its queue is in memory (a restart loses what was unacknowledged), it
// controls nothing, and its answers carry no pod data. One process runs a thousand of them.
import { randomUUID, type KeyObject } from "node:crypto";
import mqtt, { type MqttClient } from "mqtt";
import { Backoff } from "../lib/backoff.js";
import { BrokerList } from "../lib/broker-list.js";
import { validateBody, validateEnvelope, isCommandName } from "../agent/commands/schema.js";
import { parsePublicKey, verifyEnvelope } from "../agent/commands/signing.js";
import type { PodSession, SessionKind } from "./session.js";

export interface EmulatorOptions {
  session: PodSession;
  site: string;
  pod: string;
  brokers: string[];
  protocolVersion: 4 | 5;
  keepaliveS?: number;
  reconnect?: { baseMs: number; maxMs: number };
  /** keys whose signed commands it answers */
  keys?: { id: string; publicKey: string }[];
  /** where in the session it starts, ms: a thousand pods are not in step */
  phaseMs?: number;
  /** QoS 1 messages awaiting PUBACK at once (default 64) */
  maxInflight?: number;
  /**
   * Plays one telemetry message in every n of the recording (default 1: all of them). A thinned
   * pod is not the recorded pod's rate: for a load beyond what a machine carries at that rate
   * (the fleet bench says which), never for a capacity figure. Events are never thinned.
   */
  telemetryEvery?: number;
}

export type EmulatorFault = "alarm" | "disconnect" | "silent" | "resume";

interface Queued {
  kind: SessionKind;
  seq: number;
  topic: string;
  body: string;
  sent: boolean;
}

export interface EmulatorStats {
  connected: boolean;
  connects: number;
  brokerSwitches: number;
  lastSeq: Record<SessionKind, number>;
  /** messages not yet acknowledged */
  queued: number;
  commands: { answered: number; rejected: number };
}

/** Requests taken per second (as a pod's uplink.commands.maxPerS), and the largest read. */
const MAX_REQUESTS_PER_S = 50;
const MAX_REQUEST_BYTES = 16 * 1024;

export class EmulatedPod {
  private client: MqttClient | null = null;
  private readonly base: string;
  private readonly since = new Date().toISOString();
  private readonly brokers: BrokerList;
  private readonly backoff: Backoff;
  private readonly queue: Queued[] = [];
  private readonly seq: Record<SessionKind, number> = { telemetry: 0, events: 0 };
  private readonly keys = new Map<string, KeyObject>();
  private readonly highWater = new Map<string, number>();
  /** what the broker acknowledged (PUBACK), by class: every seq up to `upTo`, and those above it */
  private readonly acked: Record<SessionKind, { upTo: number; above: Set<number> }> = { telemetry: { upTo: 0, above: new Set() }, events: { upTo: 0, above: new Set() } };
  private inflight = 0;
  private connects = 0;
  private index = 0;
  private telemetryPlayed = 0;
  private cycleStart = 0;
  private playTimer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private refill: NodeJS.Timeout | null = null;
  private intake = MAX_REQUESTS_PER_S;
  private silent = false;
  private stopping = false;
  private readonly commandCounts = { answered: 0, rejected: 0 };

  constructor(private readonly o: EmulatorOptions) {
    this.base = `podwarden/${o.site}/${o.pod}/`;
    this.brokers = new BrokerList(o.brokers);
    this.backoff = new Backoff({ baseMs: o.reconnect?.baseMs ?? 500, maxMs: o.reconnect?.maxMs ?? 30_000 });
    for (const k of o.keys ?? []) this.keys.set(k.id, parsePublicKey(k.publicKey));
  }

  get id(): string {
    return `${this.o.site}/${this.o.pod}`;
  }

  start(): void {
    const phase = (this.o.phaseMs ?? 0) % this.o.session.durationMs;
    this.index = this.o.session.messages.findIndex((m) => m.t >= phase);
    if (this.index < 0) this.index = 0;
    this.cycleStart = performance.now() - phase;
    this.refill = setInterval(() => (this.intake = MAX_REQUESTS_PER_S), 1000);
    void this.connect();
    this.schedule();
  }

  /** The next recorded message at its time (relative to the session's start, cycle after cycle). */
  private schedule(): void {
    const msgs = this.o.session.messages;
    const m = msgs[this.index];
    if (m === undefined || this.stopping) return;
    const due = this.cycleStart + m.t;
    this.playTimer = setTimeout(() => {
      const thinned = m.kind === "telemetry" && this.telemetryPlayed++ % (this.o.telemetryEvery ?? 1) !== 0;
      if (!this.silent && !thinned) this.say(m.kind, m.body);
      this.index++;
      if (this.index >= msgs.length) {
        this.index = 0;
        this.cycleStart += this.o.session.durationMs;
      }
      this.schedule();
    }, Math.max(0, due - performance.now()));
  }

  /** Numbers a message of its class and queues it; the body keeps the recording's content. */
  private say(kind: SessionKind, recorded: Record<string, unknown>): void {
    const seq = ++this.seq[kind];
    // the recording's own numbering and times are the recorded pod's, not this one's
    const { seq: _s, timestamp: _t, historical: _h, ...content } = recorded;
    void _s;
    void _t;
    void _h;
    this.queue.push({ kind, seq, topic: this.base + kind, body: JSON.stringify({ seq, timestamp: new Date().toISOString(), ...content }), sent: false });
    this.pump();
  }

  private stateBody(kind: "online" | "will" | "stopped"): string {
    if (kind === "will") return JSON.stringify({ state: "offline", reason: "connection lost", mode: null, maintenance: null, since: this.since, timestamp: null });
    const recorded = this.o.session.retained.state ?? {};
    return JSON.stringify({ ...recorded, state: kind === "online" ? "online" : "offline", ...(kind === "stopped" ? { reason: "stopped" } : {}), since: this.since, timestamp: new Date().toISOString() });
  }

  private async connect(): Promise<void> {
    const target = await this.brokers.current();
    if (this.stopping) return;
    const client = mqtt.connect(target.url, {
      protocolVersion: this.o.protocolVersion,
      clientId: `podwarden-${this.o.site}-${this.o.pod}`,
      clean: true,
      reconnectPeriod: 0,
      keepalive: this.o.keepaliveS ?? 10,
      connectTimeout: 5000,
      will: { topic: `${this.base}state`, payload: Buffer.from(this.stateBody("will")), qos: 1, retain: true },
    });
    this.client = client;
    client.on("error", () => undefined);
    client.on("connect", () => {
      if (client !== this.client) return;
      this.connects++;
      this.backoff.reset();
      const r = this.o.session.retained;
      client.publish(`${this.base}state`, this.stateBody("online"), { qos: 1, retain: true });
      if (r.info !== undefined) client.publish(`${this.base}info`, JSON.stringify({ ...r.info, site: this.o.site, pod: this.o.pod }), { qos: 1, retain: true });
      if (r.alarms !== undefined) client.publish(`${this.base}alarms`, JSON.stringify({ ...r.alarms, timestamp: new Date().toISOString() }), { qos: 1, retain: true });
      client.subscribe(`${this.base}request/+`, { qos: 0 });
      this.pump();
    });
    client.on("message", (topic, payload, packet) => this.onRequest(topic, payload, packet.properties?.responseTopic, packet.properties?.correlationData));
    client.on("close", () => {
      if (client !== this.client) return;
      // what was in flight goes again on the next connection, in order
      for (const id of Object.keys(client.outgoing)) client.removeOutgoingMessage(Number(id));
      for (const q of this.queue) q.sent = false;
      this.inflight = 0;
      if (this.stopping || this.reconnectTimer !== null) return;
      this.brokers.failed();
      this.reconnectTimer = setTimeout(() => {
        this.reconnectTimer = null;
        this.client = null;
        client.end(true);
        void this.connect();
      }, this.backoff.next());
    });
  }

  private pump(): void {
    const client = this.client;
    if (client === null || !client.connected) return;
    const window = this.o.maxInflight ?? 64;
    for (const q of this.queue) {
      if (this.inflight >= window) break;
      if (q.sent) continue;
      q.sent = true;
      this.inflight++;
      client.publish(q.topic, `${q.body.slice(0, -1)},"historical":false}`, { qos: 1 }, (err) => {
        if (client !== this.client) return;
        this.inflight = Math.max(0, this.inflight - 1);
        if (err === undefined || err === null) {
          const i = this.queue.indexOf(q);
          if (i >= 0) this.queue.splice(i, 1);
          this.markAcknowledged(q.kind, q.seq);
        }
        this.pump();
      });
    }
  }

  private onRequest(topic: string, payload: Buffer, responseTopic: string | undefined, correlationData: Buffer | undefined): void {
    if (this.intake <= 0) return; // beyond the rate: dropped unread, as a pod does
    this.intake--;
    const name = topic.slice(`${this.base}request/`.length);
    const replyTo = responseTopic !== undefined && responseTopic.startsWith(`${this.base}response/`) && !/[+#\0]/.test(responseTopic) && responseTopic.length <= 512 ? responseTopic : `${this.base}response/${isCommandName(name) ? name : "unknown"}`;
    const answer = (body: Record<string, unknown>): void => {
      this.client?.publish(replyTo, JSON.stringify({ ...body, command: name, timestamp: new Date().toISOString() }), {
        qos: 1,
        ...(correlationData === undefined || correlationData.length > 256 ? {} : { properties: { correlationData } }),
      });
    };
    const reject = (code: string, message: string, transaction: string | null = null): void => {
      this.commandCounts.rejected++;
      answer({ status: "rejected", transaction, data: null, error: { code, message } });
    };
    if (payload.length > MAX_REQUEST_BYTES) return reject("malformed", `payload of ${payload.length} bytes exceeds ${MAX_REQUEST_BYTES}`);
    if (!isCommandName(name)) return reject("malformed", "no such command");
    let raw: unknown;
    try {
      raw = JSON.parse(payload.toString("utf8"));
    } catch {
      return reject("malformed", "payload is not JSON");
    }
    const env = validateEnvelope(raw);
    if (!env.ok) return reject("malformed", env.reason);
    const key = this.keys.get(env.value.keyId);
    if (key === undefined) return reject("unknown-key", `key ${env.value.keyId} is not configured`);
    if (!verifyEnvelope(env.value, key)) return reject("bad-signature", "signature does not verify");
    let bodyRaw: unknown;
    try {
      bodyRaw = JSON.parse(env.value.body);
    } catch {
      return reject("malformed", "body is not JSON");
    }
    const b = validateBody(bodyRaw);
    if (!b.ok) return reject("malformed", b.reason);
    const body = b.value;
    if (body.command !== name) return reject("malformed", "command does not match the topic", body.transaction);
    if (body.pod !== this.id) return reject("wrong-pod", `addressed to ${body.pod}, this is ${this.id}`, body.transaction);
    if (Date.parse(body.expiresAt) <= Date.now()) return reject("expired", `expired at ${body.expiresAt}`, body.transaction);
    const last = this.highWater.get(env.value.keyId) ?? 0;
    if (body.seq <= last) return reject("replayed", `seq ${body.seq} is not above ${last}`, body.transaction);
    this.highWater.set(env.value.keyId, body.seq);
    this.commandCounts.answered++;
    this.say("events", { type: "command.audit", action: name, by: `key ${env.value.keyId}`, result: "accepted", transaction: body.transaction });
    answer({ status: "ok", transaction: body.transaction, data: { emulated: true }, error: null });
  }

  /** Faults on cue: an alarm raised (an event), the connection dropped without a goodbye (the broker publishes the Will), silence, and back. */
  fault(kind: EmulatorFault): void {
    if (kind === "alarm") this.say("events", { type: "alarm.raised", alarm: { id: `emulated:${randomUUID().slice(0, 8)}`, severity: "Critical", message: "emulated alarm", source: "emulator" } });
    else if (kind === "disconnect") this.client?.stream.destroy();
    else this.silent = kind === "silent";
  }

  private markAcknowledged(kind: SessionKind, seq: number): void {
    const a = this.acked[kind];
    if (seq <= a.upTo) return;
    a.above.add(seq);
    // acknowledgements come nearly in order: the set holds only the few ahead of a gap
    while (a.above.delete(a.upTo + 1)) a.upTo++;
  }

  /**
   * Whether the broker acknowledged (PUBACK) this message: once it has, the emulator has let it
   * go, as a pod does, and a consumer that never receives it lost it in the broker.
   */
  wasAcknowledged(kind: SessionKind, seq: number): boolean {
    const a = this.acked[kind];
    return seq <= a.upTo || a.above.has(seq);
  }

  stats(): EmulatorStats {
    return { connected: this.client?.connected === true, connects: this.connects, brokerSwitches: this.brokers.switches, lastSeq: { ...this.seq }, queued: this.queue.length, commands: { ...this.commandCounts } };
  }

  /** Says "stopped" and disconnects, as a pod does on a clean stop. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of [this.playTimer, this.reconnectTimer]) if (t !== null) clearTimeout(t);
    if (this.refill !== null) clearInterval(this.refill);
    const c = this.client;
    if (c === null) return;
    if (c.connected) await c.publishAsync(`${this.base}state`, this.stateBody("stopped"), { qos: 1, retain: true }).catch(() => undefined);
    // a DISCONNECT, so the broker does not publish the Will over "stopped"; a broker that does not
    // take it within a second is cut off
    let cut: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (cut = setTimeout(resolve, 1000)));
    await Promise.race([c.endAsync(false).catch(() => undefined), late]);
    clearTimeout(cut);
    c.stream.destroy();
  }
}
