// A broker connection: its config keys, their cross-checks and the mqtt.js options they make.
// One definition serves the uplink to mission control and MQTT sensor ingest, so a site broker
// that needs TLS, a private CA, a client certificate or a password from a credential file is
// reachable from both. (Type-only import of mqtt: config checking must not load the client.)
import { existsSync } from "node:fs";
import { readFileBounded, readTextBounded } from "./bounded-read.js";
import type { IClientOptions, MqttClient } from "mqtt";
import { int, optional, optionalObj, str, type Infer, type ObjectOfProps, type Schema } from "./schema-builders.js";

/** What a broker URL must start with. */
export const BROKER_URL_PATTERN = "^(mqtt|mqtts|tcp|ssl|tls)://";

/** The schema properties of a broker connection; `defaultClientId` is what the docs show as the default. */
export function mqttConnectionProperties(defaultClientId: string) {
  return {
    url: str("broker URL, e.g. mqtt://127.0.0.1:1883 or mqtts://broker:8883", { pattern: BROKER_URL_PATTERN }),
    clientId: optional(str(`client id (default ${defaultClientId}); one session per client id`)),
    username: optional(str("user name (${ENV} allowed)")),
    password: optional(str("password: use ${ENV_VAR}, not a literal")),
    passwordFile: optional(str("read the password from this file (e.g. a systemd credential: ${CREDENTIALS_DIRECTORY}/mqtt-password); trailing newline ignored")),
    tls: optionalObj(
      {
        caFile: optional(str("CA certificate(s) that sign the broker's certificate, PEM")),
        certFile: optional(str("client certificate for mutual TLS, PEM (with keyFile)")),
        keyFile: optional(str("client private key for mutual TLS, PEM (with certFile)")),
        servername: optional(str("name the broker's certificate must carry, if not the URL's host")),
      },
      "TLS for mqtts:// URLs; the broker's certificate is always verified",
    ),
    keepaliveS: int(1, 3600, 10, "MQTT keepalive, s; a silent broker is given up on within 1.5x this (docs/mqtt.md)"),
    connectTimeoutMs: int(100, 600_000, 5000, "give up on a connection attempt (no CONNACK) after this, ms"),
    maxPacketBytes: int(
      1024,
      268_435_455,
      262_144,
      "largest MQTT packet accepted, bytes: sent to an MQTT 5 broker as maximumPacketSize (it then never delivers a larger one), and checked before any payload is parsed on either protocol version",
    ),
  };
}

/** A broker connection's keys, as the schema above gives them. */
export type MqttConnectionConfig = Infer<Schema<ObjectOfProps<ReturnType<typeof mqttConnectionProperties>>>>;
export type TlsConfig = NonNullable<MqttConnectionConfig["tls"]>;

/**
 * A broker URL fit for a log line or a screen: a password in it (`mqtt://user:secret@host`)
 * becomes `***`. Text that is not a URL is kept only up to its scheme.
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    return u.toString();
  } catch {
    const scheme = /^[a-z]+:\/\//i.exec(url);
    return scheme === null ? "(not a URL)" : `${scheme[0]}…`;
  }
}

/**
 * What the schema cannot say about a connection: TLS on a plain URL, half a key pair, missing
 * files. `at` is the key path; `urls` the connection's brokers (its url, or a list of them).
 */
export function mqttConnectionProblems(c: Omit<MqttConnectionConfig, "url">, at: string, urls: readonly string[]): string[] {
  const out: string[] = [];
  if (c.tls !== undefined && urls.some((u) => !/^(mqtts|ssl|tls):/.test(u))) out.push(`${at}.tls: TLS settings need mqtts:// URLs`);
  if (c.tls !== undefined && (c.tls.certFile === undefined) !== (c.tls.keyFile === undefined)) out.push(`${at}.tls: certFile and keyFile go together (mutual TLS)`);
  for (const key of ["caFile", "certFile", "keyFile"] as const) {
    const f = c.tls?.[key];
    if (f !== undefined && !existsSync(f)) out.push(`${at}.tls.${key}: no file ${f}`);
  }
  if (c.password !== undefined && c.passwordFile !== undefined) out.push(`${at}.passwordFile: give password or passwordFile, not both`);
  if (c.passwordFile !== undefined && !existsSync(c.passwordFile)) out.push(`${at}.passwordFile: no file ${c.passwordFile}`);
  return out;
}

