// MQTT sensor ingest: points from subscribed topics. Each point names a topic filter, a path
// into the JSON payload (or none for a bare number), a unit and a staleness window. A message
// that does not yield a finite number makes the point "invalid"; no message within staleMs
// makes it "stale" — in both cases the last value keeps its original source time.
//
// A sample is only as fresh as its source time says. Without a `timePath` that time is the
// arrival, and a retained message (the broker's copy, delivered on subscribe, of unknown age: the
// sensor may have died hours ago) is ignored. With one, the payload's own time sets the age, so a
// retained message or a reading a gateway queued through an outage arrives as old as it is, and
// an older reading never replaces a newer one.
import mqtt, { type MqttClient } from "mqtt";
import { monoMs } from "../lib/clock.js";
import { disableNagle, endOnProtocolError, guardPacketSize, HARD_PACKET_FACTOR, mqttConnectionOptions, watchBrokerSilence } from "../lib/mqtt-connection.js";
import type { IngestConfig, IngestPointConfig } from "./mqtt-ingest-schema.js";

export type { IngestConfig, IngestPointConfig } from "./mqtt-ingest-schema.js";
import { PointStore, type Quality } from "../lib/points.js";

/** The wall-clock ms of a payload's source time: an epoch number in `unit`, or ISO 8601 with a zone; NaN otherwise. */
export function sourceTimeMs(raw: unknown, unit: "ms" | "s"): number {
  if (typeof raw === "number") return unit === "s" ? raw * 1000 : raw;
  // a time without a zone would be read as local time: ambiguous, so refused
  if (typeof raw === "string" && /^\d{4}-\d\d-\d\dT[\d:.]+(Z|[+-]\d\d:?\d\d)$/.test(raw)) return Date.parse(raw);
  return NaN;
}

/** True if an MQTT topic matches a filter with + and # wildcards. */
export function topicMatches(filter: string, topic: string): boolean {
  const f = filter.split("/");
  const t = topic.split("/");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === "#") return true;
    if (i >= t.length) return false;
    if (f[i] !== "+" && f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}

/** Follows a.b[0].c into a parsed JSON value. */
export function jsonPath(value: unknown, path: string): unknown {
  if (path === "") return value;
  let cur: unknown = value;
  for (const part of path.split(".")) {
    const m = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (m === null) return undefined;
    if (m[1] !== "") cur = typeof cur === "object" && cur !== null ? (cur as Record<string, unknown>)[m[1]] : undefined;
    for (const idx of m[2].match(/\d+/g) ?? []) cur = Array.isArray(cur) ? (cur as unknown[])[Number(idx)] : undefined;
  }
  return cur;
}

export class MqttIngest {
  private client: MqttClient | null = null;
  private staleTimer: NodeJS.Timeout | null = null;
  messages = 0;
  /** samples refused: no finite number, or no valid source time */
  rejected = 0;
  /** retained messages not used: a point without timePath cannot tell their age */
  retainedIgnored = 0;
  /** samples older than the point's current one, not used */
  outOfOrder = 0;
  /**
   * beyond maxPacketBytes: a message refused unparsed (its points marked invalid), or a packet
   * whose header claims more, which ends the connection before its body is read
   */
  oversized = 0;
  /** connections given up because the broker fell silent (a hung broker, a silent partition) */
  silentBrokerDrops = 0;
  /** connections ended on a packet that breaks the protocol (lib/mqtt-connection.ts endOnProtocolError) */
  protocolErrorDrops = 0;
  private stopSilenceWatch: () => void = () => undefined;

  constructor(
    private readonly c: IngestConfig,
    /** told when a silent broker's connection is given up (the client then reconnects on its own) */
    private readonly onSilentBroker: (silentMs: number) => void = () => undefined,
    /** where points are published; one store serves every driver of an agent */
    readonly points: PointStore = new PointStore(),
    /** told when a packet that breaks the protocol ends the connection (the client then reconnects on its own) */
    private readonly onProtocolError: (message: string) => void = () => undefined,
  ) {}

