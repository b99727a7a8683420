// MQTT sensor ingest fuzzing: 5,000 seeded (FUZZ_SEED) messages through a real broker (aedes at
// MQTT 3.1.1, then mosquitto at MQTT 5, which is told the ingest's maximumPacketSize and must
// not deliver beyond it) to an ingest of three points (a bare number, a path, a path with its own source time):
// well-formed readings, structurally mutated JSON, random bytes, wrong types, retained or not,
// some beyond maxPacketBytes. Oracles written here, not taken from the code under test: a point
// that reads good holds a value some message on its topic really carried at its path (scaled),
// never a non-finite one, with a source time not in the future; nothing pollutes a prototype;
// every message delivered is counted; and a clean reading afterwards is taken.
import mqtt from "mqtt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MqttIngest, type IngestConfig, type IngestPointConfig } from "../drivers/mqtt-ingest.js";
import { startEmbeddedBroker } from "../lib/embedded-broker.js";
import { HARD_PACKET_FACTOR } from "../lib/mqtt-connection.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { fuzzSeed, mutateJson, Prng } from "./helpers/fuzz.js";
import { waitFor } from "./helpers/processes.js";

const POINTS: IngestPointConfig[] = [
  { id: "a.temp", topic: "s/+/temp", path: "v", timeUnit: "ms", staleMs: 60_000, scale: 1, offset: 0 },
  { id: "b.flow", topic: "s/b/flow", path: "m.flow[0]", timePath: "t", timeUnit: "ms", staleMs: 60_000, scale: 0.5, offset: 1 },
  { id: "c.bare", topic: "s/c/bare", path: "", timeUnit: "ms", staleMs: 60_000, scale: 1, offset: 0 },
];
const MAX_PACKET = 16 * 1024;

/** The value at a dotted path with [n] indices, read independently of drivers/mqtt-ingest.ts. */
function at(v: unknown, path: string): unknown {
  if (path === "") return v;
  let cur = v;
  for (const token of path.replace(/\[(\d+)\]/g, ".$1").split(".")) {
    if (cur === null || typeof cur !== "object" || !Object.prototype.hasOwnProperty.call(cur, token)) return undefined;
    cur = (cur as Record<string, unknown>)[token];
  }
  return cur;
}

interface FuzzBroker {
  url: string;
  close(): Promise<void>;
}

const BROKERS: { name: string; protocolVersion: 4 | 5; start: () => Promise<FuzzBroker> }[] = [
  { name: "aedes, MQTT 3.1.1", protocolVersion: 4, start: startEmbeddedBroker },
  {
    name: "mosquitto, MQTT 5",
    protocolVersion: 5,
    start: async () => {
      const m = await Mosquitto.start();
      return { url: m.url, close: () => m.stop() };
    },
  },
];

