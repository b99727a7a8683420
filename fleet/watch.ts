// Mission control's side, as a reference consumer (`podwarden fleet watch`, docs/fleet.md): every
// pod of a fleet through one or more MQTT connections, and the fleet tests' oracle.
//
// - Load is split by a shared subscription ($share/<group>/...): the broker hands each pod's
//   events, telemetry and responses to one of the group's connections. One watch can open
//   several connections in the group, and several watches (processes) can share a group.
// - Sequence continuity is counted per pod and class in one ledger (seq-ledger.ts) over all of
//   this watch's connections, so a gap is a loss and never silence. Several processes in one
//   group each see part of every pod's numbers: their ledgers must be merged (a real mission
//   control writes (pod, class, seq) to one store with a unique key); each alone would see gaps.
// - Online and offline come from each pod's retained `state` and its Will ("offline",
//   "connection lost"), on a subscription of its own (not shared: every watch sees every pod's).
// - A signed command goes to a set of pods; their answers are matched on the transaction id.
//
// Every message is bounded before it is parsed (size), and a body that is not what a pod sends
// is counted and dropped. Knows nothing of the daemon: only the topics and the command format.
import { randomUUID, type KeyObject } from "node:crypto";
import mqtt, { type IClientOptions, type MqttClient } from "mqtt";
import { signedCommand, commandBody } from "../agent/commands/client.js";
import type { CommandName } from "../agent/commands/schema.js";
import { SeqLedger, type StreamClass, type StreamCounts } from "./seq-ledger.js";

export interface FleetWatchOptions {
  /** the brokers, tried in turn on reconnect (mqtt.js servers) */
  urls: string[];
  protocolVersion: 4 | 5;
  /** connections opened in the group (default 1) */
  consumers?: number;
  /** shared-subscription group: the data topics are subscribed as $share/<group>/...; none: each connection takes everything */
  share?: string;
  /** only these sites (default every site: podwarden/+/...) */
  sites?: string[];
  /** client id prefix; connection k is <clientId>-<k>. A persistent session (clean false) needs a stable one */
  clientId?: string;
  /** keep the broker session across reconnects (QoS 1 messages queued while away): default true */
  persistent?: boolean;
  username?: string;
  password?: string;
  /** largest message read, bytes (default 1 MiB) */
  maxMessageBytes?: number;
  /** a gap open this long counts as lost, ms (default 30 s) */
  lossAfterMs?: number;
  /** where each pod's count starts (seq-ledger.ts): default its first number seen */
  baseline?: "first-seen" | "one";
  /** reconnect delay, ms (default 500) */
  reconnectMs?: number;
  /**
   * acknowledge each pod's events by sequence on podwarden/<site>/<pod>/ack, for pods that hold
   * them until then (uplink.consumerAck): {"events": n}, n the ledger's contiguous mark, after
   * every events message, new or a copy (a pod re-sends when an acknowledgement is lost), at most
   * once per pod every ackEveryMs. Needs the whole of each pod's events in this watch's ledger:
   * one watch per share group (its --consumers connections share the ledger)
   */
  ack?: boolean;
  /** default 200 */
  ackEveryMs?: number;
}

export interface PodState {
  state: "online" | "offline" | "unknown";
  reason: string | null;
  /** when the state last changed here, ms (wall clock) */
  changedAt: number;
  /** online -> offline transitions seen, and how many of them were the Will */
  offlines: number;
  wills: number;
}

/** The last config pushed to a pod, as its `command.audit` events tell it (agent/config-push/). */
export interface PodPush {
  transaction: string | null;
  state: "trial" | "applied" | "reverted" | "refused";
  reason: string | null;
  /** when it was told here, ms (wall clock) */
  at: number;
}

export interface CommandAnswer {
  pod: string;
  transaction: string;
  /** the pod's answer, or null if none came in time */
  response: Record<string, unknown> | null;
}

export interface CommandSigner {
  keyId: string;
  privateKey: KeyObject;
  /** strictly increasing per key: mission control's own persisted counter */
  nextSeq(): number;
}

