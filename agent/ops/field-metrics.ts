// The field drivers' own metric families beyond the per-device ones: each Modbus bus, and each
// BMC of the Redfish client, read at scrape time from the drivers' counters. Registered by
// metrics.ts beside the pod's.
import { Counter, Gauge, type Registry } from "prom-client";
import type { BusStats } from "../../drivers/modbus/driver.js";
import type { RedfishDeviceStats } from "../../drivers/redfish/driver.js";

/** The Redfish client's BMCs (none without redfishClient). */
export function redfishMetrics(r: Registry, bmcs: () => RedfishDeviceStats[]): void {
  new Gauge({
    name: "podwarden_redfish_device_up",
    help: "1 while a BMC answers with our credentials taken and its circuit breaker is closed",
    labelNames: ["device"],
    registers: [r],
    collect() {
      this.reset();
      for (const d of bmcs()) this.set({ device: d.name }, d.connected && d.breaker === "closed" ? 1 : 0);
    },
  });
  new Gauge({
    name: "podwarden_redfish_stream_open",
    help: "1 while a BMC's EventService stream is open",
    labelNames: ["device"],
    registers: [r],
    collect() {
      this.reset();
      for (const d of bmcs()) this.set({ device: d.name }, d.streamOpen ? 1 : 0);
    },
  });
  const counters: [string, string, (d: RedfishDeviceStats) => Record<string, number>][] = [
    ["podwarden_redfish_polls_total", "BMC polls: every configured resource read once; failed = none answered", (d) => ({ ok: d.polls - d.failedPolls, failed: d.failedPolls })],
    ["podwarden_redfish_events_total", "events on a BMC's stream: parsed, or shed beyond events.maxEventsPerS (every leak detector re-read instead)", (d) => ({ parsed: d.events - d.eventsShed, shed: d.eventsShed })],
    ["podwarden_redfish_stream_reconnects_total", "a BMC's event stream reopened after it dropped", (d) => ({ total: d.streamReconnects })],
    ["podwarden_redfish_pushed_events_total", "events a BMC without Server-Sent Events pushed to the pod's listener (its EventDestination subscription); counted in podwarden_redfish_events_total too", (d) => ({ total: d.pushedEvents })],
    ["podwarden_redfish_logins_total", "sessions opened on a BMC (a renewal counts)", (d) => ({ total: d.logins })],
  ];
  for (const [name, help, values] of counters) {
    const outcome = name === "podwarden_redfish_polls_total" || name === "podwarden_redfish_events_total";
    new Counter({
      name,
      help,
      labelNames: outcome ? ["device", "outcome"] : ["device"],
      registers: [r],
      collect() {
        this.reset();
        for (const d of bmcs()) for (const [k, v] of Object.entries(values(d))) this.inc(outcome ? { device: d.name, outcome: k } : { device: d.name }, v);
      },
    });
  }
}

/** Per Modbus bus (`tcp:<device>`, one per TCP device; `rtu:<bus>`, shared by its devices). */
export function busMetrics(r: Registry, buses: () => BusStats[]): void {
  new Gauge({
    name: "podwarden_modbus_bus_utilization",
    help: "Share of the last second a Modbus bus spent in transactions",
    labelNames: ["bus"],
    registers: [r],
    collect() {
      this.reset();
      for (const b of buses()) this.set({ bus: b.name }, b.utilization);
    },
  });
  const counters: [string, string, (b: BusStats) => number][] = [
    ["podwarden_modbus_bus_budget_overruns_total", "Telemetry polls skipped because the bus was over its time budget", (b) => b.budgetOverruns],
    ["podwarden_modbus_bus_desyncs_total", "TCP connections dropped because the stream was out of step (a frame no device can send, or a timeout with part of a frame buffered)", (b) => b.desyncs],
    ["podwarden_modbus_bus_stray_bytes_total", "RTU bytes that arrived while no request was waiting for them: late answers or line noise", (b) => b.strayBytes],
  ];
  for (const [name, help, value] of counters) {
    new Counter({
      name,
      help,
      labelNames: ["bus"],
      registers: [r],
      collect() {
        this.reset();
        for (const b of buses()) this.inc({ bus: b.name }, value(b));
      },
    });
  }
}
