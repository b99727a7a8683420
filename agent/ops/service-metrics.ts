// The service plane's own metric families: the JSON uplink, the Sparkplug edge node and the HMI,
// each read at scrape time from its stats (absent while the service does not run). Registered by
// metrics.ts beside the pod's.
import { Counter, Gauge, type Registry } from "prom-client";
import type { HmiStats } from "../hmi/server.js";
import type { SparkplugStats } from "../uplink/sparkplug/edge-node.js";
import type { UplinkStats } from "../uplink/uplink.js";

/** The JSON uplink's figures; absent without an uplink. */
export function uplinkMetrics(r: Registry, u: () => UplinkStats | null): void {
  new Gauge({
    name: "podwarden_uplink_connected",
    help: "1 while the uplink's MQTT connection is up (absent without an uplink)",
    registers: [r],
    collect() {
      this.reset();
      const s = u();
      if (s !== null) this.set(s.connected ? 1 : 0);
    },
  });
  new Counter({
    name: "podwarden_uplink_connects_total",
    help: "MQTT connections made (the first, then every reconnect)",
    registers: [r],
    collect() {
      this.reset();
      const s = u();
      if (s !== null) this.inc(s.connects);
    },
  });
  new Counter({
    name: "podwarden_uplink_broker_switches_total",
    help: "times the uplink moved on to the next broker address (a connection lost, refused or silent; uplink.brokers)",
    registers: [r],
    collect() {
      this.reset();
      const s = u();
      if (s !== null) this.inc(s.brokerSwitches);
    },
  });
  new Gauge({
    name: "podwarden_uplink_spool_depth",
    help: "Spooled messages not yet acknowledged, by class: by the broker (PUBACK), or for the events with uplink.consumerAck by mission control",
    labelNames: ["class"],
    registers: [r],
    collect() {
      this.reset();
      const s = u();
      if (s !== null) for (const [c, n] of Object.entries(s.spoolDepth)) this.set({ class: c }, n);
    },
  });
  new Gauge({
    name: "podwarden_uplink_spool_bytes",
    help: "Bytes the store-and-forward spool holds on disk",
    registers: [r],
    collect() {
      this.reset();
      const s = u();
      if (s !== null) this.set(s.spoolBytes);
    },
  });
  new Counter({
    name: "podwarden_uplink_spool_dropped_total",
    help: "Spooled messages dropped by the overflow policy, by class (telemetry first)",
    labelNames: ["class"],
    registers: [r],
    collect() {
      this.reset();
      const s = u();
      if (s !== null) for (const [c, n] of Object.entries(s.spoolDropped)) this.inc({ class: c }, n);
    },
  });
  new Counter({
    name: "podwarden_uplink_spool_lost_total",
    help: "Spooled messages lost to damage found in the spool files at start, by class (their seq numbers are skipped)",
    labelNames: ["class"],
    registers: [r],
    collect() {
      this.reset();
      const s = u();
      if (s !== null) for (const [c, n] of Object.entries(s.spoolLost)) this.inc({ class: c }, n);
    },
  });
  new Gauge({
    name: "podwarden_uplink_publish_ack_seconds",
    help: "Time from publishing a QoS 1 message to the broker's PUBACK, quantiles since start",
    labelNames: ["quantile"],
    registers: [r],
    collect() {
      this.reset();
      const s = u();
      if (s === null) return;
      if (Number.isFinite(s.ackUs.p50)) this.set({ quantile: "0.5" }, s.ackUs.p50 / 1e6);
      if (Number.isFinite(s.ackUs.p99)) this.set({ quantile: "0.99" }, s.ackUs.p99 / 1e6);
    },
  });
  new Counter({
    name: "podwarden_uplink_consumer_acks_total",
    help: "Mission control's acknowledgements of the pod's events (uplink.consumerAck), by result: received; refused (not {\"events\": n}, or n past the last event made); dropped (over the size or uplink.consumerAck.maxPerS, unread)",
    labelNames: ["result"],
    registers: [r],
    collect() {
      this.reset();
      const a = u()?.consumerAck;
      if (a !== undefined) for (const k of ["received", "refused", "dropped"] as const) this.inc({ result: k }, a[k]);
    },
  });
  new Counter({
    name: "podwarden_uplink_event_resends_total",
    help: "Times the events held for mission control's acknowledgement were sent again for want of one (uplink.consumerAck.resendAfterS)",
    registers: [r],
    collect() {
      this.reset();
      const a = u()?.consumerAck;
      if (a !== undefined) this.inc(a.resends);
    },
  });
  new Counter({
    name: "podwarden_commands_total",
    help: "Commands received, by result (accepted, rejected; suppressed = rejected beyond the audit rate; dropped = requests beyond uplink.commands.maxPerS, dropped unread; duplicates = copies of a command already carried out, answered again and not carried out)",
    labelNames: ["result"],
    registers: [r],
    collect() {
      this.reset();
      const s = u();
      if (s !== null) for (const [k, n] of Object.entries(s.commands)) this.inc({ result: k }, n);
    },
  });
}