describe.each(BROKERS)("MQTT ingest fuzzing ($name)", ({ protocolVersion, start }) => {
  let broker: FuzzBroker;
  let ingest: MqttIngest;
  // at MQTT 5 the broker knows the ingest's maximumPacketSize and delivers nothing larger; at
  // 3.1.1 it delivers everything, and the ingest must refuse it (unparsed, or at the header)
  const delivers = (bytes: number): boolean => protocolVersion === 4 || bytes <= MAX_PACKET;

  beforeAll(async () => {
    broker = await start();
    const config: IngestConfig = { url: broker.url, clientId: `fuzz-ingest-${process.pid}`, keepaliveS: 10, connectTimeoutMs: 5000, maxPacketBytes: MAX_PACKET, protocolVersion, maxClockSkewMs: 2000, points: POINTS };
    ingest = new MqttIngest(config);
    ingest.start();
    await waitFor(() => ingest.connected, "ingest connected");
  });
  afterAll(async () => {
    await ingest?.stop();
    await broker?.close();
  });

  it("takes only what a message on a point's topic really carried, over 5,000 hostile messages", async () => {
    const seed = fuzzSeed(0x1a6e57);
    const rng = new Prng(seed);
    const pub = await mqtt.connectAsync(broker.url, { clientId: `fuzz-sensor-${process.pid}`, protocolVersion });
    // every value a point could rightly show: scaled finite numbers sent on its topic at its path
    const admissible = new Map<string, Set<number>>(POINTS.map((p) => [p.id, new Set<number>()]));
    const topics = ["s/a/temp", "s/x/temp", "s/b/flow", "s/c/bare", "s/b/flow/extra", "s/c", "other", "s/b/temp"];
    const counts = { sent: 0, delivered: 0, wellFormed: 0, mutated: 0, bytes: 0, oversized: 0, cutOff: 0, retained: 0 };
    const polluted = (): boolean => ({} as Record<string, unknown>).polluted !== undefined;
    const matching = (topic: string): IngestPointConfig[] =>
      POINTS.filter((p) => {
        const f = p.topic.split("/");
        const t = topic.split("/");
        return f.length === t.length && f.every((x, k) => x === "+" || x === t[k]);
      });
    // until a fresh reading comes through, the subscription may not be in place yet
    let probe = 1000;
    const resync = async (): Promise<void> => {
      const v = ++probe;
      admissible.get("c.bare")!.add(v);
      await waitFor(async () => {
        await pub.publishAsync("s/c/bare", String(v), { qos: 1 });
        return ingest.points.get("c.bare")?.value === v;
      }, "a probe reading through", 10_000, 20);
    };
    await resync();
    const messages0 = ingest.messages;
    let probes0 = 0;

    for (let i = 0; i < 5000; i++) {
      const topic = rng.pick(topics);
      const now = Date.now();
      const good = { v: rng.range(-50, 150), m: { flow: [rng.range(0, 500), 3] }, t: rng.chance(0.8) ? now - rng.int(0, 5000) : rng.pick([now + 60_000, "2026-12-01T00:00:00", new Date(now).toISOString(), now / 1000, -1]) };
      let payload: Buffer;
      const r = rng.next();
      if (r < 0.35) {
        counts.wellFormed++;
        payload = Buffer.from(topic === "s/c/bare" ? String(good.v) : JSON.stringify(good));
      } else if (r < 0.8) {
        counts.mutated++;
        payload = Buffer.from(JSON.stringify(mutateJson(rng, good)) ?? "null");
      } else if (r < 0.95) {
        counts.bytes++;
        payload = Buffer.from(Array.from({ length: rng.int(0, 300) }, () => rng.int(0, 255)));
      } else if (r < 0.98) {
        counts.oversized++;
        // mostly between maxPacketBytes and the hard limit (read, refused unparsed); a few beyond
        // it, each of which costs a reconnection (a second)
        const beyond = rng.chance(0.05);
        const extra = beyond ? rng.int(HARD_PACKET_FACTOR * MAX_PACKET, 2 * HARD_PACKET_FACTOR * MAX_PACKET) : rng.int(1, (HARD_PACKET_FACTOR - 1) * MAX_PACKET);
        payload = Buffer.concat([Buffer.from(JSON.stringify(good)), Buffer.alloc(extra, 0x20)]);
      } else {
        counts.wellFormed++;
        payload = Buffer.from(JSON.stringify({ ...good, v: rng.pick(["NaN", "1e999", null, true, [1], { x: 1 }, "42"]) }));
      }
      // (a retained message far over the limit would cut every new connection as it came back:
      // docs/drivers.md; the fuzzer does not leave one behind)
      const retain = payload.length <= HARD_PACKET_FACTOR * MAX_PACKET && rng.chance(0.1);
      if (retain) counts.retained++;
      // what a point may show after this message, worked out here
      let parsed: unknown;
      try {
        parsed = JSON.parse(payload.toString("utf8"));
      } catch {
        parsed = undefined;
      }
      if (payload.length <= MAX_PACKET) {
        for (const p of matching(topic)) {
          const v = at(parsed, p.path);
          if (typeof v === "number" && Number.isFinite(v)) admissible.get(p.id)!.add(v * p.scale + p.offset);
        }
      }
      const oversized0 = ingest.oversized;
      await pub.publishAsync(topic, payload, { qos: 1, retain });
      counts.sent++;
      if (matching(topic).length > 0 && delivers(payload.length)) {
        if (payload.length > HARD_PACKET_FACTOR * MAX_PACKET) {
          counts.cutOff++;
          // cut off at its header with its connection: wait for the ingest to be back, or the
          // messages behind it would only test a closed connection
          await waitFor(() => ingest.oversized > oversized0, "the oversized message refused", 10_000, 5);
          const before = ingest.messages;
          await resync(); // connected and subscribed again
          probes0 += ingest.messages - before;
        } else counts.delivered++; // (one between the limits is received, and refused unparsed)
      }
      if (polluted()) throw new Error(`FUZZ_SEED=${seed} case ${i}: Object.prototype was polluted`);
      // the oracle, as the readings stand
      for (const p of POINTS) {
        const pt = ingest.points.get(p.id);
        if (pt?.quality !== "good") continue;
        if (!Number.isFinite(pt.value) || !admissible.get(p.id)!.has(pt.value)) throw new Error(`FUZZ_SEED=${seed} case ${i}: ${p.id} good with ${pt.value}, which no message carried`);
      }
    }
    // every message on a point's topic under the limit was received (a reconnect also brings the
    // retained ones back, hence at least)
    await waitFor(() => ingest.messages - messages0 - probes0 >= counts.delivered, "every message received", 10_000);
    const delivered = ingest.messages - messages0 - probes0;
    if (protocolVersion === 4) {
      expect(ingest.oversized).toBeGreaterThan(0);
      expect(counts.cutOff, "messages beyond the hard limit, whose connection was ended").toBeGreaterThan(0);
    } else {
      // the broker kept every message over maximumPacketSize back: none reached the ingest
      expect(ingest.oversized).toBe(0);
      expect(counts.cutOff).toBe(0);
    }
    // a clean reading afterwards is taken at once
    await waitFor(async () => {
      await pub.publishAsync("s/a/temp", JSON.stringify({ v: 42.5 }), { qos: 1 });
      return ingest.points.get("a.temp")?.value === 42.5 && ingest.points.get("a.temp")?.quality === "good";
    }, "a clean reading", 10_000, 100);
    console.log(
      `ingest fuzzing (MQTT ${protocolVersion === 4 ? "3.1.1" : "5"}), FUZZ_SEED=${seed}: ${counts.sent} messages (${counts.wellFormed} well-formed, ${counts.mutated} mutated JSON, ${counts.bytes} random bytes, ${counts.oversized} over maxPacketBytes (${counts.cutOff} beyond the hard limit), ${counts.retained} retained); ` +
        `ingest: ${delivered} received, ${ingest.rejected} samples rejected, ${ingest.retainedIgnored} retained ignored, ${ingest.outOfOrder} out of order, ${ingest.oversized} oversized`,
    );
    await pub.endAsync(true);
  }, 180_000);
});
