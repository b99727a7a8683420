// The fault catalogue as code (../shared/notes/fault-catalogue.md): each fault class knows how to
// inject itself into the simulated pod (or its broker), what "safe" means in ground truth from
// the simulator and the agent, how to clear itself and what "recovered" means. The time-to-safe
// benchmark (`npm run bench -- --only faults`), the soak (`npm run soak`) and the fault tests
// all drive these same classes.
import * as L from "../hotpath-as/assembly/layout.js";
import { readReturnTempsThroughTransmitters } from "../cli/demo-config.js";
import { startPodHarness, type PodHarness } from "../tooling/pod-harness.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { PartitionProxy } from "../tooling/partition-proxy.js";
import { waitFor } from "../tooling/processes.js";
import { simConfig } from "../sim/config.js";
import { PodSim } from "../sim/pod-sim.js";
import { fmt, quantile } from "./stats.js";

export interface Campaign {
  sim: PodSim;
  pod: PodHarness;
  broker: Mosquitto;
  /** the uplink reaches the broker through this, so the link can be partitioned */
  link: PartitionProxy;
  stop(): Promise<void>;
}

/** A rack's return-temperature sensor back to normal: the truth with a little measurement noise. */
function liveSensor(sim: PodSim, r: number): void {
  sim.inject({ sensor: `rack-${r + 1}.returnTempC`, fault: "noise", sigma: 0.05 });
}

/** Discards the agent's logs: a campaign measures behaviour, not pino. */
const quiet = { write: (): boolean => true };

/**
 * The demo pod with short timeouts, so a trial takes under a second: samples stale after 300 ms,
 * faults debounced over 20 ticks and cleared over 50, device leases of 1 s.
 */
export async function startCampaign(): Promise<Campaign> {
  const sim = new PodSim(simConfig({ devices: { basePort: 0, leaseMs: 1000 } }));
  await sim.start();
  // persistence and unlimited queues: a restarted broker keeps mission control's session and
  // what was queued for it, so the soak can count every event at the far end
  const broker = await Mosquitto.start({ persistence: true, general: ["max_queued_messages 0"] });
  const link = new PartitionProxy(broker.port);
  await link.listen();
  const pod = await startPodHarness({
    brokerUrl: `mqtt://127.0.0.1:${link.port}`,
    protocolVersion: 5,
    portOf: (n) => sim.portOf(n),
    logTo: quiet,
    uplink: { keepaliveS: 1, connectTimeoutMs: 500, reconnect: { baseMs: 20, maxMs: 200 }, telemetryMs: 500 },
    patch: (d) => {
      const control = d.control as Record<string, unknown>;
      const checks = (kind: string): Record<string, unknown> => ({ ...((control.points as Record<string, object> | undefined)?.[kind] ?? {}), staleMs: 300, debounceFault: 20, debounceClear: 50 });
      // frozen-sensor detection on temperatures: a reading that has not moved by 0.001 °C for 500 ms,
      // by time alone (stuckMove 0): the campaign gives every temperature sensor its noise
      control.points = { temperature: { ...checks("temperature"), stuckMs: 500, stuckEps: 0.001, stuckMove: 0 }, flow: checks("flow"), power: checks("power"), pressure: checks("pressure") };
      control.schedFifo = true;
      d.supervisor = { ...(d.supervisor ?? {}), alarmClearDwellMs: 200 };
      // every sensor fault below reaches the agent as a transmitter passes it on (a dead sensor
      // as the 3.5 mA failure current, an out-of-range one held at 20.5 mA)
      readReturnTempsThroughTransmitters(d);
    },
  });
  // live temperature sensors: real ones never read the same to 0.01 °C for long, and a frozen
  // one must stand out from them
  for (let r = 0; r < 8; r++) liveSensor(sim, r);
  await waitFor(() => pod.agent.supervisor.mode === "Running" || pod.agent.supervisor.mode === "Degraded", "agent in control", 60_000);
  return {
    sim,
    pod,
    broker,
    link,
    stop: async () => {
      stopChattering();
      await pod.stop();
      await link.close();
      await broker.stop();
      await sim.stop();
    },
  };
}

