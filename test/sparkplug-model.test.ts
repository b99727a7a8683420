// The Sparkplug edge node's parts that need no broker: the metric model and its aliases, the
// quality mapping, device death, the stored-data bound, the payload codec round trip, and the
// config checks. The protocol itself is tested end to end in sparkplug.test.ts.
import { describe, expect, it } from "vitest";
import { validateAgentConfig } from "../agent/config/load.js";
import { DataHistory } from "../agent/uplink/sparkplug/history.js";
import { deviceLost, modelSourceOf, sparkplugModel } from "../agent/uplink/sparkplug/metrics.js";
import { decodePayload, encodePayload, longToNumber, metricQuality, sparkplugQuality, SPARKPLUG_QUALITY } from "../agent/uplink/sparkplug/payload.js";
import { demoAgentConfig, demoConfigData } from "../cli/demo-config.js";
import type { Point, Quality } from "../lib/points.js";

const model = () => sparkplugModel(modelSourceOf(demoAgentConfig(), "hash", "1.2.3"));

describe("Sparkplug metric model", () => {
  it("numbers every metric's alias once across the node and its devices, the same from build to build", () => {
    const m = model();
    const all = [...m.node, ...m.devices.flatMap((d) => d.metrics)];
    const aliases = all.map((x) => x.alias);
    expect(new Set(aliases).size).toBe(all.length);
    expect(aliases.every((a) => Number.isInteger(a) && a! >= 1)).toBe(true);
    expect(model().devices[3].metrics.map((x) => [x.name, x.alias])).toEqual(m.devices[3].metrics.map((x) => [x.name, x.alias]));
    expect(m.devices.map((d) => d.id)).toEqual(["CDU", ...demoAgentConfig().racks.map((r) => r.name)]);
    // within a device, names are unique: a host addresses DCMDs by them
    for (const d of m.devices) expect(new Set(d.metrics.map((x) => x.name)).size).toBe(d.metrics.length);
  });

  it("maps point qualities to Sparkplug's: unreadable is STALE, read-but-wrong is BAD", () => {
    const stale: Quality[] = ["timeout", "disconnected", "offline", "stale"];
    const bad: Quality[] = ["exception", "corrupt", "invalid", "mismatch", "config"];
    expect(sparkplugQuality("good")).toBe(SPARKPLUG_QUALITY.good);
    for (const q of stale) expect(sparkplugQuality(q)).toBe(SPARKPLUG_QUALITY.stale);
    for (const q of bad) expect(sparkplugQuality(q)).toBe(SPARKPLUG_QUALITY.bad);
  });

  it("calls a device dead only when none of its points can be read; a sensor's bad value keeps it alive", () => {
    const rack = model().devices[1];
    const pts = (q: (id: string, i: number) => Quality): Map<string, Point> => new Map(rack.pointIds.map((id, i) => [id, { id, value: 1, sourceTimeMs: 0, quality: q(id, i) }]));
    expect(deviceLost(rack, pts(() => "good"))).toBe(false);
    expect(deviceLost(rack, pts(() => "offline"))).toBe(true);
    expect(deviceLost(rack, pts((_, i) => (i === 0 ? "invalid" : "timeout")))).toBe(false);
    expect(deviceLost(rack, new Map())).toBe(true); // never read
  });

  it("keeps stored data to its bound, dropping the oldest and counting them", () => {
    const h = new DataHistory(3);
    for (let i = 0; i < 5; i++) h.add({ device: null, timestamp: i, metrics: [] });
    expect(h.size).toBe(3);
    expect(h.dropped).toBe(2);
    expect(h.drain().map((x) => x.timestamp)).toEqual([2, 3, 4]);
    expect(h.size).toBe(0);
    const none = new DataHistory(0);
    none.add({ device: "rack-1", timestamp: 0, metrics: [] });
    expect([none.size, none.dropped]).toEqual([0, 1]);
  });

  it("round-trips a birth metric through Tahu's codec: null value, alias, unit and quality", () => {
    const body = encodePayload({
      timestamp: 1,
      seq: 0,
      metrics: [
        { name: "Flow", alias: 7, type: "Double", value: null, timestamp: 2, properties: { engUnit: { type: "String", value: "L/min" }, Quality: { type: "Int32", value: SPARKPLUG_QUALITY.stale } } },
        { name: "bdSeq", type: "Int64", value: 200 },
      ],
    });
    const p = decodePayload(body);
    const [flow, bd] = p.metrics!;
    expect([flow.name, longToNumber(flow.alias), flow.type, flow.value, metricQuality(flow)]).toEqual(["Flow", 7, "Double", null, SPARKPLUG_QUALITY.stale]);
    expect(longToNumber(bd.value)).toBe(200);
  });
});

describe("uplink.sparkplug config", () => {
  const withSparkplug = (sparkplug: Record<string, unknown>): string[] => {
    const data = demoConfigData();
    data.uplink = { url: "mqtt://127.0.0.1:1883", sparkplug: { enabled: true, ...sparkplug } };
    try {
      validateAgentConfig(data, "test");
      return [];
    } catch (err) {
      return (err as { problems?: string[] }).problems ?? [String(err)];
    }
  };

  it("takes the defaults: every write refused, Sparkplug beside the JSON topics", () => {
    expect(withSparkplug({})).toEqual([]);
    const data = demoConfigData();
    data.uplink = { url: "mqtt://127.0.0.1:1883", sparkplug: { enabled: true } };
    const c = validateAgentConfig(data, "test").uplink!.sparkplug;
    expect([c.writableSetpoints, c.jsonTopics, c.groupId, c.edgeNodeId]).toEqual([[], true, "podwarden", undefined]);
  });

  it("refuses a writable loop that does not exist, a write lease longer than the envelope's, and ids with topic characters", () => {
    expect(withSparkplug({ writableSetpoints: ["rack-99.valve"] }).join("\n")).toMatch(/writableSetpoints\[0\]: no loop "rack-99.valve"/);
    expect(withSparkplug({ writeLeaseS: 604_800 }).join("\n")).toMatch(/writeLeaseS/);
    expect(withSparkplug({ groupId: "a/b" }).join("\n")).toMatch(/groupId/);
    expect(withSparkplug({ edgeNodeId: "pod+1" }).join("\n")).toMatch(/edgeNodeId/);
  });
});