/** The Sparkplug edge node's figures; absent while it does not run. */
export function sparkplugMetrics(r: Registry, sp: () => SparkplugStats | null): void {
  const one = (kind: "gauge" | "counter", name: string, help: string, read: (s: SparkplugStats) => number): void => {
    const collect = function (this: Gauge | Counter): void {
      this.reset();
      const s = sp();
      if (s === null) return;
      if (this instanceof Gauge) this.set(read(s));
      else this.inc(read(s));
    };
    if (kind === "gauge") new Gauge({ name, help, registers: [r], collect });
    else new Counter({ name, help, registers: [r], collect });
  };
  one("gauge", "podwarden_sparkplug_session", "1 while the Sparkplug edge node has a session (births published, DATA flowing)", (s) => (s.session ? 1 : 0));
  one("counter", "podwarden_sparkplug_sessions_total", "Sparkplug connections made (each with its own bdSeq)", (s) => s.sessions);
  one("counter", "podwarden_sparkplug_messages_total", "Sparkplug messages published (births, data, deaths)", (s) => s.messages);
  one("counter", "podwarden_sparkplug_bytes_total", "Sparkplug payload bytes published", (s) => s.bytes);
  one("gauge", "podwarden_sparkplug_stored_messages", "DATA messages stored while there is no session, to be replayed historical", (s) => s.stored);
  one("counter", "podwarden_sparkplug_rebirths_folded_total", "rebirth requests folded into a later rebirth (uplink.sparkplug.rebirthMinMs)", (s) => s.rebirthsFolded);
  one("counter", "podwarden_sparkplug_stored_dropped_total", "stored DATA messages dropped past uplink.sparkplug.maxStoredMessages", (s) => s.dropped);
  new Counter({
    name: "podwarden_sparkplug_commands_total",
    help: "NCMD and DCMD received, by result (rebirths; accepted and refused writes; dropped = beyond uplink.sparkplug.maxCommandsPerS, unread)",
    labelNames: ["result"],
    registers: [r],
    collect() {
      this.reset();
      const s = sp();
      if (s !== null) for (const [k, n] of Object.entries(s.commands) as [string, number][]) this.inc({ result: k }, n);
    },
  });
}

export function hmiMetrics(r: Registry, h: () => HmiStats | null): void {
  new Gauge({
    name: "podwarden_hmi_clients",
    help: "HMI pages receiving live updates (absent without the HMI)",
    registers: [r],
    collect() {
      this.reset();
      const s = h();
      if (s !== null) this.set(s.clients);
    },
  });
  new Counter({
    name: "podwarden_hmi_pages_refused_total",
    help: "HMI live pages refused, by reason (max-clients: hmi.maxClients were open; per-address: hmi.maxClientsPerAddress from that address; per-user: hmi.maxClientsPerUser for that user; no-login: half the pages held without a login; slow: dropped for not reading their updates)",
    labelNames: ["reason"],
    registers: [r],
    collect() {
      this.reset();
      const s = h();
      if (s === null) return;
      for (const [reason, n] of Object.entries(s.refused)) this.inc({ reason }, n);
      this.inc({ reason: "slow" }, s.dropped);
    },
  });
  new Counter({
    name: "podwarden_hmi_connections_refused_total",
    help: "HMI connections closed as they were accepted, by cap (total: hmi.maxConnections were open; address: hmi.maxConnectionsPerAddress from that address)",
    labelNames: ["cap"],
    registers: [r],
    collect() {
      this.reset();
      const s = h();
      if (s === null) return;
      this.inc({ cap: "total" }, s.connections.refusedTotal);
      this.inc({ cap: "address" }, s.connections.refusedPerAddress);
    },
  });
}
