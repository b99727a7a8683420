// MQTT from a hostile broker: a raw-socket "broker" that answers each connection of the pod's
// uplink with a seeded (FUZZ_SEED) mutated or random packet stream: malformed CONNACKs,
// impossible lengths, bad topics, QoS 3, stray acknowledgements, garbage. The agent must not
// crash, control must keep ticking, memory must stay bounded, and once the broker is honest
// again (the server turns into a proxy to mosquitto) the uplink must connect and deliver what it
// spooled. The regression corpus (test/corpus/mqtt, hex byte streams) is played first. A broker
// that breaks the protocol and talks on (a proxy writing bad packets into an honest mosquitto's
// stream) must have each such connection ended by the uplink itself.
import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MqttFrameTracker } from "../lib/mqtt-connection.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { PartitionProxy } from "../tooling/partition-proxy.js";
import { MALFORMED_MQTT_PACKETS } from "../hil/mission-control.js";
import { SparkplugEdgeNode } from "../agent/uplink/sparkplug/edge-node.js";
import { modelSourceOf } from "../agent/uplink/sparkplug/metrics.js";
import { corpus, fuzzSeed, mutateBytes, Prng } from "./helpers/fuzz.js";
import { waitFor } from "./helpers/processes.js";
import { startUplinkPod, type UplinkPod } from "./helpers/uplink.js";

const CONNACK_OK = Buffer.from([0x20, 0x03, 0x00, 0x00, 0x00]); // MQTT 5: flags, reason 0, no properties

function publish(topic: string, payload: string, qos: 0 | 1 = 0): Buffer {
  const t = Buffer.from(topic);
  const body = Buffer.concat([Buffer.from([t.length >> 8, t.length & 0xff]), t, qos > 0 ? Buffer.from([0, 1]) : Buffer.alloc(0), Buffer.from([0]), Buffer.from(payload)]);
  return Buffer.concat([Buffer.from([0x30 | (qos << 1), body.length]), body]);
}

/** MQTT's variable-length "remaining length". */
function remainingLength(n: number): Buffer {
  const out: number[] = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return Buffer.from(out);
}

/** bytes of the big PUBLISH packets made so far (each is sent: one per hostile connection) */
let bigBytesSent = 0;

/** one 64 KiB block of payload, sent again and again: the fuzzer itself allocates next to nothing */
const BLOCK = Buffer.alloc(65536, 0x7b);

/**
 * A PUBLISH that really carries as many bytes as its length field claims: its header, then the
 * payload as repeats of BLOCK (so the RSS measured is the pod's, not the fuzzer's).
 */
function bigPublish(topic: string, payloadBytes: number): Buffer[] {
  const t = Buffer.from(topic);
  const remaining = 2 + t.length + 1 + payloadBytes; // topic length, topic, no properties, payload
  const pieces = [Buffer.concat([Buffer.from([0x30]), remainingLength(remaining), Buffer.from([t.length >> 8, t.length & 0xff]), t, Buffer.from([0])])];
  for (let left = payloadBytes; left > 0; left -= BLOCK.length) pieces.push(left >= BLOCK.length ? BLOCK : BLOCK.subarray(0, left));
  bigBytesSent += pieces[0].length + payloadBytes;
  return pieces;
}