export interface FleetStats {
  connections: { connected: boolean; messages: number }[];
  pods: { online: number; offline: number; unknown: number };
  events: StreamCounts;
  telemetry: StreamCounts;
  /** alarm transitions among the events (raised, cleared, ...) */
  alarmEvents: number;
  /** events and telemetry a pod sent without a number (seq null: its spool's disk refused the write, and it says so with a Critical alarm); not counted in the ledger */
  unnumbered: number;
  malformed: number;
  oversize: number;
  /**
   * Reconnects of a persistent session on which the broker said it held no session for the
   * watch (CONNACK sessionPresent 0): what it had stored for the watch since the last connection
   * is gone with it, and gaps that open across such a reconnect are the broker's loss
   */
  sessionsLost: number;
  /** the pods by the state of the last config pushed to them */
  configPushes: Record<PodPush["state"], number>;
  /** acknowledgements of events sent to the pods (FleetWatchOptions.ack) */
  acksSent: number;
}

const POD_ID = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;

export class FleetWatch {
  readonly ledger: SeqLedger;
  readonly states = new Map<string, PodState>();
  /** each pod's last config push, by its events */
  readonly pushes = new Map<string, PodPush>();
  private readonly clients: MqttClient[] = [];
  private readonly messages: number[] = [];
  private readonly waiting = new Map<string, (r: Record<string, unknown>) => void>();
  private readonly expiry: NodeJS.Timeout;
  private alarmEvents = 0;
  private unnumbered = 0;
  private malformed = 0;
  private oversize = 0;
  private sessionsLost = 0;
  private readonly maxBytes: number;
  private readonly listeners = new Set<(pod: string, cls: StreamClass | "state", body: Record<string, unknown>) => void>();
  /** pods with events taken since their last acknowledgement (FleetWatchOptions.ack) */
  private readonly ackDue = new Set<string>();
  private acker: NodeJS.Timeout | undefined;
  /** acknowledgements sent (FleetStats.acksSent) */
  private acksSent = 0;

  private constructor(private readonly o: FleetWatchOptions) {
    this.maxBytes = o.maxMessageBytes ?? 1 << 20;
    this.ledger = new SeqLedger({ lossAfterMs: o.lossAfterMs ?? 30_000, baseline: o.baseline });
    this.expiry = setInterval(() => this.ledger.expire(Date.now()), 1000);
    if (o.ack === true) this.acker = setInterval(() => this.sendAcks(), o.ackEveryMs ?? 200);
  }

  /** Each pod with events taken since: its contiguous mark, at QoS 0 (a lost one brings a re-send, and another). */
  private sendAcks(): void {
    const client = this.clients.find((c) => c.connected);
    if (client === undefined) return;
    for (const id of this.ackDue) {
      const n = this.ledger.contiguous(id, "events");
      if (n > 0) {
        client.publish(`podwarden/${id}/ack`, JSON.stringify({ events: n }), { qos: 0 });
        this.acksSent++;
      }
    }
    this.ackDue.clear();
  }

  /** Opens the connections and subscribes; resolves once every connection has its subscriptions. */
  static async start(o: FleetWatchOptions): Promise<FleetWatch> {
    if (o.urls.length === 0) throw new Error("fleet watch needs a broker URL");
    if (o.share !== undefined && !POD_ID.test(o.share)) throw new Error(`share group "${o.share}": letters, digits, _ and - only`);
    for (const s of o.sites ?? []) if (!POD_ID.test(s)) throw new Error(`site "${s}": letters, digits, _ and - only`);
    const w = new FleetWatch(o);
    try {
      await Promise.all(Array.from({ length: Math.max(1, o.consumers ?? 1) }, (_, k) => w.connect(k)));
    } catch (err) {
      await w.stop();
      throw err;
    }
    return w;
  }

