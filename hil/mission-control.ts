// Mission control for a real-time scenario with `uplink: true`: an MQTT broker of the runner's own
// on loopback (aedes, lib/embedded-broker.ts), which the daemon's uplink is pointed at and which a
// `broker: down|up|hang|resume|partition|lossy|hostile|heal` step takes away, spoils and brings back, and a client subscribed to the pod's topics
// as mission control would be, stamping what arrives with the monotonic time: the pod's `state`
// (online or not), the active alarms its retained `alarms` message last listed, its events, and
// its telemetry messages with those its `seq` says were lost.
// It sends the pod commands as mission control does (a `command` step), signed by a key of the
// runner's own that the daemon is configured to trust, or spoiled on purpose, and notes each
// answer. The topics are the public contract in docs/mqtt.md; hil/ does not import the agent's
// code, only the command format (agent/commands/, as mission control's tooling does).
//
// The broker keeps its sessions and retained messages while down (a broker restarted with
// persistence), and mission control's session is persistent (clean: false, QoS 1): what the pod
// publishes once the broker is back, its spool first, reaches mission control even when the pod
// reconnects first. Nothing the pod published while the broker was gone can arrive before it.
import mqtt, { type MqttClient } from "mqtt";
import { commandBody, signedCommand, type CommandSpec } from "../agent/commands/client.js";
import { generateCommandKey, parsePrivateKey } from "../agent/commands/signing.js";
import { startEmbeddedBroker, type EmbeddedBroker } from "../lib/embedded-broker.js";
import { OVERSIZED_COMMAND_BYTES, type CommandStep } from "./scenario.js";
import { ANSWER_OUTCOMES } from "./signals.js";

/** What mission control saw, stamped with performance.now() when it arrived. */
export interface UplinkObservation {
  atMs: number;
  /** connected to the broker, and the pod's last `state` said online */
  online?: boolean;
  /** the ids of the active alarms the pod's `alarms` message listed */
  alarms?: string[];
  /** an event's type */
  event?: string;
  /** a command's answer: ok, duplicate (a copy answered with the first answer), or its rejection code */
  answer?: string;
  /**
   * a telemetry message received, or one lost: its `seq` counts telemetry one by one
   * (docs/mqtt.md), so a gap before a message is that many lost, each noted when it shows
   */
  telemetry?: "received" | "lost";
}

/** The key the daemon under test trusts with the engineer's role (its `uplink.commands.keys`). */
export interface TrustedKey {
  id: string;
  publicKey: string;
}

export interface MissionControl {
  /** the broker's URL, for the daemon's `uplink.url` */
  url: string;
  /** the broker stops listening and drops every connection */
  down(): Promise<void>;
  /** it listens again on the same port */
  up(): Promise<void>;
  /** it hangs (SIGSTOP): connections open, nothing read or answered */
  hang(): void;
  /** it goes on (SIGCONT) */
  resume(): void;
  /** the pod is cut off from the broker, which runs on, mission control's own connection with it */
  partition(): void;
  /**
   * the pod's link stalls LOSSY_STALL_MS in every LOSSY_PERIOD_MS, as TCP stalls while it
   * retransmits lost segments: what it sends is late, in bursts, never lost or reordered
   */
  lossy(): void;
  /**
   * the broker breaks the protocol: every HOSTILE_PERIOD_MS it writes the next of
   * MALFORMED_MQTT_PACKETS into the pod's connection, and talks on as if it had not
   */
  hostile(): void;
  /** the partition heals, the lossy link is steady again, or the broker is honest again: what waited crosses */
  heal(): void;
  observations(): readonly UplinkObservation[];
  /** the key the daemon must trust for the commands this mission control signs */
  trustedKey: TrustedKey;
  /**
   * publishes a command step to the pod (its `times` copies, at `perS` a second or back to back);
   * resolves once all are acknowledged by the broker, rejects once `until` aborts before that (a
   * broker down or hung holds the acknowledgements)
   */
  send(step: CommandStep, until?: AbortSignal): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A lossy link's stalls: 800 ms of silence in every 2 s, each well short of the 3 s (1.5 × the
 * rig's 2 s keepalive) after which either end gives the connection up, as the fault catalogue's
 * slow, lossy link is; 40 % of the time silent, so what crosses waits 160 ms on average.
 */
export const LOSSY_STALL_MS = 800;
export const LOSSY_PERIOD_MS = 2000;

/**
 * Packets no broker may send, one of each kind a parser must refuse: a reserved packet type, a
 * PUBLISH at QoS 3, a length field of five bytes, and a PUBLISH header claiming 256 MB (the
 * client's size guard ends that one before its body). The client must end the connection on each
 * (MQTT 3.1.1 §4.8, 5.0 §4.13), however well the broker behaves after it.
 */
export const MALFORMED_MQTT_PACKETS: readonly Buffer[] = [
  Buffer.from([0x00, 0x00]),
  Buffer.from([0x36, 0x05, 0x00, 0x01, 0x61, 0x00, 0x01]),
  Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01]),
  Buffer.from([0x30, 0xff, 0xff, 0xff, 0x7f]),
];
/** A hostile broker's bad packets: one every 2 s, so the pod is connected between them most of the time. */
export const HOSTILE_PERIOD_MS = 2000;