export interface FaultClass {
  name: string;
  /** the fault destroys what the broker held (SIGKILL): messages it had acknowledged but not yet delivered are gone */
  losesBrokerState?: boolean;
  /** the catalogue's expected behaviour, in a line */
  expect: string;
  inject(c: Campaign, rack: number): void | Promise<void>;
  /** ground truth: the safe state has been reached */
  safe(c: Campaign, rack: number): boolean;
  clear(c: Campaign, rack: number): void | Promise<void>;
  recovered(c: Campaign, rack: number): boolean;
}

const rackName = (r: number): string => `rack-${r + 1}`;
const loopStatus = (c: Campaign, r: number): number => c.pod.agent.control.outputs()?.loopStatus[c.pod.agent.layout.rackLoops[r]] ?? 0;
const failsafe = (c: Campaign, r: number): boolean => (loopStatus(c, r) & L.LS_INTERLOCK_FAILSAFE) !== 0;
const automatic = (c: Campaign, r: number): boolean => (loopStatus(c, r) & L.LS_AUTOMATIC) !== 0;
/** the valve command the device holds equals the loop's declared sensor-fault value (fail-open: outMax) */
const valveAtSafeValue = (c: Campaign, r: number): boolean => Math.abs(c.sim.devices.racks[r].ctx.valveCmdPct - c.pod.config.control.rackLoop.outMax) < 0.5;
const isolatedAtDevice = (c: Campaign, r: number): boolean => !c.sim.devices.racks[r].ctx.supplyIsoOpen && !c.sim.devices.racks[r].ctx.returnIsoOpen;
const inServiceAtDevice = (c: Campaign, r: number): boolean => c.sim.devices.racks[r].ctx.supplyIsoOpen && c.sim.devices.racks[r].ctx.returnIsoOpen;
/** the rack's loop is in fail-safe and the valve at its fail-open value */
const failedSafe = (c: Campaign, r: number): boolean => failsafe(c, r) && valveAtSafeValue(c, r);

/** the uplink noticed: it is no longer connected (and spools) */
const uplinkDown = (c: Campaign): boolean => !c.pod.uplink.stats().connected;
/** connected again, and every event spooled meanwhile acknowledged by the broker */
const uplinkBackAndDrained = (c: Campaign): boolean => c.pod.uplink.stats().connected && c.pod.uplink.stats().spoolDepth.critical === 0;

/** A rack's return-temperature sensor reads wrong: its loop must fail safe, the valve go to its fail-open value. */
function badReading(name: string, why: string, fault: { fault: "nan" | "value" | "stuck"; value?: number }): FaultClass {
  return {
    name,
    expect: `${why}: the loop fails safe and the valve goes to its fail-open value`,
    inject: (c, r) => c.sim.inject({ sensor: `${rackName(r)}.returnTempC`, ...fault }),
    safe: failedSafe,
    clear: (c, r) => liveSensor(c.sim, r),
    recovered: automatic,
  };
}

/** The loop current of a rack's return-temperature transmitter is a NAMUR NE 43 failure value: never a PV. */
function loopCurrentFault(name: string, mA: number): FaultClass {
  const wire = (r: number): string => `${rackName(r)}.returnTempMa`;
  return {
    name,
    expect: "the reading is invalid, rejected before the PID: the loop fails safe and the valve goes to its fail-open value",
    inject: (c, r) => c.sim.inject({ sensor: wire(r), fault: "value", value: mA }),
    safe: failedSafe,
    clear: (c, r) => c.sim.inject({ sensor: wire(r), fault: "clear" }),
    recovered: automatic,
  };
}

/** Racks whose leak sensor is toggling, and the timer that toggles it. */
const chattering = new Map<number, NodeJS.Timeout>();
function stopChattering(rack?: number): void {
  for (const [r, t] of chattering) {
    if (rack !== undefined && r !== rack) continue;
    clearInterval(t);
    chattering.delete(r);
  }
}