/** The mqtt.js options for a connection: credentials from the config or its file, TLS files read here. */
export function mqttConnectionOptions(c: Omit<MqttConnectionConfig, "url">): IClientOptions {
  const read = (f: string | undefined): Buffer | undefined => (f === undefined ? undefined : readFileBounded(f));
  const password = c.passwordFile !== undefined ? readTextBounded(c.passwordFile).replace(/\r?\n$/, "") : c.password;
  return {
    username: c.username,
    password,
    keepalive: c.keepaliveS,
    connectTimeout: c.connectTimeoutMs,
    // MQTT 5: the broker must not send a larger packet (mosquitto drops it for this client);
    // mqtt.js ignores the property on 3.1.1, where the payload checks are all there is
    properties: { maximumPacketSize: c.maxPacketBytes },
    ...(c.tls === undefined ? {} : { ca: read(c.tls.caFile), cert: read(c.tls.certFile), key: read(c.tls.keyFile), servername: c.tls.servername, rejectUnauthorized: true }),
  };
}

/**
 * Turns Nagle off on a connected client's socket: with it on, a small publish waits for the
 * previous one's ACK, a 35–44 ms tail on loopback. mqtt.js exposes the socket as `stream`, typed
 * as a generic duplex (a WebSocket stream has no setNoDelay, hence the optional call).
 */
export function disableNagle(client: MqttClient): void {
  (client.stream as { setNoDelay?: (on: boolean) => void } | undefined)?.setNoDelay?.(true);
}

/** A packet over the limit, as its header claims it: its total size, and a PUBLISH's topic if it came in the same chunk. */
export interface Oversize {
  claimedBytes: number;
  topic?: string;
}

/**
 * Follows MQTT's framing on an incoming byte stream: each packet's fixed header (type byte and
 * "remaining length") and then its body, skipped. `feed` returns the packet a header claims to
 * be over the limit (claimedBytes NaN for a length field of more than 4 bytes), else null.
 */
export class MqttFrameTracker {
  private skip = 0;
  private type = 0;
  private inLength = false;
  private length = 0;
  private multiplier = 1;
  private lengthBytes = 0;

  constructor(private readonly maxBytes: number) {}

  feed(d: Buffer): Oversize | null {
    let i = 0;
    while (i < d.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, d.length - i);
        this.skip -= n;
        i += n;
      } else if (!this.inLength) {
        this.type = d[i++] >> 4;
        this.inLength = true;
        this.length = 0;
        this.multiplier = 1;
        this.lengthBytes = 0;
      } else {
        const b = d[i++];
        this.length += (b & 0x7f) * this.multiplier;
        this.multiplier *= 128;
        this.lengthBytes++;
        if ((b & 0x80) !== 0) {
          if (this.lengthBytes >= 4) return { claimedBytes: NaN };
          continue;
        }
        const total = 1 + this.lengthBytes + this.length;
        if (total > this.maxBytes) {
          // a PUBLISH names its topic first: the points it feeds can be told, when it is here
          const n = i + 2 <= d.length ? d.readUInt16BE(i) : -1;
          return this.type === 3 && n >= 0 && i + 2 + n <= d.length ? { claimedBytes: total, topic: d.toString("utf8", i + 2, i + 2 + n) } : { claimedBytes: total };
        }
        this.inLength = false;
        this.skip = this.length;
      }
    }
    return null;
  }
}

/**
 * How far above maxPacketBytes a packet may be before its connection is ended rather than the
 * packet read and refused. Between the two, the packet is read whole (mqtt.js knows no other
 * way) and refused unparsed, and the connection carries on: a retained message that size would
 * otherwise cut every new connection as it was redelivered. Beyond it, reading is refused.
 */
export const HARD_PACKET_FACTOR = 4;

/**
 * Ends a connection the moment a packet's header claims more than maxBytes, before the client
 * reads its body. mqtt.js checks maximumPacketSize only once a packet is whole: a hostile or
 * broken broker could make it buffer up to 256 MB first (test/fuzz-mqtt.test.ts sends the
 * bytes). The tracker sees each chunk right after the parser does, so at most one chunk of the
 * oversized packet is ever held. Follows the client's streams across its reconnects.
 */
export function guardPacketSize(client: MqttClient, maxBytes: number, onOversize: (o: Oversize) => void): void {
  const guarded = new WeakSet<object>();
  const attach = (): void => {
    const stream = client.stream as (NodeJS.ReadableStream & { destroy(): void }) | undefined;
    if (stream === undefined || guarded.has(stream)) return;
    guarded.add(stream);
    const tracker = new MqttFrameTracker(maxBytes);
    stream.on("data", (d: Buffer) => {
      const over = tracker.feed(d);
      if (over === null) return;
      onOversize(over);
      stream.destroy();
    });
  };
  attach();
  // a reconnect builds a new stream synchronously after this event; one that ends the old
  // connection first builds it later, and "connect" catches that one
  client.on("reconnect", () => process.nextTick(attach));
  client.on("connect", attach);
}