/** One hostile answer to a connection: the bytes to send, maybe in pieces. */
function hostileStream(rng: Prng): Buffer[] {
  const ok = [CONNACK_OK];
  switch (rng.int(0, 13)) {
    case 0:
      return [mutateBytes(rng, CONNACK_OK)];
    case 1:
      return [Buffer.from([0x20, 0x03, 0x00, rng.pick([0x80, 0x84, 0x86, 0x87, 0x88, 0x8a, 0x9c, 0xff]), 0x00])]; // refused, with reasons
    case 2:
      return [...ok, Buffer.from([0x30, 0xff, 0xff, 0xff, 0x7f])]; // a PUBLISH claiming 256 MB, and only its header sent
    case 12:
      // a PUBLISH that sends every byte it claims, above the pod's 256 KiB maxPacketBytes
      return [...ok, ...bigPublish("podwarden/demo/pod-a/request/setpoint", rng.int(300 * 1024, 4 * 1024 * 1024))];
    case 13:
      // and one just under it: delivered, then refused by the command checks
      return [...ok, ...bigPublish("podwarden/demo/pod-a/request/mode", rng.int(16 * 1024, 250 * 1024))];
    case 3:
      return [...ok, Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01])]; // a malformed length (5 bytes)
    case 4:
      return [...ok, publish("podwarden/demo/pod-a/request/setpoint", "x", 0).fill(0xff, 2, 4)]; // topic length past the end
    case 5:
      return [...ok, Buffer.from([0x36, 0x05, 0x00, 0x01, 0x61, 0x00, 0x01])]; // QoS 3
    case 6:
      return [...ok, publish("podwarden/demo/pod-a/request/\ud800", "{}", 1)]; // invalid UTF-8 topic
    case 7:
      return [...ok, Buffer.from([0x40, 0x02, rng.int(0, 255), rng.int(0, 255)]), Buffer.from([0x90, 0x04, 0x00, 0x01, 0x00, 0x80])]; // stray PUBACK, failing SUBACK
    case 8:
      return [...ok, Buffer.from([0xe0, 0x01, rng.pick([0x00, 0x8e, 0x9b, 0xff])])]; // DISCONNECT from the server
    case 9:
      return [...ok, Buffer.from(Array.from({ length: rng.int(1, 200) }, () => rng.int(0, 255)))];
    case 10:
      return [...ok, mutateBytes(rng, publish("podwarden/demo/pod-a/request/snapshot", '{"keyId":"x","signature":"y","body":"{}"}', 1))];
    default: {
      // a valid stream in random pieces, then garbage
      const all = Buffer.concat([CONNACK_OK, publish("podwarden/demo/pod-a/request/snapshot", "{}", 0), Buffer.from([rng.int(0, 255)])]);
      const pieces: Buffer[] = [];
      for (let at = 0; at < all.length; ) {
        const n = rng.int(1, all.length - at);
        pieces.push(all.subarray(at, at + n));
        at += n;
      }
      return pieces;
    }
  }
}

class HostileBroker {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  readonly scripted: Buffer[][] = [];
  connections = 0;
  /** when set, connections are piped to this honest broker */
  honest: number | null = null;
  port = 0;

  constructor(private readonly rng: Prng) {}

  async listen(): Promise<void> {
    this.server = createServer((s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
      s.on("error", () => undefined);
      if (this.honest !== null) {
        const up = connect(this.honest, "127.0.0.1");
        up.on("error", () => s.destroy());
        s.on("close", () => up.destroy());
        up.on("close", () => s.destroy());
        s.pipe(up);
        up.pipe(s);
        return;
      }
      this.connections++;
      const stream = this.scripted.shift() ?? hostileStream(this.rng);
      s.once("data", () => {
        let delay = 0;
        for (const piece of stream) {
          delay += this.rng.int(0, 3);
          setTimeout(() => (s.destroyed ? undefined : s.write(piece)), delay);
        }
        // a hostile broker may also just hang after its say: then the keepalive must catch it
        if (this.rng.chance(0.85)) setTimeout(() => s.destroy(), delay + this.rng.int(5, 50));
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, "127.0.0.1", () => r()));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server === null ? r() : this.server.close(() => r())));
  }
}