/**
 * A leak signal that toggles wet/dry at `hz` (a rope that is wet in places, a loose contact),
 * starting wet. Polled every 20 ms in this campaign, a fast one is seen wet on some polls and dry
 * on others: the rack must still be isolated and latched.
 */
function chatteringLeak(hz: number): FaultClass {
  return {
    name: `leak chattering at ${hz} Hz`,
    expect: "isolated and latched all the same: both isolation valves commanded shut at the device",
    inject: (c, r) => {
      let wet = true;
      c.sim.inject({ leak: rackName(r), state: "wet" });
      chattering.set(
        r,
        setInterval(() => {
          wet = !wet;
          c.sim.inject({ leak: rackName(r), state: wet ? "wet" : "dry" });
        }, 500 / hz),
      );
    },
    safe: isolatedAtDevice,
    clear: async (c, r) => {
      stopChattering(r);
      await dryAndReset(c, r);
    },
    recovered: inServiceAtDevice,
  };
}

/** The rack's leak sensor dry again, then its latch reset (authorised; refused while it still reads wet). */
async function dryAndReset(c: Campaign, r: number): Promise<void> {
  c.sim.inject({ leak: rackName(r), state: "dry" });
  await waitFor(async () => (await c.pod.agent.commander.resetLeak(r)) === "accepted", `${rackName(r)} leak reset`, 10_000, 50);
}

export const FAULT_CLASSES: FaultClass[] = [
  {
    name: "sensor silent (device stops answering)",
    expect: "its loop fails safe once samples go stale; back to automatic when it answers",
    inject: (c, r) => c.sim.inject({ device: rackName(r), offline: true }),
    safe: failsafe,
    clear: (c, r) => c.sim.inject({ device: rackName(r), offline: false }),
    recovered: automatic,
  },
  badReading("sensor NaN", "rejected before the PID", { fault: "nan" }),
  badReading("sensor out of range", "rejected before the PID", { fault: "value", value: 150 }),
  badReading("sensor frozen", "no change beyond 0.001 °C for 500 ms", { fault: "stuck" }),
  loopCurrentFault("4–20 mA loop broken (0 mA)", 0),
  loopCurrentFault("4–20 mA below 3.6 mA (transmitter failure, downscale)", 3.2),
  loopCurrentFault("4–20 mA above 21 mA (transmitter failure, upscale)", 21.6),
  {
    name: "Modbus exception 4 on every function",
    expect: "the device's points go bad; its loop fails safe",
    inject: (c, r) => c.sim.inject({ device: rackName(r), exception: { code: 4 } }),
    safe: failsafe,
    clear: (c, r) => c.sim.inject({ device: rackName(r), exception: null }),
    recovered: automatic,
  },
  {
    name: "leak",
    expect: "both isolation valves commanded shut at the device; latched until an authorised reset",
    inject: (c, r) => c.sim.inject({ leak: rackName(r), state: "wet" }),
    safe: isolatedAtDevice,
    clear: async (c, r) => {
      await dryAndReset(c, r);
    },
    recovered: inServiceAtDevice,
  },
  chatteringLeak(1),
  chatteringLeak(10),
  chatteringLeak(100),
  {
    name: "leak-cable fault",
    expect: "a sensor fault (Warning alarm), not a leak: the rack stays in service",
    inject: (c, r) => c.sim.inject({ leak: rackName(r), state: "cable-fault" }),
    safe: (c, r) => c.pod.agent.supervisor.alarms.get(`leak-sensor:${rackName(r)}`)?.conditionActive === true && !isolatedAtDevice(c, r),
    clear: (c, r) => c.sim.inject({ leak: rackName(r), state: "dry" }),
    recovered: (c, r) => c.pod.agent.supervisor.alarms.get(`leak-sensor:${rackName(r)}`)?.conditionActive !== true,
  },
  {
    name: "broker hung (SIGSTOP)",
    expect: "detected within 1.5x keepalive; telemetry and events spooled",
    inject: (c) => c.broker.pause(),
    safe: uplinkDown,
    clear: (c) => c.broker.resume(),
    recovered: uplinkBackAndDrained,
  },
  {
    name: "network partition, packets dropped",
    expect: "silence detected by the keepalive (1.5x); spooled; reconnect when the link heals",
    inject: (c) => c.link.setMode("drop"),
    safe: uplinkDown,
    clear: (c) => c.link.setMode("pass"),
    recovered: uplinkBackAndDrained,
  },
  {
    name: "network partition, connections rejected",
    expect: "loss noticed at once; spooled; reconnect with backoff when the link heals",
    inject: (c) => c.link.setMode("reject"),
    safe: uplinkDown,
    clear: (c) => c.link.setMode("pass"),
    recovered: uplinkBackAndDrained,
  },
  {
    name: "broker restarted (SIGTERM)",
    expect: "connection loss noticed; spooled; reconnect with backoff; nothing lost end to end",
    inject: async (c) => await c.broker.kill("SIGTERM"),
    safe: uplinkDown,
    clear: async (c) => await c.broker.restart(),
    recovered: uplinkBackAndDrained,
  },
  {
    name: "broker killed (SIGKILL)",
    losesBrokerState: true,
    expect: "connection loss noticed; spooled; reconnect with backoff after restart",
    inject: async (c) => await c.broker.kill("SIGKILL"),
    safe: uplinkDown,
    clear: async (c) => await c.broker.restart(),
    recovered: uplinkBackAndDrained,
  },
];