/**
 * Ends the connection on a packet that breaks the protocol: a reserved packet type, QoS 3, a
 * length field of five bytes, a second CONNACK. MQTT says the receiver of a malformed packet
 * closes the network connection (3.1.1 §4.8, 5.0 §4.13); mqtt.js 5.16 only emits "error" and
 * reads on. Measured: a broker that sent any of the first three and then answered pings kept the
 * connection as long as it liked, and what followed the bad bytes could be read from the middle
 * of a packet. Ending it makes the owner reconnect, and a new connection starts its byte stream
 * clean. A socket's own error (it has a syscall) closes the socket anyway and is left to mqtt.js.
 */
export function endOnProtocolError(client: MqttClient, onEnd: (err: Error) => void): void {
  client.on("error", (err: Error & { syscall?: string }) => {
    const stream = client.stream as { destroyed?: boolean; destroy(): void } | undefined;
    if (err.syscall !== undefined || stream === undefined || stream.destroyed === true) return;
    onEnd(err);
    stream.destroy();
  });
}

/**
 * A broker silent for this many keepalives is given up on. mqtt.js pings after one keepalive
 * without an acknowledgement, so a live broker answers well inside the remaining 0.45; checked
 * every keepalive/40, the detection stays within the 1.5x the `keepaliveS` key promises.
 */
const SILENCE_LIMIT = 1.45;

/** Whether a QoS 1 publish (or a subscribe) awaits the broker's acknowledgement: mqtt.js keeps them in `outgoing` by message id. */
function awaitsAck(client: MqttClient): boolean {
  for (const _ in client.outgoing) return true;
  return false;
}

/**
 * A broker that has acknowledged none of the QoS 1 publishes awaiting it for this many
 * keepalives is given up on, though it answers pings: a clustered broker's node that lost its
 * peers (a partition) kept the pod's connection and its pings going, took every publish and
 * acknowledged none, until the partition healed (test/fleet-cluster.test.ts). Three keepalives
 * leave a loaded broker time for a backlog: a live one acknowledges within milliseconds.
 */
export const ACK_LIMIT = 3;

/** Why a connection was given up: nothing at all heard, or no acknowledgement of what awaits one. */
export type Silence = "silent" | "unacknowledged";

/**
 * Gives up a connection whose broker has sent nothing, not even a PINGRESP, for SILENCE_LIMIT
 * keepalives (a hung broker, a silent partition), or has acknowledged nothing for ACK_LIMIT
 * keepalives while QoS 1 publishes await it. mqtt.js's own check fires at 1.5x plus its timer's
 * delay, a few ms late, and has no acknowledgement check. Destroying the socket closes the
 * client as any lost connection does, and its owner reconnects. Returns the function that
 * stops the watch.
 *
 * A silence mqtt.js's check caught first is reported too. mqtt.js puts its timer back on an
 * acknowledgement or a PINGRESP, not on a QoS 0 message: a subscriber's ping goes out one
 * keepalive after the last PINGRESP and times out half a keepalive later, which can come before
 * 1.45 keepalives since the last message (a fresh clone's CI, 2026-12-07: the ingest's
 * silent-broker test counted no drop though the connection was given up). The count must say
 * why a connection went.
 */
export function watchBrokerSilence(client: MqttClient, keepaliveS: number, onSilent: (silentMs: number, why: Silence) => void): () => void {
  let lastHeardMs = performance.now();
  // the last acknowledgement, or the last moment nothing awaited one
  let lastAckMs = lastHeardMs;
  const heard = (packet: { cmd: string }): void => {
    lastHeardMs = performance.now();
    if (packet.cmd === "puback" || packet.cmd === "suback" || packet.cmd === "unsuback" || packet.cmd === "connack") lastAckMs = lastHeardMs;
  };
  client.on("packetreceive", heard); // the CONNACK too: a new connection starts heard
  const keepaliveTimeout = (err: Error): void => {
    if (err.message === "Keepalive timeout") onSilent(performance.now() - lastHeardMs, "silent");
  };
  client.on("error", keepaliveTimeout);
  const timer = setInterval(() => {
    if (!client.connected) return;
    const now = performance.now();
    if (!awaitsAck(client)) lastAckMs = now;
    const silentMs = now - lastHeardMs;
    const unackedMs = now - lastAckMs;
    if (silentMs > SILENCE_LIMIT * keepaliveS * 1000) onSilent(silentMs, "silent");
    else if (unackedMs > ACK_LIMIT * keepaliveS * 1000) onSilent(unackedMs, "unacknowledged");
    else return;
    client.stream.destroy();
  }, (keepaliveS * 1000) / 40);
  return () => {
    clearInterval(timer);
    client.off("packetreceive", heard);
    client.off("error", keepaliveTimeout);
  };
}
