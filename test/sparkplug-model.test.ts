// The Sparkplug edge node's parts that need no broker: the metric model and its aliases, the
// quality mapping, device death, the stored-data bound, the payload codec round trip, the
// birth's properties, the points' resolution, the diagnostics' deadbands, and the config checks. The protocol itself is tested end to end in sparkplug.test.ts.
import { describe, expect, it } from "vitest";
import { validateAgentConfig } from "../agent/config/load.js";
import { DataHistory } from "../agent/uplink/sparkplug/history.js";
import { MetricReports } from "../agent/uplink/sparkplug/metric-reports.js";
import { modbusResolution } from "../agent/uplink/sparkplug/model-source.js";
import { deviceLost, modelSourceOf, sparkplugModel, type PodSample } from "../agent/uplink/sparkplug/metrics.js";
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

  it("publishes every point the pod reads: under the rack or the CDU whose field device it is on, else the node's", () => {
    const m = model();
    const names = (id: string): string[] => (id === "node" ? m.node : m.devices.find((d) => d.id === id)!.metrics).map((x) => x.name);
    expect(names("CDU")).toEqual(expect.arrayContaining(["Field/returnTempC", "Field/totalFlowLpm", "Field/reservoirPct", "Field/pumpSpeedPct", "Field/pump2Running"]));
    expect(names("rack-1")).toEqual(expect.arrayContaining(["Field/gpuTempC", "Field/leakState"]));
    // every point once as a Field/ metric unless a named metric carries it already
    const published = new Set([...m.node, ...m.devices.flatMap((d) => d.metrics)].map((x) => x.pointId).filter((id) => id !== undefined));
    const c = demoAgentConfig();
    expect([...published].sort()).toEqual(c.modbus.devices.flatMap((d) => d.points.map((p) => `${d.name}.${p.name}`)).sort());
    expect([...m.node, ...m.devices.flatMap((d) => d.metrics)].filter((x) => x.name.startsWith("Field/") && x.pointId === c.cdu.points.dpKpa)).toEqual([]);
  });

  it("carries each range and whether it takes a write: engLow and engHigh, readOnly", () => {
    const c = demoAgentConfig((d) => (d.uplink = { url: "mqtt://127.0.0.1:1", sparkplug: { enabled: true, writableSetpoints: ["rack-2.valve"] } }));
    const m = sparkplugModel(modelSourceOf(c, "hash", "1.2.3"));
    const metric = (device: string, name: string) => m.devices.find((d) => d.id === device)!.metrics.find((x) => x.name === name)!;
    expect(metric("rack-2", "Return Temperature Setpoint")).toMatchObject({ range: { low: 35, high: 55 }, writable: true });
    expect(metric("rack-1", "Return Temperature Setpoint")).toMatchObject({ range: { low: 35, high: 55 }, writable: false });
    expect(metric("CDU", "Loop/dP Setpoint")).toMatchObject({ range: { low: 60, high: 200 }, writable: false });
    expect(metric("rack-1", "Return Temperature")).toMatchObject({ range: { low: 0, high: 95 } });
    expect(metric("rack-1", "Flow")).toMatchObject({ range: { low: 0, high: 1000 } });
    // and the birth says so, as §6.4.7's properties
    const reports = new MetricReports(c.uplink!.exception);
    const sample = { points: new Map(), wallMs: 0, monoMs: 0, status: { racks: [{}, { setpointC: 44 }] } } as unknown as PodSample;
    expect(reports.birth(metric("rack-2", "Return Temperature Setpoint"), sample).properties).toMatchObject({ engUnit: { value: "°C" }, engLow: { value: 35 }, engHigh: { value: 55 }, readOnly: { value: false } });
    expect(reports.birth(metric("rack-2", "Isolation/State"), { ...sample, status: { racks: [{}, { isolation: "Normal" }] } } as unknown as PodSample).properties).toMatchObject({ readOnly: { value: true } });
  });

  it("rounds a point to its source's resolution, and holds a diagnostic within its deadband", () => {
    expect(modbusResolution({ type: "f32", scale: 1 })(Math.fround(117.6))).toBe(117.6);
    expect(Math.fround(117.6)).not.toBe(117.6);
    expect(modbusResolution({ type: "i16", scale: 0.01 })(4567 * 0.01)).toBe(45.67);
    expect(modbusResolution({ type: "u16", scale: 0.1 })(3 * 0.1)).toBe(0.3);
    expect(modbusResolution({ type: "u16", scale: 1 })(12)).toBe(12);
    expect(modbusResolution({ type: "f64", scale: 1 })(0.1 + 0.2)).toBe(0.1 + 0.2);
    const m = model();
    const spool = m.node.find((x) => x.name === "Uplink/Spool Depth")!;
    const reports = new MetricReports({ ...demoAgentConfig().uplink?.exception, checkMs: 100, defaultDeadband: 0, deadbands: {} } as never);
    const at = (n: number) => ({ uplinkSpool: n, wallMs: 0 }) as unknown as PodSample;
    reports.birth(spool, at(0));
    // the spool's 0/1 at every event is not news; a backlog is
    expect([1, 0, 1, 10, 11, 3, 0].map((n) => reports.changed([spool], at(n)).length)).toEqual([0, 0, 0, 0, 1, 0, 1]);
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