export interface TrialResult {
  safeMs: number;
  recoveredMs: number;
}

/** One trial: inject, time until safe, clear, wait for recovery. Throws if either never comes. */
export async function trial(c: Campaign, f: FaultClass, rack: number, deadlineMs = 15_000): Promise<TrialResult> {
  const t0 = performance.now();
  await f.inject(c, rack);
  await waitFor(() => f.safe(c, rack), `${f.name} on ${rackName(rack)}: safe`, deadlineMs, 1);
  const safeMs = performance.now() - t0;
  const t1 = performance.now();
  await f.clear(c, rack);
  await waitFor(() => f.recovered(c, rack), `${f.name} on ${rackName(rack)}: recovered`, deadlineMs * 2, 5);
  return { safeMs, recoveredMs: performance.now() - t1 };
}

export interface FaultBenchRow {
  name: string;
  trials: number;
  safe: { p50: number; p99: number; max: number };
  recovered: { p50: number; p99: number; max: number };
}

/** Time-to-safe per fault class, over `trials` trials each, spread over the racks. */
export async function runFaultBench(trials: number): Promise<FaultBenchRow[]> {
  const c = await startCampaign();
  try {
    const rows: FaultBenchRow[] = [];
    for (const f of FAULT_CLASSES) {
      const safe: number[] = [];
      const rec: number[] = [];
      for (let i = 0; i < trials; i++) {
        const r = await trial(c, f, i % 8);
        safe.push(r.safeMs);
        rec.push(r.recoveredMs);
      }
      const q = (xs: number[]): { p50: number; p99: number; max: number } => ({ p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), max: Math.max(...xs) });
      rows.push({ name: f.name, trials, safe: q(safe), recovered: q(rec) });
    }
    return rows;
  } finally {
    await c.stop();
  }
}

export function printFaultBench(rows: FaultBenchRow[]): void {
  console.log("\n## faults: time-to-safe per fault class (real time, simulator in process, stale after 300 ms, debounce 20 ticks)");
  console.log("| fault | trials | safe p50 ms | safe p99 ms | safe max ms | recovered p50 ms | recovered p99 ms |");
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  for (const r of rows) console.log(`| ${r.name} | ${r.trials} | ${fmt(r.safe.p50, 0)} | ${fmt(r.safe.p99, 0)} | ${fmt(r.safe.max, 0)} | ${fmt(r.recovered.p50, 0)} | ${fmt(r.recovered.p99, 0)} |`);
}
