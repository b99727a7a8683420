// MQTT sensor ingest against real brokers: aedes in-process, and mosquitto for mutual TLS.
import { readFileSync } from "node:fs";
import mqtt, { type MqttClient } from "mqtt";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MqttIngest, jsonPath, sourceTimeMs, topicMatches, type IngestConfig, type IngestPointConfig } from "../drivers/mqtt-ingest.js";
import { monoMs } from "../lib/clock.js";
import { startEmbeddedBroker, type EmbeddedBroker } from "../lib/embedded-broker.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { MALFORMED_MQTT_PACKETS } from "../hil/mission-control.js";
import { PartitionProxy } from "../tooling/partition-proxy.js";
import { brokerPki, type TestPki } from "./helpers/pki.js";
import { waitFor } from "./helpers/processes.js";

const pt = (over: Partial<IngestPointConfig> & { id: string; topic: string }): IngestPointConfig => ({ path: "", timeUnit: "ms", staleMs: 5000, scale: 1, offset: 0, ...over });
/** An ingest config with the schema's defaults. */
const ingestConfig = (url: string, points: IngestPointConfig[], over: Partial<IngestConfig> = {}): IngestConfig => ({
  url,
  clientId: `ingest-${Math.random().toString(16).slice(2)}`,
  keepaliveS: 10,
  connectTimeoutMs: 5000,
  maxPacketBytes: 262_144,
  // aedes speaks MQTT 3.1.1; the mosquitto tests below set 5
  protocolVersion: 4,
  maxClockSkewMs: 2000,
  points,
  ...over,
});

describe("MQTT ingest helpers", () => {
  it("matches topic filters with + and #", () => {
    expect(topicMatches("a/+/c", "a/b/c")).toBe(true);
    expect(topicMatches("a/+/c", "a/b/d")).toBe(false);
    expect(topicMatches("a/#", "a/b/c")).toBe(true);
    expect(topicMatches("a/b", "a/b/c")).toBe(false);
    expect(topicMatches("a/b/c", "a/b")).toBe(false);
  });

  it("follows JSON paths", () => {
    const v = { a: { b: [{ c: 4 }, { c: 5 }] }, t: 21.5 };
    expect(jsonPath(v, "t")).toBe(21.5);
    expect(jsonPath(v, "a.b[1].c")).toBe(5);
    expect(jsonPath(v, "a.x.c")).toBeUndefined();
    expect(jsonPath(3, "")).toBe(3);
  });

  it("reads a source time as epoch ms or s, or ISO 8601 with a zone, and nothing else", () => {
    expect(sourceTimeMs(1_700_000_000_123, "ms")).toBe(1_700_000_000_123);
    expect(sourceTimeMs(1_700_000_000, "s")).toBe(1_700_000_000_000);
    expect(sourceTimeMs("2026-11-30T12:00:00.5Z", "ms")).toBe(Date.UTC(2026, 10, 30, 12, 0, 0, 500));
    expect(sourceTimeMs("2026-11-30T13:00:00+01:00", "ms")).toBe(Date.UTC(2026, 10, 30, 12));
    for (const bad of ["2026-11-30T12:00:00", "2026-11-30", "yesterday", "", null, undefined, true, {}]) expect(sourceTimeMs(bad, "ms"), JSON.stringify(bad)).toBeNaN();
  });
});