/** The runner's key id, and the id an unknown key signs under. */
const KEY_ID = "hil-mission-control";
const UNKNOWN_KEY_ID = "hil-stranger";
/** A flood is published in bursts of this many, each awaited, so that the client's queue stays bounded. */
const FLOOD_BURST = 200;

/** A message is read up to this size before it is parsed: a pod's alarms or event is a few kB. */
export const MAX_MESSAGE_BYTES = 256 * 1024;
/** The pod's topics mission control reads (docs/mqtt.md): podwarden/<site>/<pod>/<kind>. */
const POD_TOPIC = /^podwarden\/([^/]+)\/([^/]+)\/(state|alarms|events|telemetry|response\/[^/]+)$/;
/** A run keeps at most this many observations (a scenario's events are tens). */
const MAX_OBSERVATIONS = 100_000;

/**
 * `oversized`: the names of the commands the run sends as 100 MiB messages, made before the run
 * starts (making one holds the runner's own thread ~0.1 s: mid-run, it held up the next step)
 */
export async function startMissionControl(o: { oversized?: readonly string[] } = {}): Promise<MissionControl> {
  const broker: EmbeddedBroker = await startEmbeddedBroker();
  const seen: UplinkObservation[] = [];
  const note = (o: Omit<UplinkObservation, "atMs">): void => {
    if (seen.length < MAX_OBSERVATIONS) seen.push({ atMs: performance.now(), ...o });
  };
  let connected = false;
  let podOnline = false;
  let online = false;
  const onlineNow = (): void => {
    const v = connected && podOnline;
    if (v !== online) note({ online: v });
    online = v;
  };
  const client: MqttClient = mqtt.connect(broker.url, { clientId: `podwarden-hil-mission-control-${process.pid}`, clean: false, protocolVersion: 4, reconnectPeriod: 100, connectTimeout: 2000, keepalive: 5 });
  client.on("connect", () => {
    connected = true;
    onlineNow();
  });
  client.on("close", () => {
    connected = false;
    onlineNow();
  });
  // an error (a refused connection while the broker is down) is the reconnect's to retry
  client.on("error", () => undefined);
  // the pod's address, from its first state message: mission control sends to the pod it sees
  let podAddress: { site: string; pod: string } | undefined;
  // the last telemetry seq seen: a later one more than one on says how many were lost; an
  // earlier or equal one is a QoS 1 copy, or the pod's counter starting again
  let lastSeq: number | undefined;
  client.on("message", (topic, payload) => {
    if (payload.length > MAX_MESSAGE_BYTES) return;
    const m = POD_TOPIC.exec(topic);
    if (m === null) return;
    const kind = m[3];
    if (kind === "state") podAddress ??= { site: m[1], pod: m[2] };
    let body: unknown;
    try {
      body = JSON.parse(payload.toString("utf8"));
    } catch {
      return;
    }
    if (typeof body !== "object" || body === null) return;
    const b = body as { state?: unknown; alarms?: unknown; type?: unknown; status?: unknown; duplicate?: unknown; error?: { code?: unknown } | null; seq?: unknown };
    if (kind.startsWith("response/")) {
      const outcome = b.duplicate === true ? "duplicate" : b.status === "ok" ? "ok" : typeof b.error?.code === "string" ? b.error.code : "";
      if ((ANSWER_OUTCOMES as readonly string[]).includes(outcome)) note({ answer: outcome });
    } else if (kind === "state") {
      podOnline = b.state === "online";
      onlineNow();
    } else if (kind === "alarms" && Array.isArray(b.alarms)) {
      note({ alarms: b.alarms.map((a: unknown) => (typeof a === "object" && a !== null ? String((a as { id?: unknown }).id) : "")).filter((id) => id !== "") });
    } else if (kind === "events" && typeof b.type === "string") {
      note({ event: b.type });
    } else if (kind === "telemetry" && typeof b.seq === "number" && Number.isSafeInteger(b.seq)) {
      if (lastSeq !== undefined && b.seq === lastSeq) return; // a copy
      if (lastSeq !== undefined && b.seq > lastSeq + 1) for (let k = Math.min(b.seq - lastSeq - 1, MAX_OBSERVATIONS); k > 0; k--) note({ telemetry: "lost" });
      lastSeq = b.seq;
      note({ telemetry: "received" });
    }
  });
  try {
    await new Promise<void>((resolve, reject) => {
      client.once("connect", () => resolve());
      setTimeout(() => reject(new Error(`mission control did not connect to its own broker at ${broker.url}`)), 5000).unref();
    });
    await client.subscribeAsync("podwarden/#", { qos: 1 });
  } catch (err) {
    await client.endAsync(true);
    await broker.close();
    throw err;
  }
  // the runner's key, trusted by the daemon, and a stranger's for the forgeries
  const own = generateCommandKey();
  const ownKey = parsePrivateKey(own.privatePem);
  const strangerKey = parsePrivateKey(generateCommandKey().privatePem);
  // made once per command name, before the run, and kept: 100 MiB is not made afresh per copy
  const big = new Map((o.oversized ?? []).map((name) => [name, `{"command":"${name}","pad":"${"x".repeat(OVERSIZED_COMMAND_BYTES - 30 - name.length)}"}`]));
  const oversized = (name: string): string => {
    const text = big.get(name);
    if (text === undefined) throw new Error(`command ${name} oversized: not made before the run`);
    return text;
  };
  // a key's seq only grows; the daemon's replay guard starts empty with its fresh state directory
  let seq = Date.now();
  let last: string | undefined;
  const payload = (step: CommandStep, to: { site: string; pod: string }): string => {
    if (step.as === "oversized") return oversized(step.name);
    if (step.as === "again") {
      if (last === undefined) throw new Error(`command ${step.name} again: no command was sent before`);
      return last;
    }
    const now = Date.now();
    const spec: CommandSpec = { site: to.site, pod: to.pod, command: step.name, params: step.params, seq: ++seq, keyId: KEY_ID, privateKey: ownKey, ttlS: 60 };
    if (step.as === "forged") spec.privateKey = strangerKey;
    if (step.as === "unknown-key") Object.assign(spec, { keyId: UNKNOWN_KEY_ID, privateKey: strangerKey });
    if (step.as === "expired") spec.nowMs = now - 10 * 60_000;
    if (step.as === "future") spec.nowMs = now + 3_600_000;
    if (step.as === "wrong-pod") spec.pod = `${to.pod}-elsewhere`;
    const text = signedCommand(spec, commandBody(spec));
    last = text;
    return text;
  };
  const send = async (step: CommandStep, until?: AbortSignal): Promise<void> => {
    const ended = new Promise<never>((_, reject) => {
      const stop = (): void => reject(new Error(`command ${step.name}: the run ended before the broker took it`));
      if (until?.aborted === true) stop();
      else until?.addEventListener("abort", stop, { once: true });
    });
    ended.catch(() => undefined);
    const to = podAddress;
    if (to === undefined) throw new Error(`command ${step.name}: mission control has not seen the pod's state yet`);
    const topic = `podwarden/${to.site}/${to.pod}/request/${step.name}`;
    const started = performance.now();
    for (let k = 0; k < step.times; ) {
      // at perS, each burst waits for its time; back to back, for the last burst's acknowledgements
      const due = step.perS === undefined ? step.times : Math.min(step.times, Math.floor(((performance.now() - started) / 1000) * step.perS) + 1);
      const n = Math.min(FLOOD_BURST, due - k);
      if (n <= 0) {
        await Promise.race([new Promise((r) => setTimeout(r, 5)), ended]);
        continue;
      }
      await Promise.race([Promise.all(Array.from({ length: n }, () => client.publishAsync(topic, payload(step, to), { qos: 1 }))), ended]);
      k += n;
    }
  };
  // mission control's own connection, told apart by its port (it reconnects: read it each time)
  const isOwn = (c: { remotePort: number | undefined }): boolean => c.remotePort === (client.stream as { localPort?: number } | undefined)?.localPort;
  // mission control keeps its connection: every other one (the pod's) is cut off
  const cutOff = (): void => broker.partition(isOwn);
  // a lossy link's timers, and a hostile broker's
  let stalls: NodeJS.Timeout | undefined;
  let stallEnd: NodeJS.Timeout | undefined;
  let spoiling: NodeJS.Timeout | undefined;
  const steady = (): void => {
    clearInterval(stalls);
    clearTimeout(stallEnd);
    clearInterval(spoiling);
  };
  return {
    url: broker.url,
    trustedKey: { id: KEY_ID, publicKey: own.publicPem },
    send,
    down: () => broker.down(),
    up: () => broker.up(),
    hang: () => broker.hang(),
    resume: () => broker.resume(),
    partition: () => {
      steady();
      cutOff();
    },
    lossy: () => {
      steady();
      const stall = (): void => {
        cutOff();
        stallEnd = setTimeout(() => broker.heal(), LOSSY_STALL_MS);
      };
      stall();
      stalls = setInterval(stall, LOSSY_PERIOD_MS);
    },
    hostile: () => {
      steady();
      let k = 0;
      const spoil = (): void => {
        broker.injectRaw(MALFORMED_MQTT_PACKETS[k++ % MALFORMED_MQTT_PACKETS.length], (c) => !isOwn(c));
      };
      spoil();
      spoiling = setInterval(spoil, HOSTILE_PERIOD_MS);
    },
    heal: () => {
      steady();
      broker.heal();
    },
    observations: () => seen,
    stop: async () => {
      steady();
      await client.endAsync(true);
      await broker.close();
    },
  };
}