  private async connect(k: number): Promise<void> {
    const servers = this.o.urls.map((u) => {
      const url = new URL(u);
      return { host: url.hostname, port: Number(url.port === "" ? 1883 : url.port), protocol: url.protocol.replace(":", "") as "mqtt" | "mqtts" };
    });
    const opts: IClientOptions = {
      protocolVersion: this.o.protocolVersion,
      clientId: `${this.o.clientId ?? `podwarden-fleet-watch-${process.pid}`}-${k}`,
      clean: this.o.persistent === false,
      reconnectPeriod: this.o.reconnectMs ?? 500,
      connectTimeout: 5000,
      username: this.o.username,
      password: this.o.password,
      servers,
      ...(this.o.protocolVersion === 5 ? { properties: { maximumPacketSize: this.maxBytes + 65_536, ...(this.o.persistent === false ? {} : { sessionExpiryInterval: 3600 }) } } : {}),
    };
    const client = mqtt.connect(opts);
    this.clients[k] = client;
    this.messages[k] = 0;
    client.on("error", () => undefined); // reconnects on its own
    let connected = false;
    client.on("connect", (ack) => {
      // mqtt.js subscribes again by itself when the session is gone; what was queued in it is not
      if (connected && this.o.persistent !== false && !ack.sessionPresent) this.sessionsLost++;
      connected = true;
    });
    client.on("message", (topic, payload) => {
      this.messages[k] = (this.messages[k] ?? 0) + 1;
      this.onMessage(topic, payload);
    });
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no connection to ${this.o.urls.join(", ")} within 10 s`)), 10_000);
      client.once("connect", () => {
        clearTimeout(t);
        resolve();
      });
    });
    const share = this.o.share === undefined ? "" : `$share/${this.o.share}/`;
    const sites = this.o.sites ?? ["+"];
    const topics: Record<string, { qos: 1 }> = {};
    for (const s of sites) {
      for (const t of ["events", "telemetry", "response/+"]) topics[`${share}podwarden/${s}/+/${t}`] = { qos: 1 };
      // every watch follows every pod's state itself (retained, and the Will)
      if (k === 0) topics[`podwarden/${s}/+/state`] = { qos: 1 };
    }
    await client.subscribeAsync(topics);
  }

  /** Called with each message taken (first copies of data; every state). */
  onData(f: (pod: string, cls: StreamClass | "state", body: Record<string, unknown>) => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  private onMessage(topic: string, payload: Buffer): void {
    if (payload.length > this.maxBytes) {
      this.oversize++;
      return;
    }
    const parts = topic.split("/");
    const [root, site, pod, kind] = parts;
    if (root !== "podwarden" || site === undefined || pod === undefined || kind === undefined || !POD_ID.test(site) || !POD_ID.test(pod)) return void this.malformed++;
    let body: unknown;
    try {
      body = JSON.parse(payload.toString("utf8"));
    } catch {
      return void this.malformed++;
    }
    if (typeof body !== "object" || body === null || Array.isArray(body)) return void this.malformed++;
    const b = body as Record<string, unknown>;
    const id = `${site}/${pod}`;
    if (kind === "state") return this.onState(id, b);
    if (kind === "response") {
      const tx = b.transaction;
      if (typeof tx === "string") this.waiting.get(`${id}\n${tx}`)?.(b);
      return;
    }
    if (kind !== "events" && kind !== "telemetry") return;
    const seq = b.seq;
    if (seq === null) {
      // a pod whose spool cannot be written sends live and unnumbered: taken, but no gap can be seen in it
      this.unnumbered++;
    } else if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 1) return void this.malformed++;
    else {
      const acked = b.acked;
      const verdict = this.ledger.record(id, kind, seq, Date.now(), typeof acked === "number" && Number.isSafeInteger(acked) && acked >= 0 ? acked : undefined);
      if (kind === "events" && this.acker !== undefined) this.ackDue.add(id);
      if (verdict === "duplicate") return;
    }
    if (kind === "events" && typeof b.type === "string" && b.type.startsWith("alarm.")) this.alarmEvents++;
    if (kind === "events" && b.type === "command.audit" && b.action === "config") this.onPush(id, b);
    for (const f of this.listeners) f(id, kind, b);
  }

  /**
   * A pushed config's news: on trial, kept, put back, or refused at once (any rejection code).
   * "accepted" is every `config` command's answer, a status query's too: it says nothing here.
   */
  private onPush(id: string, b: Record<string, unknown>): void {
    const r = b.result;
    if (typeof r !== "string" || r === "accepted" || r === "duplicate") return;
    const state = r === "trial" || r === "applied" || r === "reverted" ? r : "refused";
    this.pushes.set(id, { transaction: typeof b.transaction === "string" ? b.transaction : null, state, reason: typeof b.reason === "string" ? b.reason.slice(0, 500) : null, at: Date.now() });
  }

  private onState(id: string, b: Record<string, unknown>): void {
    const now = Date.now();
    const was = this.states.get(id);
    const state = b.state === "online" ? "online" : b.state === "offline" ? "offline" : "unknown";
    const reason = typeof b.reason === "string" ? b.reason : null;
    const s: PodState = was ?? { state: "unknown", reason: null, changedAt: now, offlines: 0, wills: 0 };
    if (s.state !== state) {
      if (s.state === "online" && state === "offline") {
        s.offlines++;
        if (reason === "connection lost") s.wills++;
      }
      s.state = state;
      s.changedAt = now;
    }
    s.reason = reason;
    this.states.set(id, s);
    for (const f of this.listeners) f(id, "state", b);
  }

  /**
   * Sends a signed command to each pod ("site/pod") and waits up to timeoutMs for every answer.
   * The answers come on the pods' response topics (on MQTT 5 the request also names it, with
   * the transaction as correlation data); a pod that does not answer in time gets null.
   */
  async command(pods: string[], command: CommandName, params: Record<string, unknown>, signer: CommandSigner, timeoutMs = 10_000): Promise<CommandAnswer[]> {
    const client = this.clients.find((c) => c.connected);
    if (client === undefined) throw new Error("no connection to a broker");
    const answers = await Promise.all(
      pods.map(async (id) => {
        const [site, pod] = id.split("/");
        if (site === undefined || pod === undefined || !POD_ID.test(site) || !POD_ID.test(pod)) throw new Error(`pod "${id}": site/pod`);
        const transaction = randomUUID();
        const key = `${id}\n${transaction}`;
        const got = new Promise<Record<string, unknown> | null>((resolve) => {
          const t = setTimeout(() => {
            this.waiting.delete(key);
            resolve(null);
          }, timeoutMs);
          this.waiting.set(key, (r) => {
            clearTimeout(t);
            this.waiting.delete(key);
            resolve(r);
          });
        });
        const spec = { site, pod, command, params, seq: signer.nextSeq(), keyId: signer.keyId, privateKey: signer.privateKey, transaction };
        const base = `podwarden/${site}/${pod}/`;
        await client.publishAsync(`${base}request/${command}`, signedCommand(spec, commandBody(spec)), {
          qos: 1,
          ...(this.o.protocolVersion === 5 ? { properties: { responseTopic: `${base}response/${command}`, correlationData: Buffer.from(transaction) } } : {}),
        });
        return { pod: id, transaction, response: await got };
      }),
    );
    return answers;
  }

  private pushCounts(): FleetStats["configPushes"] {
    const n = { trial: 0, applied: 0, reverted: 0, refused: 0 };
    for (const p of this.pushes.values()) n[p.state]++;
    return n;
  }

  stats(): FleetStats {
    const pods = { online: 0, offline: 0, unknown: 0 };
    for (const s of this.states.values()) pods[s.state]++;
    return {
      connections: this.clients.map((c, k) => ({ connected: c.connected, messages: this.messages[k] ?? 0 })),
      pods,
      events: this.ledger.totals("events"),
      telemetry: this.ledger.totals("telemetry"),
      alarmEvents: this.alarmEvents,
      unnumbered: this.unnumbered,
      malformed: this.malformed,
      oversize: this.oversize,
      sessionsLost: this.sessionsLost,
      configPushes: this.pushCounts(),
      acksSent: this.acksSent,
    };
  }

  /** Pods whose events have open or lost gaps, with the numbers missing (at most 20 each). */
  gaps(cls: StreamClass = "events"): { pod: string; missing: number[]; counts: StreamCounts }[] {
    return this.ledger
      .pods()
      .map((pod) => ({ pod, missing: this.ledger.missing(pod, cls, 20), counts: this.ledger.counts(pod, cls) }))
      .filter((g) => g.missing.length > 0 || g.counts.lost > 0);
  }

  async stop(): Promise<void> {
    clearInterval(this.expiry);
    clearInterval(this.acker);
    await Promise.all(this.clients.map((c) => c.endAsync(true).catch(() => undefined)));
  }
}