describe("MQTT ingest", () => {
  let broker: EmbeddedBroker;
  let pub: MqttClient;
  let ingest: MqttIngest | null = null;

  beforeAll(async () => {
    broker = await startEmbeddedBroker();
    pub = await mqtt.connectAsync(broker.url, { clientId: "test-publisher" });
  });
  afterEach(async () => {
    await ingest?.stop();
    ingest = null;
  });
  afterAll(async () => {
    await pub.endAsync(true);
    await broker.close();
  });

  const start = async (points: IngestPointConfig[]): Promise<MqttIngest> => {
    const i = new MqttIngest(ingestConfig(broker.url, points));
    ingest = i;
    i.start();
    await waitFor(() => i.points.get(points[0].id) !== undefined, "ingest running", 5000);
    return i;
  };

  it("turns messages into points with a JSON path, scale and unit", async () => {
    const i = await start([pt({ id: "rack1.inletC", topic: "site/sensors/+/inlet", path: "data.tempC", unit: "°C", staleMs: 60_000 }), pt({ id: "rack1.kw", topic: "site/power/rack1", scale: 0.001, staleMs: 60_000 })]);
    await waitFor(async () => {
      await pub.publishAsync("site/sensors/rack1/inlet", JSON.stringify({ data: { tempC: 31.25 } }), { qos: 1 });
      return i.points.get("rack1.inletC")?.quality === "good";
    }, "inlet point");
    await pub.publishAsync("site/power/rack1", "72500", { qos: 1 });
    await waitFor(() => i.points.get("rack1.kw")?.quality === "good", "power point");
    expect(i.points.get("rack1.inletC")).toMatchObject({ value: 31.25, unit: "°C", quality: "good" });
    expect(i.points.get("rack1.kw")!.value).toBeCloseTo(72.5, 9);
  });

  it.each([
    ["not JSON", "{temp"],
    ["missing path", JSON.stringify({ other: 1 })],
    ["a string", JSON.stringify({ tempC: "31" })],
    ["null", JSON.stringify({ tempC: null })],
  ])("marks %s invalid and keeps the last value's source time", async (_what, payload) => {
    const i = await start([pt({ id: "p", topic: "t/x", path: "tempC", staleMs: 60_000 })]);
    await waitFor(async () => {
      await pub.publishAsync("t/x", JSON.stringify({ tempC: 20 }), { qos: 1 });
      return i.points.get("p")?.quality === "good";
    }, "good first");
    await new Promise((r) => setTimeout(r, 100)); // let duplicate retries of the first publish land
    const good = i.points.get("p")!;
    await pub.publishAsync("t/x", payload, { qos: 1 });
    await waitFor(() => i.points.get("p")?.quality === "invalid", "invalid");
    expect(i.points.get("p")).toMatchObject({ value: 20, sourceTimeMs: good.sourceTimeMs });
  });

  it("goes stale when messages stop, and good again when they return", async () => {
    const i = await start([pt({ id: "s", topic: "t/stale", staleMs: 150 })]);
    await waitFor(async () => {
      await pub.publishAsync("t/stale", "1", { qos: 1 });
      return i.points.get("s")?.quality === "good";
    }, "good");
    await waitFor(() => i.points.get("s")?.quality === "stale", "stale");
    expect(i.points.get("s")?.detail).toMatch(/sensor broker is connected/); // the sensor went quiet, not the broker
    await pub.publishAsync("t/stale", "2", { qos: 1 });
    await waitFor(() => i.points.get("s")?.quality === "good" && i.points.get("s")?.value === 2, "good again");
  });

  it("resubscribes after the broker drops its connection", async () => {
    const i = await start([pt({ id: "r", topic: "t/re", staleMs: 60_000 })]);
    broker.dropClients();
    await waitFor(async () => {
      if (!pub.connected) return false;
      await pub.publishAsync("t/re", "42", { qos: 1 });
      return i.points.get("r")?.value === 42;
    }, "message after reconnect", 15_000, 200);
  });

  it("gives up a silent broker's connection, counts it, goes stale meanwhile, and reads again once the link heals", async () => {
    const link = new PartitionProxy(broker.port);
    await link.listen();
    const silences: number[] = [];
    const i = new MqttIngest(ingestConfig(`mqtt://127.0.0.1:${link.port}`, [pt({ id: "q", topic: "t/quiet", staleMs: 500 })], { keepaliveS: 1 }), (ms) => silences.push(ms));
    ingest = i;
    try {
      i.start();
      await waitFor(async () => {
        await pub.publishAsync("t/quiet", "1", { qos: 1 });
        return i.points.get("q")?.quality === "good";
      }, "good through the link");
      link.setMode("drop"); // the link goes silent both ways: no PINGRESP comes back
      await waitFor(() => i.silentBrokerDrops > 0, "silent broker given up", 5000);
      // by the watch (1.45 keepalives of silence) or by mqtt.js's unanswered ping, whichever came
      // first: a subscriber's QoS 0 messages do not put mqtt.js's timer back, so its ping can go
      // out and time out before 1.45 keepalives have passed since the last message; either way
      // not before a ping has gone unanswered for half a keepalive
      expect(silences[0]).toBeGreaterThanOrEqual(500);
      await waitFor(() => !i.connected, "disconnected");
      await waitFor(() => i.points.get("q")?.quality === "stale", "stale while cut off");
      await waitFor(() => /sensor broker is not connected/.test(i.points.get("q")?.detail ?? ""), "stale, and why");
      link.setMode("pass");
      await waitFor(async () => {
        await pub.publishAsync("t/quiet", "2", { qos: 1 });
        return i.points.get("q")?.quality === "good" && i.points.get("q")?.value === 2;
      }, "good again after the reconnect", 15_000, 200);
      expect(i.connected).toBe(true);
    } finally {
      await i.stop();
      ingest = null;
      await link.close();
    }
  });

  it("ends the connection on a packet that breaks the protocol though the broker talks on, counts it, and reads again on the next", async () => {
    const link = new PartitionProxy(broker.port);
    await link.listen();
    const said: string[] = [];
    // keepalive 60 s: the silence watch (1.45 keepalives) cannot be what ends the connection here
    const i = new MqttIngest(ingestConfig(`mqtt://127.0.0.1:${link.port}`, [pt({ id: "p", topic: "t/proto", staleMs: 60_000 })], { keepaliveS: 60 }), undefined, undefined, (m) => said.push(m));
    ingest = i;
    try {
      i.start();
      // a reserved packet type, QoS 3, a length field of five bytes (mqtt.js reads on after each)
      for (const [k, b] of MALFORMED_MQTT_PACKETS.slice(0, 3).entries()) {
        await waitFor(async () => {
          await pub.publishAsync("t/proto", String(k), { qos: 1 });
          return i.points.get("p")?.value === k;
        }, `reading ${k} through the link`, 15_000, 100);
        const connections = link.connections;
        expect(link.injectToClients(b)).toBe(1);
        await waitFor(() => i.protocolErrorDrops === k + 1 && link.connections > connections, `connection ${k} ended and made again`, 10_000);
      }
      expect(said).toEqual(["Not supported", "Packet must not have both QoS bits set to 1", "Invalid variable byte integer"]);
      expect(i.silentBrokerDrops).toBe(0);
      await waitFor(async () => {
        await pub.publishAsync("t/proto", "7", { qos: 1 });
        return i.points.get("p")?.value === 7;
      }, "reading again after the last", 15_000, 100);
    } finally {
      await i.stop();
      ingest = null;
      await link.close();
    }
  });

  it("ignores a retained message it cannot date, and takes the next live one", async () => {
    // the broker's retained copy may be all that is left of a sensor that died hours ago
    await pub.publishAsync("t/retained", "17", { qos: 1, retain: true });
    try {
      const i = await start([pt({ id: "ret", topic: "t/retained", staleMs: 60_000 })]);
      await waitFor(() => i.retainedIgnored >= 1, "retained message delivered and ignored");
      expect(i.points.get("ret")?.quality).toBe("stale"); // never had a sample
      await pub.publishAsync("t/retained", "18", { qos: 1 });
      await waitFor(() => i.points.get("ret")?.quality === "good", "live message");
      expect(i.points.get("ret")?.value).toBe(18);
    } finally {
      await pub.publishAsync("t/retained", "", { qos: 1, retain: true });
    }
  });

  it("dates a sample by its own source time (timePath): a retained or queued reading arrives as old as it is", async () => {
    const dated = (id: string, topic: string): IngestPointConfig => pt({ id, topic, path: "v", timePath: "ts", staleMs: 60_000 });
    await pub.publishAsync("t/dated/recent", JSON.stringify({ v: 5, ts: Date.now() - 1000 }), { qos: 1, retain: true });
    await pub.publishAsync("t/dated/old", JSON.stringify({ v: 6, ts: new Date(Date.now() - 120_000).toISOString() }), { qos: 1, retain: true });
    try {
      const i = await start([dated("recent", "t/dated/recent"), dated("old", "t/dated/old")]);
      await waitFor(() => i.points.get("recent")?.value === 5 && i.points.get("old")?.value === 6, "both retained samples used");
      const recent = i.points.get("recent")!;
      expect(recent.quality).toBe("good");
      expect(monoMs() - recent.sourceTimeMs).toBeGreaterThanOrEqual(1000);
      // two minutes old against a one-minute window: stale the moment it arrives
      const old = i.points.get("old")!;
      expect(old.quality).toBe("stale");
      expect(monoMs() - old.sourceTimeMs).toBeGreaterThanOrEqual(120_000);
      expect(i.retainedIgnored).toBe(0);
    } finally {
      await pub.publishAsync("t/dated/recent", "", { qos: 1, retain: true });
      await pub.publishAsync("t/dated/old", "", { qos: 1, retain: true });
    }
  });

  it("never lets an older reading replace a newer one", async () => {
    const i = await start([pt({ id: "o", topic: "t/order", path: "v", timePath: "t", timeUnit: "s", staleMs: 60_000 })]);
    const nowS = Date.now() / 1000;
    await pub.publishAsync("t/order", JSON.stringify({ v: 1, t: nowS - 0.1 }), { qos: 1 });
    await waitFor(() => i.points.get("o")?.value === 1, "newer reading");
    const newer = i.points.get("o")!;
    await pub.publishAsync("t/order", JSON.stringify({ v: 2, t: nowS - 5 }), { qos: 1 }); // a gateway flushing its queue
    await waitFor(() => i.outOfOrder === 1, "older reading refused");
    expect(i.points.get("o")).toEqual(newer);
  });

  it.each([
    ["no source time", { v: 3 }],
    ["a time without a zone", { v: 3, ts: "2026-11-30T12:00:00" }],
    ["a time from the future, beyond the clock skew", { v: 3, ts: Date.now() + 60_000 }],
    ["a time that is not a time", { v: 3, ts: "soon" }],
  ])("marks a sample with %s invalid", async (_what, body) => {
    const i = await start([pt({ id: "d", topic: "t/dating", path: "v", timePath: "ts", staleMs: 60_000 })]);
    await pub.publishAsync("t/dating", JSON.stringify({ v: 1, ts: Date.now() }), { qos: 1 });
    await waitFor(() => i.points.get("d")?.quality === "good", "good first");
    const good = i.points.get("d")!;
    await pub.publishAsync("t/dating", JSON.stringify(body), { qos: 1 });
    await waitFor(() => i.points.get("d")?.quality === "invalid", "invalid");
    expect(i.points.get("d")).toMatchObject({ value: 1, sourceTimeMs: good.sourceTimeMs });
    expect(i.rejected).toBe(1);
  });
});