  start(): void {
    const client = mqtt.connect(this.c.url, {
      ...mqttConnectionOptions(this.c),
      protocolVersion: this.c.protocolVersion,
      clientId: this.c.clientId,
      reconnectPeriod: 1000,
      clean: true,
      resubscribe: true,
    });
    this.client = client;
    // a packet claiming far more than maxPacketBytes ends the connection before its body is read
    guardPacketSize(client, HARD_PACKET_FACTOR * this.c.maxPacketBytes, (o) => this.refuseOversized(o.topic));
    client.on("connect", () => {
      disableNagle(client);
      const filters = [...new Set(this.c.points.map((p) => p.topic))];
      // QoS 0: a reading lost is replaced by the next (or ages into stale); at QoS 1, mosquitto
      // keeps a message above our maximumPacketSize in our in-flight window, and after 20 of
      // them delivers nothing more (test/fuzz-mqtt-commands.test.ts found it for commands)
      client.subscribe(filters, { qos: 0 });
    });
    // any other error: the client reconnects on its own
    endOnProtocolError(client, (err) => {
      this.protocolErrorDrops++;
      this.onProtocolError(err.message);
    });
    client.on("message", (topic, payload, packet) => this.onMessage(topic, payload, packet.retain));
    this.stopSilenceWatch = watchBrokerSilence(client, this.c.keepaliveS, (silentMs) => {
      this.silentBrokerDrops++;
      this.onSilentBroker(silentMs);
    });
    const period = Math.max(10, Math.min(...this.c.points.map((p) => p.staleMs), 1000) / 4);
    this.staleTimer = setInterval(() => this.checkStale(), period);
  }

  /** the connection to the sensor broker is up */
  get connected(): boolean {
    return this.client?.connected === true;
  }

  private publish(p: IngestPointConfig, value: number, sourceTimeMs: number, quality: Quality, detail?: string): void {
    this.points.publish({ id: p.id, value, sourceTimeMs, quality, unit: p.unit, ...(detail === undefined ? {} : { detail }) });
  }

  /** The point keeps its last value and time, marked invalid. */
  private reject(p: IngestPointConfig): void {
    this.rejected++;
    const prev = this.points.get(p.id);
    this.publish(p, prev?.value ?? NaN, prev?.sourceTimeMs ?? -Infinity, "invalid");
  }

  /** A message too large to be a sensor reading, never parsed: its topic's points go invalid (when its topic is known). */
  private refuseOversized(topic: string | undefined): void {
    this.oversized++;
    if (topic !== undefined) for (const p of this.c.points) if (topicMatches(p.topic, topic)) this.reject(p);
  }

  private onMessage(topic: string, payload: Buffer, retained: boolean): void {
    this.messages++;
    // bounded before it is parsed: JSON.parse of tens of MB holds the event loop, and the leak
    // polls run on it. A message this large is no sensor reading: its points go invalid.
    if (payload.length > this.c.maxPacketBytes) return this.refuseOversized(topic);
    const now = monoMs();
    const wallNow = Date.now();
    let parsed: unknown;
    try {
      parsed = JSON.parse(payload.toString("utf8"));
    } catch {
      parsed = undefined;
    }
    for (const p of this.c.points) {
      if (!topicMatches(p.topic, topic)) continue;
      if (retained && p.timePath === undefined) {
        this.retainedIgnored++;
        continue;
      }
      let source = now;
      if (p.timePath !== undefined) {
        const ageMs = wallNow - sourceTimeMs(jsonPath(parsed, p.timePath), p.timeUnit);
        if (!(ageMs >= -this.c.maxClockSkewMs)) {
          this.reject(p); // no usable time, or from too far in the future
          continue;
        }
        source = now - Math.max(0, ageMs);
      }
      const raw = jsonPath(parsed, p.path);
      const v = typeof raw === "number" ? raw * p.scale + p.offset : NaN;
      if (!Number.isFinite(v)) {
        this.reject(p);
        continue;
      }
      const prev = this.points.get(p.id);
      if (prev !== undefined && source < prev.sourceTimeMs) {
        this.outOfOrder++;
        continue;
      }
      this.publish(p, v, source, now - source > p.staleMs ? "stale" : "good");
    }
  }

  private checkStale(): void {
    const now = monoMs();
    for (const p of this.c.points) {
      const prev = this.points.get(p.id);
      const last = prev?.sourceTimeMs ?? -Infinity;
      if (!(now - last > p.staleMs)) continue;
      // which end went quiet, kept current while the point stays stale: an operator looks at
      // the sensor, or at the broker and the network
      const why = this.connected ? "no message within staleMs; the sensor broker is connected" : "no message within staleMs; the sensor broker is not connected";
      if (prev?.quality !== "stale" || prev.detail !== why) this.publish(p, prev?.value ?? NaN, last, "stale", why);
    }
  }

  async stop(): Promise<void> {
    this.stopSilenceWatch();
    if (this.staleTimer !== null) clearInterval(this.staleTimer);
    this.staleTimer = null;
    const c = this.client;
    this.client = null;
    if (c !== null) await c.endAsync(true);
  }
}
