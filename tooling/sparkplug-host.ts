// A Sparkplug host application for tests and benches: it decodes every message of one edge node
// with Eclipse Tahu's payload library (not the pod's own code), tracks the node's state as a
// primary host would (online, bdSeq, seq, aliases, each device's birth and death), and records
// every breach of the Sparkplug 3.0 edge-node rules it sees. Optionally it is the primary host:
// it publishes spBv1.0/STATE/<id> (JSON {online, timestamp}, retained, with the offline one as
// its Will).
import mqtt, { type MqttClient } from "mqtt";
import * as tahu from "sparkplug-payload";
import type { UMetric, UPayload } from "sparkplug-payload/lib/sparkplugbpayload.js";

const codec = tahu.get("spBv1.0");
if (codec === null) throw new Error("sparkplug-payload has no spBv1.0 codec");

export interface HostMessage {
  topic: string;
  verb: string;
  device: string | null;
  payload: UPayload;
  bytes: number;
  retain: boolean;
  qos: number;
  receivedAt: number;
}

/** A metric value as the host holds it, with where it came from. */
export interface HostUpdate {
  device: string | null;
  name: string;
  value: unknown;
  quality: number | null;
  timestamp: number;
  historical: boolean;
  verb: string;
}

const num = (v: unknown): number => (typeof v === "number" ? v : v !== null && typeof v === "object" && "toNumber" in v ? Number((v as { toNumber(): number }).toNumber()) : Number.NaN);

export class SparkplugHost {
  readonly messages: HostMessage[] = [];
  readonly updates: HostUpdate[] = [];
  /** each breach of an edge-node rule, in words, with the spec's section */
  readonly violations: string[] = [];
  /** bdSeq of every NBIRTH and NDEATH, in order */
  readonly births: number[] = [];
  readonly deaths: number[] = [];
  /** seq wrapped from 255 to 0 this many times */
  wraps = 0;
  online = false;
  bdSeq: number | null = null;
  private expectSeq: number | null = null;
  /** between the host's reconnect and the next NBIRTH: data it cannot place is no breach of the node's */
  private resyncing = false;
  /** this host asked for the rebirth now due: its NBIRTH repeats a session already counted */
  private rebirthAsked = false;
  /** alias → name over the node and its devices, per birth set */
  private aliases = new Map<number, { device: string | null; name: string }>();
  /** name → alias as first born: aliases must stay what they were */
  private readonly firstAlias = new Map<string, number>();
  readonly devices = new Map<string, boolean>();
  private client: MqttClient | null = null;
  private readonly prefix: string;

  constructor(
    private readonly url: string,
    readonly group: string,
    readonly node: string,
    private readonly hostId?: string,
  ) {
    this.prefix = `spBv1.0/${group}/`;
  }

  async connect(o: { online?: boolean } = {}): Promise<void> {
    const will = this.hostId === undefined ? undefined : { topic: `spBv1.0/STATE/${this.hostId}`, payload: Buffer.from(JSON.stringify({ online: false, timestamp: Date.now() })), qos: 1 as const, retain: true };
    const client = mqtt.connect(this.url, { clientId: `spb-host-${this.group}-${process.pid}-${Math.random().toString(16).slice(2, 8)}`, reconnectPeriod: 200, clean: true, ...(will === undefined ? {} : { will }) });
    this.client = client;
    client.on("message", (topic, payload, packet) => this.onMessage(topic, payload, packet.retain, packet.qos));
    await new Promise<void>((resolve, reject) => {
      client.once("connect", () => resolve());
      client.once("error", reject);
    });
    // after its own reconnect the host has missed what came meanwhile: it forgets the node's
    // session and asks for a rebirth, as a primary host does on data it cannot place (§5.9)
    client.on("connect", () => {
      this.online = false;
      this.expectSeq = null;
      this.resyncing = true;
      void client.subscribeAsync([`${this.prefix}+/${this.node}`, `${this.prefix}+/${this.node}/+`], { qos: 0 }).then(() => {
        this.rebirthAsked = true;
        return this.rebirth();
      });
    });
    await client.subscribeAsync([`${this.prefix}+/${this.node}`, `${this.prefix}+/${this.node}/+`], { qos: 0 });
    if (this.hostId !== undefined && o.online !== undefined) await this.setOnline(o.online);
  }

  /** As the primary host: STATE, retained, QoS 1 (§4.2.3). */
  async setOnline(online: boolean): Promise<void> {
    if (this.hostId === undefined || this.client === null) throw new Error("not a primary host");
    await this.client.publishAsync(`spBv1.0/STATE/${this.hostId}`, JSON.stringify({ online, timestamp: Date.now() }), { qos: 1, retain: true });
  }