describe("MQTT ingest: a message beyond maxPacketBytes is never parsed", () => {
  const big = (v: number): string => JSON.stringify({ v, pad: "x".repeat(2_000_000) });

  it("on MQTT 3.1.1 (aedes): cuts the connection at the packet's header, marks its points invalid, counts it, and reads the next one", async () => {
    const broker = await startEmbeddedBroker();
    const pub = await mqtt.connectAsync(broker.url, { clientId: "oversize-publisher" });
    const i = new MqttIngest(ingestConfig(broker.url, [pt({ id: "big.v", topic: "t/big", path: "v", staleMs: 60_000 })], { maxPacketBytes: 65_536 }));
    try {
      i.start();
      await waitFor(async () => {
        await pub.publishAsync("t/big", JSON.stringify({ v: 1 }), { qos: 1 });
        return i.points.get("big.v")?.quality === "good";
      }, "a good reading first");
      const parse = JSON.parse;
      let parsedBytes = 0;
      JSON.parse = ((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
        parsedBytes = Math.max(parsedBytes, text.length);
        return parse(text, reviver) as unknown;
      }) as typeof JSON.parse;
      try {
        await pub.publishAsync("t/big", big(99), { qos: 1 });
        await waitFor(() => i.oversized === 1, "the oversized message refused");
      } finally {
        JSON.parse = parse;
      }
      expect(parsedBytes, "largest payload handed to JSON.parse").toBeLessThan(65_536);
      expect(i.points.get("big.v")).toMatchObject({ value: 1, quality: "invalid" }); // never 99
      // the connection was ended before the body was read (mqtt.js would have read all 2 MB);
      // the ingest reconnects on its own and takes the next reading
      await waitFor(async () => {
        await pub.publishAsync("t/big", JSON.stringify({ v: 2 }), { qos: 1 });
        return i.points.get("big.v")?.value === 2 && i.points.get("big.v")?.quality === "good";
      }, "the next reading", 10_000, 200);
    } finally {
      await i.stop();
      await pub.endAsync(true);
      await broker.close();
    }
  });

  it("on MQTT 5 (mosquitto): the broker is told maximumPacketSize and never delivers it", async () => {
    const broker = await Mosquitto.start();
    const pub = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, { clientId: "oversize-publisher-5", protocolVersion: 5 });
    const i = new MqttIngest(ingestConfig(`mqtt://127.0.0.1:${broker.port}`, [pt({ id: "big5.v", topic: "t/big5", path: "v", staleMs: 60_000 })], { maxPacketBytes: 65_536, protocolVersion: 5 }));
    try {
      i.start();
      await waitFor(async () => {
        await pub.publishAsync("t/big5", JSON.stringify({ v: 1 }), { qos: 1 });
        return i.points.get("big5.v")?.quality === "good";
      }, "a good reading first");
      const before = i.messages;
      await pub.publishAsync("t/big5", big(99), { qos: 1 });
      await pub.publishAsync("t/big5", JSON.stringify({ v: 2 }), { qos: 1 });
      await waitFor(() => i.points.get("big5.v")?.value === 2, "the next reading");
      expect(i.messages - before, "messages delivered: the small one only").toBe(1);
      expect(i.oversized).toBe(0);
      expect(i.connected).toBe(true);
    } finally {
      await i.stop();
      await pub.endAsync(true);
      await broker.stop();
    }
  });
});

