// Prometheus metrics and health endpoints, scraped over HTTP from a running agent.
import mqtt from "mqtt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../agent/agent.js";
import { Metrics } from "../agent/ops/metrics.js";
import { startEmbeddedBroker, type EmbeddedBroker } from "../lib/embedded-broker.js";
import { agentConfig, demoConfigFor, testAgent } from "./helpers/agent.js";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";

describe("metrics and health", () => {
  let t: TestSim;
  let agent: Agent;
  let metrics: Metrics;
  let url: string;

  let broker: EmbeddedBroker;

  beforeAll(async () => {
    t = await startTestSim();
    broker = await startEmbeddedBroker();
    // a BMS sensor over MQTT beside the Modbus devices; its broker kept a retained reading
    const bms = await mqtt.connectAsync(broker.url, { clientId: "bms" });
    await bms.publishAsync("bms/inlet", "99", { qos: 1, retain: true });
    await bms.endAsync();
    const withIngest = demoConfigFor(t.sim, (d) => {
      // aedes speaks MQTT 3.1.1 only (the ingest's default is 5)
      d.mqttIngest = { url: broker.url, protocolVersion: 4, points: [{ id: "bms.inletAirC", topic: "bms/inlet", unit: "°C", staleMs: 60_000 }] };
    });
    ({ agent } = testAgent(agentConfig(withIngest)));
    await agent.start();
    metrics = new Metrics(() => agent);
    url = `http://127.0.0.1:${await metrics.listen({ enabled: true, host: "127.0.0.1", port: 0 })}`;
  });
  afterAll(async () => {
    await metrics.close();
    await agent.stop({ driveSafe: false, reason: "test end" });
    await broker.close();
    await t.stop();
  });

  it("exposes points, valves, alarms, tick lateness, Modbus counters and the mode", async () => {
    await waitFor(() => agent.supervisor.mode !== "Starting", "running", 30_000);
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/plain/);
    const text = await res.text();
    for (const name of [
      'podwarden_point_value{point="rack-1.returnTempC",unit="°C"}',
      'podwarden_point_quality{point="rack-1.flowLpm",quality="good"} 1',
      'podwarden_valve_position_ratio{rack="rack-3"}',
      'podwarden_isolation_valves_open{rack="rack-3"} 1',
      'podwarden_pump_lead{pump="pump-1"} 1',
      'podwarden_pump_lead{pump="pump-2"} 0',
      'podwarden_pump_running{pump="pump-2"} 0',
      'podwarden_alarms_active{severity="Critical"}',
      "podwarden_alarms_chattering 0",
      "podwarden_alarms_raised_total",
      'podwarden_tick_lateness_seconds{quantile="0.99"}',
      "podwarden_tick_overruns_recent",
      "podwarden_ticks_total",
      'podwarden_modbus_requests_total{device="rack-1",outcome="ok"}',
      'podwarden_modbus_request_duration_seconds{device="cdu",quantile="0.5"}',
      'podwarden_modbus_device_up{device="cdu"} 1',
      'podwarden_modbus_bus_utilization{bus="tcp:cdu"}',
      'podwarden_modbus_bus_budget_overruns_total{bus="tcp:cdu"} 0',
      'podwarden_modbus_bus_desyncs_total{bus="tcp:rack-1"} 0',
      'podwarden_modbus_bus_stray_bytes_total{bus="tcp:rack-1"} 0',
      "podwarden_process_resident_memory_bytes",
    ]) {
      expect(text, name).toContain(name);
    }
    expect(text).toMatch(/podwarden_mode\{mode="(Running|Degraded)"\} 1/);
  });

  it("exposes MQTT ingest points beside the Modbus ones, and the ingest's counters", async () => {
    await waitFor(() => agent.field.ingest?.retainedIgnored === 1, "the retained reading delivered and ignored");
    const bms = await mqtt.connectAsync(broker.url, { clientId: "bms-live" });
    try {
      await waitFor(async () => {
        await bms.publishAsync("bms/inlet", "24.5", { qos: 1 });
        return agent.field.ingest?.points.get("bms.inletAirC")?.quality === "good";
      }, "a live reading", 10_000, 200);
    } finally {
      await bms.endAsync();
    }
    const text = await (await fetch(`${url}/metrics`)).text();
    expect(text).toContain('podwarden_point_value{point="bms.inletAirC",unit="°C"} 24.5');
    expect(text).toContain('podwarden_point_quality{point="bms.inletAirC",quality="good"} 1');
    expect(text).toContain('podwarden_mqtt_ingest_messages_total{outcome="retainedIgnored"} 1');
    expect(Number(/podwarden_mqtt_ingest_messages_total\{outcome="messages"\} (\d+)/.exec(text)?.[1])).toBeGreaterThanOrEqual(2);
    expect(text).toContain('podwarden_mqtt_ingest_messages_total{outcome="rejected"} 0');
    expect(text).toContain("podwarden_mqtt_ingest_connected 1");
    expect(text).toContain("podwarden_mqtt_ingest_silent_broker_drops_total 0");
    // a reading that is not a number: the point goes invalid and its gauge value goes away,
    // rather than the last good 24.5 standing in for a measurement
    const bad = await mqtt.connectAsync(broker.url, { clientId: "bms-bad" });
    try {
      await bad.publishAsync("bms/inlet", "not a number", { qos: 1 });
      await waitFor(() => agent.field.ingest?.points.get("bms.inletAirC")?.quality === "invalid", "the reading invalid", 10_000);
    } finally {
      await bad.endAsync();
    }
    const after = await (await fetch(`${url}/metrics`)).text();
    expect(after).not.toContain('podwarden_point_value{point="bms.inletAirC"');
    expect(after).toContain('podwarden_point_quality{point="bms.inletAirC",quality="invalid"} 1');
  });

  it("answers /healthz and /readyz, and 404 elsewhere", async () => {
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, "ready", 30_000);
    expect((await fetch(`${url}/nope`)).status).toBe(404);
  });
});