  /** NCMD Node Control/Rebirth = true (§5.17). */
  async rebirth(): Promise<void> {
    await this.command(null, [{ name: "Node Control/Rebirth", type: "Boolean", value: true }]);
  }

  async command(device: string | null, metrics: UMetric[]): Promise<void> {
    const topic = device === null ? `${this.prefix}NCMD/${this.node}` : `${this.prefix}DCMD/${this.node}/${device}`;
    await this.client?.publishAsync(topic, Buffer.from(codec!.encodePayload({ timestamp: Date.now(), metrics })), { qos: 0 });
  }

  /** Raw bytes on a command topic (fuzzing the node's intake). */
  async raw(topic: string, payload: Buffer): Promise<void> {
    await this.client?.publishAsync(topic, payload, { qos: 0 });
  }

  count(verb: string, device?: string): number {
    return this.messages.filter((m) => m.verb === verb && (device === undefined || m.device === device)).length;
  }

  /** The last value the host holds for a metric (by name), and whether it came historical. */
  value(device: string | null, name: string): HostUpdate | undefined {
    for (let i = this.updates.length - 1; i >= 0; i--) {
      const u = this.updates[i];
      if (u.device === device && u.name === name) return u;
    }
    return undefined;
  }

  private violate(rule: string, m: { topic: string }): void {
    if (this.violations.length < 200) this.violations.push(`${rule} (${m.topic})`);
  }

  private onMessage(topic: string, bytes: Buffer, retain: boolean, qos: number): void {
    const parts = topic.split("/");
    const verb = parts[2];
    const device = parts.length === 5 ? parts[4] : null;
    const m = { topic };
    // §4.1: spBv1.0/<group>/<verb>/<edge node>[/<device>], a device only on D verbs
    const nodeVerbs = ["NBIRTH", "NDATA", "NDEATH", "NCMD"];
    const devVerbs = ["DBIRTH", "DDATA", "DDEATH", "DCMD"];
    if (parts[0] !== "spBv1.0" || parts[1] !== this.group || parts[3] !== this.node || !(device === null ? nodeVerbs : devVerbs).includes(verb)) this.violate("§4.1 topic namespace", m);
    if (verb === "NCMD" || verb === "DCMD") return; // our own commands
    let payload: UPayload;
    try {
      payload = codec!.decodePayload(bytes);
    } catch {
      this.violate("§6.4.5 payload is not a Sparkplug B protobuf", m);
      return;
    }
    this.messages.push({ topic, verb, device, payload, bytes: bytes.length, retain, qos, receivedAt: Date.now() });
    if (retain) this.violate("§4.2 retained Sparkplug message (births, data and deaths are never retained)", m);
    const metrics = payload.metrics ?? [];
    if (verb === "NDEATH") {
      // §4.2.1.3: the bdSeq only, no seq
      if (payload.seq !== undefined && payload.seq !== null) this.violate("§4.2.1.3 NDEATH carries a seq", m);
      const bd = metrics.find((x) => x.name === "bdSeq");
      if (bd === undefined || metrics.length !== 1) this.violate("§4.2.1.3 NDEATH must carry the bdSeq metric alone", m);
      const v = num(bd?.value);
      this.deaths.push(v);
      // §4.2.1.3: a death names the session it ends; a host that has seen that session's birth can tell
      if (this.births.length > 0 && !this.births.includes(v)) this.violate(`§4.2.1.3 NDEATH bdSeq ${v} matches no NBIRTH`, m);
      // a death for an older session (a Will delivered late) is ignored, as a host does
      if (v === this.bdSeq) {
        this.online = false;
        for (const k of this.devices.keys()) this.devices.set(k, false);
        this.expectSeq = null;
      }
      return;
    }
    // §6.4.5: every other message carries seq, one more than the last, 255 wrapping to 0
    const seq = num(payload.seq);
    if (!Number.isInteger(seq) || seq < 0 || seq > 255) this.violate("§6.4.5 seq missing or outside 0..255", m);
    if (verb === "NBIRTH") {
      if (seq !== 0) this.violate("§6.4.5 NBIRTH seq must be 0", m);
    } else if (this.expectSeq !== null && seq !== this.expectSeq) {
      this.violate(`§6.4.5 seq ${seq} where ${this.expectSeq} was due`, m);
    }
    if (verb !== "NBIRTH" && this.expectSeq === 0 && seq === 0) this.wraps++;
    this.expectSeq = (seq + 1) % 256;
    if (verb === "NBIRTH") return this.onNodeBirth(payload, metrics, m);
    if (!this.online) return this.resyncing ? undefined : this.violate(`§5.4 ${verb} with no NBIRTH in force`, m);
    if (verb === "DBIRTH") return this.onDeviceBirth(device!, payload, metrics, m);
    if (verb === "DDEATH") {
      if (this.devices.get(device!) !== true) this.violate("§5.7 DDEATH for a device that is not online", m);
      this.devices.set(device!, false);
      return;
    }
    if (verb === "DDATA" && this.devices.get(device!) !== true) return this.violate(`§5.6 DDATA for ${device}, which has no DBIRTH in force`, m);
    // §6.4.6: DATA by alias only, each one born
    for (const x of metrics) {
      if (x.name !== undefined && x.name !== null) this.violate("§6.4.6 DATA metric carries a name beside its alias", m);
      const a = this.aliases.get(num(x.alias));
      if (a === undefined || a.device !== device) {
        this.violate(`§6.4.6 DATA alias ${num(x.alias)} not born for ${device ?? "the node"}`, m);
        continue;
      }
      this.record(device, a.name, x, payload, verb);
    }
  }