describe("MQTT from a hostile broker", () => {
  const seed = fuzzSeed(0x0b40_4e2);
  const hostile = new HostileBroker(new Prng(seed));
  let mosquitto: Mosquitto;
  let pod: UplinkPod;

  beforeAll(async () => {
    for (const { value } of corpus<{ why: string; hex: string[] }>("mqtt")) hostile.scripted.push(value.hex.map((h) => Buffer.from(h, "hex")));
    await hostile.listen();
    mosquitto = await Mosquitto.start();
    pod = await startUplinkPod({ brokerUrl: `mqtt://127.0.0.1:${hostile.port}`, protocolVersion: 5, uplink: { keepaliveS: 1, connectTimeoutMs: 300, reconnect: { baseMs: 10, maxMs: 40 } } });
  }, 60_000);
  afterAll(async () => {
    await pod?.stop();
    await hostile.close();
    await mosquitto?.stop();
  });

  it("survives 100 hostile connections, then connects to an honest broker and delivers what it spooled", async () => {
    const ticks0 = pod.agent.control.ticks;
    // RSS, not heapUsed: the Buffers a big packet is read into live outside the JS heap. Taken
    // after the first 20 connections, so the process's own start-up growth is not counted
    await waitFor(() => hostile.connections >= 20, "20 hostile connections", 120_000, 50);
    globalThis.gc?.();
    const rss0 = process.memoryUsage().rss;
    const big0 = bigBytesSent;
    await waitFor(() => hostile.connections >= 100, "100 hostile connections", 120_000, 50);
    expect(pod.agent.healthy()).toBe(true);
    expect(pod.agent.control.ticks).toBeGreaterThan(ticks0 + 1000);
    // nothing the hostile broker said was taken as a command
    expect(pod.uplink.stats().commands.accepted).toBe(0);
    globalThis.gc?.();
    const grewMb = (process.memoryUsage().rss - rss0) / 1024 / 1024;
    console.log(`hostile broker, FUZZ_SEED=${seed}: ${hostile.connections} connections, ${bigBytesSent >> 20} MiB sent in PUBLISH packets that carried all they claimed (${(bigBytesSent - big0) >> 20} MiB of it after the RSS baseline); RSS grew ${grewMb.toFixed(1)} MiB over connections 20 to 100`);
    expect(bigBytesSent).toBeGreaterThan(1024 * 1024);
    // the guard ended those connections at the header, before mqtt.js read the bodies
    expect(pod.logs.lines.some((l) => l.msg === "broker sent a packet far over maxPacketBytes: connection ended before reading it")).toBe(true);
    expect(grewMb).toBeLessThan(48);
    // the broker turns honest: the uplink connects and its spool drains
    hostile.honest = mosquitto.port;
    const spooled = pod.uplink.stats().spoolDepth.telemetry;
    expect(spooled).toBeGreaterThan(0);
    await waitFor(() => pod.uplink.stats().connected && pod.uplink.stats().spoolDepth.telemetry === 0 && pod.uplink.stats().spoolDepth.critical === 0, `FUZZ_SEED=${seed}: connected and drained`, 30_000);
  }, 180_000);
});

