// The control plane's timing families: tick lateness and overruns, urgent ticks, fail-safe
// entries, the actuator pass, and what the queues between the planes refused and dropped.
// Read at each scrape from the pod's diagnostics.
import { Counter, Gauge, type Registry } from "prom-client";
import type { LogHistogram } from "../../lib/log-histogram.js";
import type { PodDiagnostics } from "../pod-api.js";
import type { PlaneCounts } from "../plane/control-plane.js";

/** What these families read: the control worker's figures, and the daemon's queues between the planes. */
type ControlMetricsPod = Pick<PodDiagnostics, "controlStats"> & { planeCounts?(): PlaneCounts };

const LATENESS_QUANTILES = [0.5, 0.9, 0.99, 0.999];

/** A gauge of a lateness histogram's quantiles (in seconds), read at each scrape. */
function latenessQuantiles(r: Registry, name: string, help: string, histogram: () => LogHistogram): void {
  new Gauge({
    name,
    help,
    labelNames: ["quantile"],
    registers: [r],
    collect() {
      const h = histogram();
      for (const q of LATENESS_QUANTILES) {
        const us = h.percentile(q);
        if (Number.isFinite(us)) this.set({ quantile: String(q) }, us / 1e6);
      }
    },
  });
}

/** Registers the control plane's timing families on r. */
export function controlMetrics(r: Registry, a: () => ControlMetricsPod): void {
  latenessQuantiles(r, "podwarden_tick_lateness_seconds", "Control tick lateness quantiles since start (from the control worker's histogram)", () => a().controlStats().lateness);
  new Gauge({
    name: "podwarden_tick_lateness_recent_seconds",
    help: "Control tick lateness quantiles over the last supervisor.overrun.windowMs (shows an incident, which the cumulative quantiles average away)",
    labelNames: ["quantile"],
    registers: [r],
    collect() {
      this.reset();
      const w = a().controlStats().recent;
      for (const [q, us] of [
        [0.5, w.p50Us],
        [0.99, w.p99Us],
        [0.999, w.p999Us],
      ] as const)
        if (Number.isFinite(us)) this.set({ quantile: String(q) }, us / 1e6);
    },
  });
  new Gauge({
    name: "podwarden_tick_overruns_recent",
    help: "Control ticks that missed their deadline over the last supervisor.overrun.windowMs",
    registers: [r],
    collect() {
      this.set(a().controlStats().recent.overruns);
    },
  });
  new Gauge({
    name: "podwarden_tick_lateness_max_seconds",
    help: "Largest control tick lateness since start",
    registers: [r],
    collect() {
      this.set(a().controlStats().maxLatenessUs / 1e6);
    },
  });
  new Counter({
    name: "podwarden_ticks_total",
    help: "Control ticks run",
    registers: [r],
    collect() {
      this.reset();
      this.inc(a().controlStats().ticks);
    },
  });
  new Counter({
    name: "podwarden_urgent_ticks_total",
    help: "Control ticks run before their deadline because a leak input changed",
    registers: [r],
    collect() {
      this.reset();
      this.inc(a().controlStats().urgentTicks);
    },
  });
  new Counter({
    name: "podwarden_plane_refused_total",
    help: "Requests (commands, resets, recordings) the service plane refused at once because the control plane had its queue's bound waiting",
    registers: [r],
    collect() {
      this.reset();
      const c = a().planeCounts?.();
      if (c !== undefined) this.inc(c.refused);
    },
  });
  new Counter({
    name: "podwarden_plane_dropped_total",
    help: "What a queue between the planes dropped past its bound: audit records and problems to the control plane (notes), events, log lines and views from it",
    labelNames: ["what"],
    registers: [r],
    collect() {
      this.reset();
      const c = a().planeCounts?.();
      if (c === undefined) return;
      this.inc({ what: "notes" }, c.droppedNotes);
      for (const [what, n] of Object.entries(c.dropped)) this.inc({ what }, n);
    },
  });
  new Counter({
    name: "podwarden_loop_failsafe_entries_total",
    help: "Loops that left live control for fail-safe, each time, since the start (counted by the control worker every tick)",
    registers: [r],
    collect() {
      this.reset();
      this.inc(a().controlStats().failsafeEntries);
    },
  });
  latenessQuantiles(r, "podwarden_actuator_pass_lateness_seconds", "How late the control plane's actuator passes ran beyond their period, quantiles since start", () => a().controlStats().actuatorPassLateness);
  new Counter({
    name: "podwarden_tick_overruns_total",
    help: "Control ticks that started more than one period late",
    registers: [r],
    collect() {
      this.reset();
      this.inc(a().controlStats().overruns);
    },
  });
}
