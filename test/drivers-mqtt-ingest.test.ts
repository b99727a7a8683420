// MQTT sensor ingest against a real broker (aedes, in-process).
import mqtt, { type MqttClient } from "mqtt";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MqttIngest, jsonPath, topicMatches, type IngestPointConfig } from "../drivers/mqtt-ingest.js";
import { startEmbeddedBroker, type EmbeddedBroker } from "../lib/embedded-broker.js";
import { waitFor } from "./helpers/processes.js";

const pt = (over: Partial<IngestPointConfig> & { id: string; topic: string }): IngestPointConfig => ({ path: "", staleMs: 5000, scale: 1, offset: 0, ...over });

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
    const i = new MqttIngest({ url: broker.url, clientId: `ingest-${Math.random().toString(16).slice(2)}`, points });
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