describe("MQTT ingest over mutual TLS, with a real mosquitto", () => {
  let pki: TestPki;
  let broker: Mosquitto;
  let sensor: MqttClient;
  const ingests: MqttIngest[] = [];

  beforeAll(async () => {
    pki = await brokerPki(["ingest", "sensor"]);
    broker = await Mosquitto.start({ conf: pki.mosquittoTls() });
    const f = (n: string): Buffer => readFileSync(pki.file(n));
    sensor = await mqtt.connectAsync(`mqtts://127.0.0.1:${broker.port}`, { ca: f("ca.pem"), cert: f("sensor.pem"), key: f("sensor.key"), rejectUnauthorized: true, clientId: "tls-sensor" });
  }, 60_000);
  afterAll(async () => {
    for (const i of ingests) await i.stop();
    await sensor?.endAsync(true);
    await broker?.stop();
    pki?.remove();
  });

  const ingest = (tls: IngestConfig["tls"]): MqttIngest => {
    const i = new MqttIngest(ingestConfig(`mqtts://127.0.0.1:${broker.port}`, [pt({ id: "tls.t", topic: "site/tls/t", staleMs: 60_000 })], { tls }));
    ingests.push(i);
    i.start();
    return i;
  };

  it("reads sensors through a broker it verifies, with its own client certificate", async () => {
    const i = ingest({ caFile: pki.file("ca.pem"), certFile: pki.file("ingest.pem"), keyFile: pki.file("ingest.key") });
    await waitFor(async () => {
      await sensor.publishAsync("site/tls/t", "21.5", { qos: 1 });
      return i.points.get("tls.t")?.quality === "good";
    }, "a sample over mutual TLS", 10_000, 200);
    expect(i.points.get("tls.t")?.value).toBe(21.5);
  });

  it("reads nothing from a broker its CA did not sign, or without a client certificate", async () => {
    const wrongCa = ingest({ caFile: pki.file("rogue-ca.pem"), certFile: pki.file("ingest.pem"), keyFile: pki.file("ingest.key") });
    const noCert = ingest({ caFile: pki.file("ca.pem") });
    for (let k = 0; k < 10; k++) {
      await sensor.publishAsync("site/tls/t", "22", { qos: 1 });
      await new Promise((r) => setTimeout(r, 150));
    }
    for (const i of [wrongCa, noCert]) {
      expect(i.messages).toBe(0);
      expect(i.points.get("tls.t")?.quality).not.toBe("good");
    }
  });
});