describe("MQTT from a broker that breaks the protocol and talks on", () => {
  let mosquitto: Mosquitto;
  let link: PartitionProxy;
  let pod: UplinkPod;

  beforeAll(async () => {
    mosquitto = await Mosquitto.start();
    link = new PartitionProxy(mosquitto.port);
    await link.listen();
    // keepalive 60 s: the silence watch (1.45 keepalives) cannot be what ends a connection here
    pod = await startUplinkPod({ brokerUrl: `mqtt://127.0.0.1:${link.port}`, protocolVersion: 5, pod: "pod-proto", uplink: { keepaliveS: 60, reconnect: { baseMs: 10, maxMs: 40 } } });
  }, 60_000);
  afterAll(async () => {
    await pod?.stop();
    await link?.close();
    await mosquitto?.stop();
  });

  it("ends the uplink's connection on each malformed packet, connects again and delivers, control untouched", async () => {
    const ticks0 = pod.agent.control.ticks;
    // a reserved packet type, QoS 3, a length field of five bytes (mqtt.js reads on after each),
    // and a header claiming 256 MB (the size guard's)
    for (const [k, b] of MALFORMED_MQTT_PACKETS.entries()) {
      await waitFor(() => pod.uplink.stats().connected, `connected before packet ${k}`, 15_000);
      const connections = link.connections;
      expect(link.injectToClients(b)).toBe(1);
      await waitFor(() => link.connections > connections && pod.uplink.stats().connected, `connection ${k} ended and made again`, 10_000);
    }
    const ended = pod.logs.lines.filter((l) => l.msg === "broker sent a packet that breaks the protocol: connection ended").map((l) => l.err);
    expect(ended).toEqual(["Not supported", "Packet must not have both QoS bits set to 1", "Invalid variable byte integer"]);
    // the size guard ends the 256 MB header's (and logs the five-byte length too, which it cannot frame)
    const guarded = pod.logs.lines.filter((l) => l.msg === "broker sent a packet far over maxPacketBytes: connection ended before reading it").map((l) => l.claimedBytes);
    expect(guarded).toContain(268_435_460);
    expect(pod.logs.lines.some((l) => typeof l.msg === "string" && l.msg.startsWith("broker silent"))).toBe(false);
    // what it spooled meanwhile is delivered, and control never waited
    await waitFor(() => pod.uplink.stats().spoolDepth.telemetry === 0 && pod.uplink.stats().spoolDepth.critical === 0, "spool drained", 15_000);
    expect(pod.agent.healthy()).toBe(true);
    expect(pod.agent.control.ticks).toBeGreaterThan(ticks0);
  }, 60_000);

  it("ends the Sparkplug edge node's connection on each malformed packet too, and it births again", async () => {
    const node = new SparkplugEdgeNode({
      pod: pod.agent,
      uplink: { ...pod.config.uplink!, sparkplug: { ...pod.config.uplink!.sparkplug, enabled: true, groupId: "proto" } },
      model: modelSourceOf(pod.config, "test", "test"),
      jsonUplink: () => pod.uplink.stats(),
      log: pod.agent.logs.module("sparkplug"),
    });
    node.start();
    try {
      for (const [k, b] of MALFORMED_MQTT_PACKETS.slice(0, 3).entries()) {
        await waitFor(() => node.stats().session && pod.uplink.stats().connected, `both sessions up before packet ${k}`, 15_000);
        const sessions = node.stats().sessions;
        // into every connection through the link: the JSON uplink's and the edge node's
        expect(link.injectToClients(b)).toBe(2);
        await waitFor(() => node.stats().sessions > sessions && node.stats().session, `the edge node's session ${k} ended and born again`, 10_000);
      }
      const ended = pod.logs.lines.filter((l) => l.msg === "sparkplug: broker sent a packet that breaks the protocol: connection ended").map((l) => l.err);
      expect(ended).toEqual(["Not supported", "Packet must not have both QoS bits set to 1", "Invalid variable byte integer"]);
    } finally {
      await node.stop();
    }
  }, 60_000);
});

describe("the MQTT frame tracker that bounds a packet before it is read", () => {
  it("follows valid streams cut anywhere, and stops at the first header claiming more than the limit", () => {
    const rng = new Prng(fuzzSeed(0xf4a3e));
    for (let trial = 0; trial < 200; trial++) {
      const packets = Array.from({ length: rng.int(1, 20) }, () => Buffer.concat(bigPublish("t/x", rng.int(0, 300))));
      const stream = Buffer.concat([CONNACK_OK, ...packets]);
      const t = new MqttFrameTracker(1024);
      for (let at = 0; at < stream.length; ) {
        const n = rng.int(1, 50);
        expect(t.feed(stream.subarray(at, at + n))).toBeNull();
        at += n;
      }
      // then a packet over the limit: caught at its header, whatever the chunking
      const big = Buffer.concat(bigPublish("t/x", 2000));
      const cut = rng.int(1, 6);
      const first = t.feed(big.subarray(0, cut));
      const over = first ?? t.feed(big.subarray(cut, cut + 64));
      expect(over?.claimedBytes).toBe(big.length);
      // its topic, when the chunk that ends the header carries it
      if (first === null) expect(over?.topic).toBe("t/x");
    }
    // a length field of five bytes is no MQTT at all
    expect(new MqttFrameTracker(1 << 20).feed(Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01]))?.claimedBytes).toBeNaN();
  });
});
