// MQTT sensor ingest against real brokers: aedes in-process, and mosquitto for mutual TLS.
import { readFileSync } from "node:fs";
import mqtt, { type MqttClient } from "mqtt";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MqttIngest, jsonPath, topicMatches, type IngestConfig, type IngestPointConfig } from "../drivers/mqtt-ingest.js";
import { startEmbeddedBroker, type EmbeddedBroker } from "../lib/embedded-broker.js";
import { Mosquitto } from "../lib/mosquitto-process.js";
import { brokerPki, type TestPki } from "./helpers/pki.js";
import { waitFor } from "./helpers/processes.js";

const pt = (over: Partial<IngestPointConfig> & { id: string; topic: string }): IngestPointConfig => ({ path: "", staleMs: 5000, scale: 1, offset: 0, ...over });
/** An ingest config with the schema's defaults. */
const ingestConfig = (url: string, points: IngestPointConfig[], over: Partial<IngestConfig> = {}): IngestConfig => ({
  url,
  clientId: `ingest-${Math.random().toString(16).slice(2)}`,
  keepaliveS: 10,
  connectTimeoutMs: 5000,
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
