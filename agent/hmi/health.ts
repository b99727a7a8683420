// The HMI's health view: each Modbus device (connection, breaker, poll rate, round trips, last
// error), the uplink (connection, spool, last PUBACK), the control thread (tick lateness as a
// histogram, overruns) and the build. Computed when a page asks, from the pod's counters.
import type { PodDiagnostics, PodReader } from "../pod-api.js";
import type { UplinkStats } from "../uplink/uplink.js";

/** What the health view reads of the pod. */
export type HealthPod = Pick<PodReader, "identity"> & Pick<PodDiagnostics, "controlStats" | "modbusStats">;

export interface DeviceHealth {
  name: string;
  connected: boolean;
  breaker: string;
  trips: number;
  /** requests a second over the last sampling period (null before two samples) */
  requestsPerS: number | null;
  requests: number;
  failures: { timeouts: number; exceptions: number; corrupt: number; disconnected: number };
  /** round-trip quantiles since start, ms (null before the first answer) */
  rttMs: { p50: number | null; p99: number | null };
  lastError: { kind: string; message: string; at: string } | null;
}

export interface HmiHealth {
  devices: DeviceHealth[];
  uplink: { connected: boolean; spoolDepth: number; spoolBytes: number; lastAckAt: string | null; ackP99Ms: number | null; connects: number; broker: string | null; brokerSwitches: number } | null;
  control: { ticks: number; overruns: number; recentOverruns: number; maxLatenessUs: number; lateness: { fromUs: number; toUs: number | null; count: number }[] };
  build: { version: string; configHash: string; node: string };
}

/** Tick lateness bins, µs: a 1 kHz tick is on time under 50 µs, late past 1,000. */
const LATENESS_EDGES_US = [0, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

/** Requests a second per device, from the cumulative counts sampled at a steady period. */
export class RequestRates {
  private last = new Map<string, { atMs: number; requests: number }>();
  private rates = new Map<string, number>();

  sample(nowMs: number, devices: readonly { name: string; stats: { requests: number } }[]): void {
    const next = new Map<string, { atMs: number; requests: number }>();
    for (const d of devices) {
      const prev = this.last.get(d.name);
      if (prev !== undefined && nowMs > prev.atMs) this.rates.set(d.name, ((d.stats.requests - prev.requests) * 1000) / (nowMs - prev.atMs));
      next.set(d.name, { atMs: nowMs, requests: d.stats.requests });
    }
    this.last = next;
  }

  of(name: string): number | null {
    return this.rates.get(name) ?? null;
  }
}

const ms = (ns: number): number | null => (Number.isFinite(ns) && ns > 0 ? ns / 1e6 : null);

export function hmiHealth(pod: HealthPod, uplink: UplinkStats | null, rates: RequestRates, version: string): HmiHealth {
  const modbus = pod.modbusStats();
  const control = pod.controlStats();
  const lateness = LATENESS_EDGES_US.map((from, i) => {
    const to = LATENESS_EDGES_US[i + 1] ?? null;
    return { fromUs: from, toUs: to, count: control.lateness.countAbove(from) - (to === null ? 0 : control.lateness.countAbove(to)) };
  });
  lateness[0].count += control.lateness.total() - control.lateness.countAbove(0); // exactly on time
  return {
    devices: modbus.devices.map((d) => ({
      name: d.name,
      connected: d.connected,
      breaker: d.breaker,
      trips: d.trips,
      requestsPerS: rates.of(d.name),
      requests: d.stats.requests,
      failures: { timeouts: d.stats.timeouts, exceptions: d.stats.exceptions, corrupt: d.stats.corrupt, disconnected: d.stats.disconnected },
      rttMs: d.stats.latency.count === 0 ? { p50: null, p99: null } : { p50: ms(d.stats.latency.percentile(50)), p99: ms(d.stats.latency.percentile(99)) },
      lastError: d.stats.lastError,
    })),
    uplink:
      uplink === null
        ? null
        : {
            connected: uplink.connected,
            spoolDepth: uplink.spoolDepth.critical + uplink.spoolDepth.telemetry,
            spoolBytes: uplink.spoolBytes,
            lastAckAt: uplink.lastAckAt,
            ackP99Ms: Number.isFinite(uplink.ackUs.p99) && uplink.ackUs.p99 > 0 ? uplink.ackUs.p99 / 1000 : null,
            connects: uplink.connects,
            broker: uplink.broker,
            brokerSwitches: uplink.brokerSwitches,
          },
    control: { ticks: control.ticks, overruns: control.overruns, recentOverruns: control.recent.overruns, maxLatenessUs: control.maxLatenessUs, lateness },
    build: { version, configHash: pod.identity.configHash, node: process.version },
  };
}