  private onNodeBirth(payload: UPayload, metrics: UMetric[], m: { topic: string }): void {
    const bd = metrics.find((x) => x.name === "bdSeq");
    if (bd === undefined) this.violate("§4.2.1.1 NBIRTH without bdSeq", m);
    const rebirth = metrics.find((x) => x.name === "Node Control/Rebirth");
    if (rebirth === undefined || rebirth.type !== "Boolean" || rebirth.value !== false) this.violate("§5.17 NBIRTH needs Node Control/Rebirth, Boolean, false", m);
    if (rebirth?.alias !== undefined && rebirth.alias !== null) this.violate("§5.17 Node Control/Rebirth must have no alias", m);
    this.bdSeq = num(bd?.value);
    this.resyncing = false;
    // the same session born again (a rebirth, asked by this host or another) is not a new session
    if (this.births.at(-1) !== this.bdSeq || !this.rebirthAsked) this.births.push(this.bdSeq);
    this.rebirthAsked = false;
    this.online = true;
    this.aliases = new Map();
    for (const k of this.devices.keys()) this.devices.set(k, false);
    this.bindAliases(null, metrics, m);
    for (const x of metrics) this.record(null, String(x.name), x, payload, "NBIRTH");
  }

  private onDeviceBirth(device: string, payload: UPayload, metrics: UMetric[], m: { topic: string }): void {
    // a device's aliases are dropped with its death: rebind them
    for (const [a, v] of this.aliases) if (v.device === device) this.aliases.delete(a);
    this.bindAliases(device, metrics, m);
    this.devices.set(device, true);
    for (const x of metrics) this.record(device, String(x.name), x, payload, "DBIRTH");
  }

  /** §6.4.6: every born metric has a name and a type; aliases unique across the node and stable from birth to birth. */
  private bindAliases(device: string | null, metrics: UMetric[], m: { topic: string }): void {
    for (const x of metrics) {
      if (typeof x.name !== "string" || x.name === "") this.violate("§6.4.6 birth metric without a name", m);
      if (x.alias === undefined || x.alias === null) continue;
      const a = num(x.alias);
      if (this.aliases.has(a)) this.violate(`§6.4.6 alias ${a} used twice in one birth set`, m);
      this.aliases.set(a, { device, name: String(x.name) });
      const key = `${device ?? ""}/${String(x.name)}`;
      const first = this.firstAlias.get(key);
      if (first !== undefined && first !== a) this.violate(`alias of ${key} changed from ${first} to ${a}`, m);
      this.firstAlias.set(key, a);
    }
  }

  private record(device: string | null, name: string, x: UMetric, payload: UPayload, verb: string): void {
    // through unknown: the codec's property value type names Long, whose types eslint cannot see
    const q = (x.properties as Record<string, { value?: unknown } | undefined> | undefined)?.Quality?.value;
    this.updates.push({ device, name, value: x.type === "Int64" || x.type === "UInt64" ? num(x.value) : x.value, quality: q === undefined || q === null ? null : num(q), timestamp: num(x.timestamp ?? payload.timestamp), historical: x.isHistorical === true, verb });
  }

  async close(): Promise<void> {
    const c = this.client;
    this.client = null;
    if (c !== null) await c.endAsync(true);
  }
}
