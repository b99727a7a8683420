// The leak path does not wait for the main thread (issue #22, item 4): the leak thread polls the
// leak sensors and writes the isolation valves on its own connections, so a leak is isolated
// while the agent's main thread is blocked outright. The simulator runs in a process of its own
// (a blocked test process would stall an in-process plant too) and times the leak register
// changing and the close command arriving at the device.
import { readFileSync, rmSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../agent/agent.js";
import type { ModbusConfig } from "../drivers/modbus/config.js";
import { splitModbus } from "../drivers/modbus/split.js";
import { Frames } from "../agent/control/frames.js";
import { LeakThread } from "../agent/control/leak-thread.js";
import { SharedDecisions } from "../agent/control/shared-decisions.js";
import { demoConfigData } from "../cli/demo-config.js";
import { startSimProcess, type SimProcess } from "../tooling/sim-process.js";
import { agentConfig, testAgent, TEST_POD } from "./helpers/agent.js";
import { ptyPair, stopProcess, waitFor, type PtyPair } from "./helpers/processes.js";
import { tempDir } from "./helpers/temp-dirs.js";

interface Truth {
  racks: { name: string; leakToIsolationMs: number | null; supplyIsolationPct: number; powerOff: boolean; powerCapKw: number | null }[];
  devices: { name: string; leaseExpired: boolean }[];
}

interface BlockedLeakOptions {
  afterMs?: number;
  moving?: boolean;
  power?: "off" | number;
}

/**
 * A leak injected while this (the agent's) main thread is blocked, by a thread that then watches
 * the simulator for the isolation: the block lasts until that thread has seen the valve's close
 * command arrive, or has watched for `watchMs` without seeing it. Returns whether it saw it.
 * `afterMs`: the leak comes that long into the block (past a device's lease, say); `moving`:
 * what is watched for is the valve leaving its open end at the device, not the command's arrival
 * (a device whose lease has run out takes a command in and does not act on it); `power`: the
 * rack's power is also watched for, off or capped at that many kW (coolant and power move together).
 */
function blockedLeak(url: string, rack: number, watchMs: number, o: BlockedLeakOptions = {}): boolean {
  const flag = new Int32Array(new SharedArrayBuffer(12)); // [done, seen, the device's lease out at the leak]
  const script = `
    const { workerData: w } = require("node:worker_threads");
    const flag = new Int32Array(w.buffer);
    (async () => {
      await new Promise((r) => setTimeout(r, w.afterMs));
      const before = await (await fetch(w.url + "/truth")).json();
      if (before.devices.find((d) => d.name === w.rack).leaseExpired) Atomics.store(flag, 2, 1);
      await fetch(w.url + "/fault", { method: "POST", body: JSON.stringify({ leak: w.rack }) });
      const t0 = Date.now();
      while (Date.now() - t0 < w.watchMs) {
        const t = await (await fetch(w.url + "/truth")).json();
        const r = t.racks[w.index];
        const power = w.power === null || (w.power === "off" ? r.powerOff : r.powerCapKw === w.power);
        if (power && (w.moving ? r.supplyIsolationPct < 99 : r.leakToIsolationMs !== null)) { Atomics.store(flag, 1, 1); break; }
        await new Promise((r) => setTimeout(r, 5));
      }
      Atomics.store(flag, 0, 1);
    })();`;
  const injector = new Worker(script, { eval: true, workerData: { buffer: flag.buffer, url, rack: `rack-${rack + 1}`, index: rack, watchMs, afterMs: o.afterMs ?? 0, moving: o.moving === true, power: o.power ?? null } });
  const t0 = performance.now();
  while (Atomics.load(flag, 0) === 0 && performance.now() - t0 < (o.afterMs ?? 0) + watchMs + 10_000) {
    // busy: no timer, no socket, no promise of this thread runs until the injector is done
  }
  void injector.terminate();
  expect(Atomics.load(flag, 0), "the injector finished while the main thread was blocked").toBe(1);
  if (o.afterMs !== undefined) expect(Atomics.load(flag, 2), "the device's lease had run out when the leak came").toBe(1);
  return Atomics.load(flag, 1) === 1;
}

describe("splitting a Modbus config for the leak thread", () => {
  const device = (name: string, over: object): ModbusConfig["devices"][number] => ({
    name,
    unitId: 1,
    timeoutMs: 100,
    retries: 0,
    retryDelayMs: 0,
    maxGapRegisters: 0,
    maxRequestRegisters: 125,
    maxRequestBits: 2000,
    breaker: { failures: 3, damagedAnswers: 10, openMs: 1000, maxOpenMs: 30000 },
    lease: { style: "heartbeat-counter", address: 9, periodMs: 500, value: 1, safeValues: [] },
    points: ["leak", "flow"].map((p, i) => ({ name: p, table: "input" as const, address: i, type: "u16" as const, order: "ABCD" as const, scale: 1, offset: 0, group: "safety" })),
    outputs: ["iso", "valve"].map((o, i) => ({ name: o, table: "holding" as const, address: 10 + i, type: "u16" as const, order: "ABCD" as const, scale: 1, offset: 0, refreshMs: 0, verify: false, tolerance: 0, priority: 1 })),
    ...over,
  });
  const config: ModbusConfig = {
    groups: [{ name: "safety", periodMs: 1, priority: 0 }],
    buses: [{ name: "rs485", path: "/dev/ttyS0", baudRate: 19200, dataBits: 8, parity: "even", stopBits: 1, rs485: "none", latencyMs: 0, guardMs: 0, interFrameMs: 2, budget: 0.7 }],
    devices: [device("a", { tcp: { host: "127.0.0.1", port: 502, maxInFlight: 1 } }), device("b", { bus: "rs485" }), device("c", { tcp: { host: "127.0.0.1", port: 503, maxInFlight: 1 } })],
    reconnect: { baseMs: 100, maxMs: 1000, connectTimeoutMs: 1000 },
  };

  it("takes the named points and outputs of TCP devices, without their lease, and a serial bus whole, with its devices' leases", () => {
    const lease = { style: "heartbeat-counter", address: 9, periodMs: 500, value: 1, safeValues: [] };
    const withD: ModbusConfig = { ...config, devices: [...config.devices, device("d", { bus: "rs485", unitId: 2 })] };
    const s = splitModbus(withD, new Set(["a.leak", "a.iso", "b.leak", "b.iso"]));
    expect(s.taken.devices.map((d) => [d.name, d.points.map((p) => p.name), d.outputs.map((o) => o.name), d.lease])).toEqual([
      ["a", ["leak"], ["iso"], undefined],
      // one port, one owner: every device on the bus, with all it has, its lease beaten by the taker
      ["b", ["leak", "flow"], ["iso", "valve"], lease],
      ["d", ["leak", "flow"], ["iso", "valve"], lease],
    ]);
    expect(s.taken.buses.map((b) => b.name)).toEqual(["rs485"]);
    expect(s.buses).toEqual(["rs485"]);
    expect(s.kept.buses).toEqual([]);
    const kept = new Map(s.kept.devices.map((d) => [d.name, d]));
    expect([...kept.keys()]).toEqual(["a", "c"]);
    expect(kept.get("a")?.points.map((p) => p.name)).toEqual(["flow"]);
    expect(kept.get("a")?.outputs.map((o) => o.name)).toEqual(["valve"]);
    expect(kept.get("a")?.lease).toEqual(lease); // the lease stays with the main driver
    expect(s.leases).toEqual({ a: lease, b: lease, d: lease }); // for a renewal before a close (leak-worker.ts)
    expect(kept.get("c")).toBe(config.devices[2]); // nothing of it asked for
    expect(s.left).toEqual([]);
  });

  it("leaves a bus whose direction is toggled by RTS where it was, its ids reported as left: RTS takes serialport, on the main thread only", () => {
    const rts: ModbusConfig = { ...config, buses: [{ ...config.buses[0], rs485: "rts" }] };
    const s = splitModbus(rts, new Set(["a.leak", "b.leak", "b.iso"]));
    expect(s.taken.devices.map((d) => d.name)).toEqual(["a"]);
    expect(s.taken.buses).toEqual([]);
    expect(s.kept.buses).toEqual(rts.buses);
    expect(s.kept.devices[1]).toBe(rts.devices[1]);
    expect(s.left).toEqual(["b.leak", "b.iso"]);
  });
});

describe("what the leak thread loads", () => {
  /** The packages the built module graph from `entry` imports at run time (type imports are gone from the build). */
  const packagesLoaded = (entry: string): Set<string> => {
    const seen = new Set<string>();
    const packages = new Set<string>();
    const walk = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const m of readFileSync(file, "utf8").matchAll(/^import\s+(?:[^"']*?\s+from\s+)?["']([^"']+)["']/gm)) {
        if (m[1].startsWith(".")) walk(resolve(dirname(file), m[1]));
        else packages.add(m[1]);
      }
    };
    walk(resolve(entry));
    return packages;
  };

  it("keeps the config's validation out of the leak thread: neither ajv nor yaml in its module graph", () => {
    // importing drivers/modbus/config.js for one helper once loaded both and compiled the Modbus
    // schema in the thread: 2.2 MB of its heap (BENCHMARKS.md, "Daemon memory")
    const loaded = packagesLoaded("dist/agent/control/leak-worker.js");
    expect(loaded.has("modbus-serial"), "the walk reaches the driver").toBe(true);
    expect([...loaded].filter((p) => /^(ajv|yaml)(\/|$)/.test(p))).toEqual([]);
  });
});

describe("the supervisor's power decisions shared with the leak thread", () => {
  it("reads back what was written, on another view of the same memory, and says when a value changed", () => {
    const mine = new SharedDecisions(2, { pumpEnable: true, pumpRun: [], rackPowerOff: [false, false], powerCapsKw: [100, 80], coolantPending: [false, false] });
    const theirs = new SharedDecisions(2, mine.buffer);
    expect(theirs.read()).toEqual({ pumpEnable: true, pumpRun: [], rackPowerOff: [false, false], powerCapsKw: [100, 80], coolantPending: [false, false] });
    const next = { pumpEnable: false, pumpRun: [], rackPowerOff: [false, true], powerCapsKw: [42.34, Infinity], coolantPending: [true, false] };
    expect(mine.write(next)).toBe(true);
    expect(mine.write(next)).toBe(false); // the same again: no pass asked of the thread
    // in tenths of a kW, as the devices are sent it; a cap that is no number is not written (NaN); the pump is not the thread's
    expect(theirs.read()).toEqual({ pumpEnable: true, pumpRun: [], rackPowerOff: [false, true], powerCapsKw: [42.3, NaN], coolantPending: [true, false] });
    expect(() => new SharedDecisions(3, mine.buffer)).toThrow(/6 words for 3 racks/);
  });
});

describe("a leak thread that dies", () => {
  it("is reported: the agent raises its alarm from onDied, and a start that fails says so", async () => {
    const data = demoConfigData(() => 1) as { modbus: ModbusConfig };
    // a serial device in the thread's config: its driver cannot be built, and the thread ends
    const bad: ModbusConfig = { ...data.modbus, buses: [], devices: [{ ...data.modbus.devices[0], tcp: undefined, bus: "none" }] };
    const config = agentConfig({ ...data, pod: TEST_POD });
    const died: string[] = [];
    const t = new LeakThread({ modbus: bad, leases: {}, pod: { racks: config.racks, cdu: config.cdu }, decides: [], decisions: { pumpEnable: true, pumpRun: [], rackPowerOff: config.racks.map(() => false), powerCapsKw: config.racks.map((r) => r.ratedKw), coolantPending: config.racks.map(() => false) }, writeCaps: false, reportMs: 50, passMs: 50, fifoPriority: null, onPoint: () => undefined, onLog: () => undefined, onDied: (why) => died.push(why) });
    const frames = new Frames({ points: 4, loops: 2, racks: 1 });
    await expect(t.start(frames)).rejects.toThrow(/leak thread did not start/);
    expect(died.join()).toMatch(/no bus none/);
    expect(t.running).toBe(false);
  });
});

describe("the leak thread against a simulator process", () => {
  let dir: string;
  let sim: SimProcess;
  const truth = async (): Promise<Truth> => (await fetch(`${sim.controlUrl}/truth`)).json() as Promise<Truth>;
  const fault = async (body: object): Promise<void> => {
    const r = await fetch(`${sim.controlUrl}/fault`, { method: "POST", body: JSON.stringify(body) });
    expect(r.status).toBe(200);
  };

  beforeAll(async () => {
    dir = tempDir("podwarden-leak-thread-");
    sim = await startSimProcess(dir, 5000); // device leases outlast the blocked main thread
  }, 30_000);
  afterAll(async () => {
    await stopProcess(sim.child);
    rmSync(dir, { recursive: true, force: true });
  });

  /** An agent on the simulator's devices, leak sensors polled every 5 ms, until its inputs are in. */
  async function startAgent(leakThread: boolean, extra: Record<string, unknown> = {}): Promise<Agent> {
    const data = { ...(demoConfigData((name) => sim.ports[name]) as unknown as Record<string, unknown>), ...extra } as Record<string, unknown> & { modbus: { groups: { name: string; periodMs: number }[] }; control?: Record<string, unknown> };
    for (const g of data.modbus.groups) if (g.name === "safety") g.periodMs = 5;
    const control = data.control ?? {};
    data.control = { ...control, isolation: { ...(control.isolation as object | undefined), leakThread } };
    const { agent } = testAgent(agentConfig({ ...data, pod: TEST_POD }));
    await agent.start();
    await waitFor(async () => (await truth()).devices.every((d) => !d.leaseExpired), "the agent holds every device's lease", 20_000);
    await waitFor(() => agent.config.racks.every((r) => r.points.leak.every((id) => agent.points.get(id)?.quality === "good")), "every leak input read", 10_000);
    return agent;
  }

  /** Runs `body` on an agent from startAgent(), then stops it and clears the simulator's faults. */
  async function withAgent(leakThread: boolean, body: (agent: Agent) => Promise<void>, extra: Record<string, unknown> = {}): Promise<void> {
    const agent = await startAgent(leakThread, extra);
    try {
      await body(agent);
    } finally {
      await agent.stop({ driveSafe: false, reason: "test end" });
      await fault({ clear: "all" });
    }
  }

  const leakWhileBlocked = (rack: number, watchMs: number, o: BlockedLeakOptions = {}): boolean => blockedLeak(sim.controlUrl, rack, watchMs, o);

  it("isolates a leaking rack while the main thread is blocked: the close command reaches the valve before the main thread runs again", async () => {
    await withAgent(true, async (agent) => {
      expect(agent.modbusStats().devices.some((d) => d.name === "rack-2#leak" && d.connected)).toBe(true);
      // SCHED_FIFO, one below the control thread, where permitted (root has CAP_SYS_NICE)
      const sched = agent.field.leak?.thread.sched;
      if (process.getuid?.() === 0) expect(sched).toBe("on");
      else expect(["on", "refused"]).toContain(sched);
      expect((await truth()).racks[1].powerOff).toBe(false);
      expect(leakWhileBlocked(1, 2000, { power: "off" }), "the isolation close command reached the valve, and the rack's power went off, while the main thread was blocked").toBe(true);
      // and the main thread, once free, sees what happened: the points and the writes it did not do
      await waitFor(() => agent.points.get(agent.config.racks[1].points.leak[0])?.value === 1, "the leak reported to the main thread", 5000);
      await waitFor(() => agent.field.io.outputState(agent.config.racks[1].outputs.supplyIsolation)?.written === 0, "the close reported to the main thread", 5000);
      await waitFor(() => agent.field.io.outputState(agent.config.racks[1].outputs.powerOff ?? "")?.written === 1, "the power-off reported to the main thread", 5000);
      // the main thread does not undo it: the rack stays isolated and off
      await new Promise((r) => setTimeout(r, 300));
      expect((await truth()).racks[1].powerOff).toBe(true);
    });
  }, 60_000);

  it("a rack that couples by cap is capped at its no-coolant limit while the main thread is blocked, and the cap lifted once the rack is reset", async () => {
    const data = demoConfigData((name) => sim.ports[name]) as unknown as { racks: { noCoolant?: object }[] };
    const racks = data.racks.map((r, i) => (i === 5 ? { ...r, noCoolant: { action: "cap", capKw: 7 } } : r));
    await withAgent(
      true,
      async (agent) => {
        // the budget's cap (writeCaps), above the no-coolant one
        const budgetCap = async (): Promise<boolean> => ((await truth()).racks[5].powerCapKw ?? 0) > 50;
        await waitFor(budgetCap, "rack-6 at its budget's cap", 5000);
        expect(leakWhileBlocked(5, 2000, { power: 7 }), "rack-6 isolated and capped at 7 kW while the main thread was blocked").toBe(true);
        expect((await truth()).racks[5].powerOff).toBe(false);
        // the cap is lifted when the coolant comes back: dry again, then an authorised reset
        await fault({ clear: "all" });
        await waitFor(() => agent.points.get(agent.config.racks[5].points.leak[0])?.value === 0, "the leak gone", 5000);
        await waitFor(async () => (await agent.commander.resetLeak(5)) === "accepted", "the latch reset", 10_000, 200);
        await waitFor(budgetCap, "rack-6's no-coolant cap lifted", 15_000);
      },
      { racks },
    );
  }, 60_000);

  it("isolates when the main thread has been blocked past the device's lease: one heartbeat before the close, and the valve moves", async () => {
    // a simulator of its own, whose devices' leases (1 s) run out inside the block
    const long = sim;
    const shortDir = tempDir("podwarden-leak-thread-lease-");
    sim = await startSimProcess(shortDir, 1000);
    try {
      await withAgent(true, () => {
        expect(leakWhileBlocked(2, 3000, { afterMs: 1800, moving: true }), "rack-3's isolation valve moving at the device, its lease run out, while the main thread was blocked").toBe(true);
        return Promise.resolve();
      });
    } finally {
      await stopProcess(sim.child);
      sim = long;
      rmSync(shortDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("a leak thread that crashes: Critical alarm while it is down, restarted with its connections, and it isolates again", async () => {
    await withAgent(true, async (agent) => {
      // fault injection: end the thread as a crash would, without the stop the agent sends
      const inside = { leakThread: agent.field.leak?.thread as unknown as { worker: Worker | null } };
      const crashed = inside.leakThread.worker;
      expect(crashed).not.toBeNull();
      await crashed?.terminate();
      await waitFor(() => agent.activeAlarms().some((a) => a.id === "leak-thread" && a.severity === "Critical"), "the leak-thread alarm", 5000);
      await waitFor(() => inside.leakThread.worker !== null && inside.leakThread.worker !== crashed && agent.modbusStats().devices.some((d) => d.name === "rack-4#leak" && d.connected), "the leak thread restarted and connected", 10_000);
      await waitFor(() => !agent.activeAlarms().some((a) => a.id === "leak-thread" && a.conditionActive), "the alarm's condition cleared", 10_000);
      expect(leakWhileBlocked(3, 2000), "the restarted thread isolates while the main thread is blocked").toBe(true);
    });
  }, 60_000);

  it("a partial-stroke hold is released by the leak thread at its deadline while the main thread is blocked: the valve moves and comes back open", async () => {
    await withAgent(
      true,
      async (agent) => {
        await waitFor(() => agent.points.get(agent.config.racks[4].points.supplyIsolationOpenLimit ?? "")?.value === 1, "rack-5's open limit read", 5000);
        // right after the start a reading may not have had its clean ticks yet: the test is refused until it has
        await waitFor(
          () => {
            try {
              return agent.commander.startStroke(4, "supply", "test").state === "running";
            } catch {
              return false;
            }
          },
          "the partial-stroke test started",
          10_000,
        );
        // the hold's deadline: max(hold 0.4 s, timeout 1 s) + 0.5 s, inside a 4 s block
        const flag = new Float64Array(new SharedArrayBuffer(24)); // [done, lowest, last]
        const script = `
          const { workerData: w } = require("node:worker_threads");
          const flag = new Float64Array(w.buffer);
          (async () => {
            let lowest = 100, last = NaN;
            const t0 = Date.now();
            while (Date.now() - t0 < w.watchMs) {
              const t = await (await fetch(w.url + "/truth")).json();
              last = t.racks[4].supplyIsolationPct;
              lowest = Math.min(lowest, last);
              await new Promise((r) => setTimeout(r, 20));
            }
            flag[1] = lowest; flag[2] = last; Atomics.store(new Int32Array(w.buffer), 0, 1);
          })();`;
        const watcher = new Worker(script, { eval: true, workerData: { buffer: flag.buffer, url: sim.controlUrl, watchMs: 4000 } });
        const done = new Int32Array(flag.buffer);
        const t0 = performance.now();
        while (Atomics.load(done, 0) === 0 && performance.now() - t0 < 15_000) {
          // blocked: the main thread releases nothing until the watcher is done
        }
        void watcher.terminate();
        expect(Atomics.load(done, 0), "the watcher finished while the main thread was blocked").toBe(1);
        expect(flag[1], "the valve moved").toBeLessThan(95);
        expect(flag[2], "and came back open while the main thread was still blocked").toBeGreaterThanOrEqual(99);
        // the main thread, once free, gives no verdict on what it missed
        await waitFor(() => agent.strokeStatus().recent !== null, "the test's end", 5000);
        expect(agent.strokeStatus().recent?.state).toBe("aborted");
        expect(agent.strokeStatus().recent?.reason).toMatch(/main thread stalled/);
      },
      { partialStroke: { timeoutS: 1 } },
    );
  }, 60_000);

  it("without the leak thread (isolation.leakThread off) the same close waits for the main thread", async () => {
    await withAgent(false, async (agent) => {
      expect(agent.modbusStats().devices.some((d) => d.name.endsWith("#leak"))).toBe(false);
      expect(leakWhileBlocked(2, 1000), "no close command while the main thread was blocked").toBe(false);
      await waitFor(async () => (await truth()).racks[2].leakToIsolationMs !== null, "the rack isolated once the main thread ran", 10_000);
    });
  }, 60_000);
});

describe("the leak thread owning a serial bus (issue #52, the leak path on every transport)", () => {
  let dir: string;
  let line: PtyPair;
  let sim: SimProcess;
  const truth = async (): Promise<Truth> => (await fetch(`${sim.controlUrl}/truth`)).json() as Promise<Truth>;

  beforeAll(async () => {
    dir = tempDir("podwarden-leak-serial-");
    line = await ptyPair();
    // every device on TCP, and on the serial line too, by unit id; leases outlast the test's holds
    sim = await startSimProcess(dir, 5000, undefined, undefined, { rtu: { path: line.b, baudRate: 115200 } });
  }, 30_000);
  afterAll(async () => {
    await stopProcess(sim.child);
    await line.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The demo pod with rack-2's device on an RS-485 bus (8N1: a pty has no parity) instead of TCP. */
  function serialPod(rs485: "none" | "rts" = "none"): Record<string, unknown> {
    const data = demoConfigData((name) => sim.ports[name]) as unknown as { modbus: { buses?: unknown[]; groups: { name: string; periodMs: number }[]; devices: Record<string, unknown>[] } };
    for (const g of data.modbus.groups) if (g.name === "safety") g.periodMs = 5;
    data.modbus.buses = [{ name: "rs485", path: line.a, baudRate: 115200, parity: "none", rs485, latencyMs: 0 }];
    data.modbus.devices = data.modbus.devices.map((d) => {
      if (d.name !== "rack-2") return d;
      const { tcp: _tcp, ...rest } = d;
      return { ...rest, bus: "rs485" };
    });
    return { ...(data as unknown as Record<string, unknown>), pod: TEST_POD };
  }

  it("polls the bus on its own thread: a leak on the serial device is isolated and its power cut while the main thread is blocked; the bus's other points and outputs served through it", async () => {
    const { agent } = testAgent(agentConfig(serialPod()));
    await agent.start();
    try {
      expect(agent.field.leak?.ownsBus("rs485")).toBe(true);
      expect(agent.field.leakLeft).toEqual([]);
      await waitFor(async () => (await truth()).devices.every((d) => !d.leaseExpired), "every device's lease held, the serial one's by the leak thread", 20_000);
      // named as it is: nobody else has a connection to it
      await waitFor(() => agent.modbusStats().devices.some((d) => d.name === "rack-2" && d.connected && d.stats.ok > 0), "rack-2 polled on the leak thread's bus", 10_000);
      expect(agent.field.modbus.stats().devices.map((d) => d.name)).not.toContain("rack-2");
      const r2 = agent.config.racks[1];
      await waitFor(() => agent.points.get(r2.points.flowLpm)?.quality === "good" && agent.points.get(r2.points.leak[0])?.quality === "good", "rack-2's flow and leak read", 10_000);
      // its control valve: the control plane's command, written by the leak thread's driver
      await waitFor(() => typeof agent.field.io.outputState(r2.outputs.valve)?.written === "number", "rack-2's valve command written through the leak thread", 10_000);
      expect(blockedLeak(sim.controlUrl, 1, 2000, { power: "off" }), "the close command and the power-off reached rack-2 over RS-485 while the main thread was blocked").toBe(true);
      await waitFor(() => agent.field.io.outputState(r2.outputs.supplyIsolation)?.written === 0, "the close reported to the main thread", 5000);
      // a scan of the bus goes to its owner, behind its traffic
      const rows = await agent.field.scanBus("rs485", { from: 11, to: 13, timeoutMs: 100, register: 0 });
      expect(rows.map((r) => [r.unitId, r.result, r.device])).toEqual([
        [11, "answered", undefined],
        [12, "answered", "rack-2"],
        [13, "answered", undefined],
      ]);
    } finally {
      await agent.stop({ driveSafe: false, reason: "test end" });
      await fetch(`${sim.controlUrl}/fault`, { method: "POST", body: JSON.stringify({ clear: "all" }) });
    }
  }, 60_000);

  it("beats the serial devices' leases only while the control plane says control is healthy", async () => {
    const { agent } = testAgent(agentConfig(serialPod()));
    await agent.start();
    try {
      await waitFor(async () => (await truth()).devices.every((d) => !d.leaseExpired), "every device's lease held", 20_000);
      agent.field.leak?.setHealthGate(() => false); // as a control plane that is not healthy says
      // the sim's leases are 5 s
      await waitFor(async () => (await truth()).devices.find((d) => d.name === "rack-2")?.leaseExpired === true, "rack-2's lease run out", 15_000);
      expect((await truth()).devices.filter((d) => d.name !== "rack-2").every((d) => !d.leaseExpired), "the TCP devices' leases, the main driver's, still held").toBe(true);
      // healthy again: the leak thread beats it, and the device takes its lease back
      agent.field.leak?.setHealthGate(() => true);
      await waitFor(async () => (await truth()).devices.find((d) => d.name === "rack-2")?.leaseExpired === false, "rack-2's lease beaten again", 10_000);
    } finally {
      await agent.stop({ driveSafe: false, reason: "test end" });
    }
  }, 60_000);

  it("sends an owned device's output again until the device confirms it: a command lost while the device was silent arrives once it answers", async () => {
    const data = serialPod() as { modbus: { devices: Record<string, unknown>[] } };
    // the device's own fail position, written from the config at every actuator pass and never refreshed
    data.modbus.devices = data.modbus.devices.map((d) => (d.name === "rack-2" ? { ...d, outputs: (d.outputs as { name: string }[]).map((o) => (o.name === "failValvePct" ? { ...o, refreshMs: 0 } : o)) } : d));
    await fetch(`${sim.controlUrl}/fault`, { method: "POST", body: JSON.stringify({ device: "rack-2", offline: true }) });
    const { agent } = testAgent(agentConfig(data));
    await agent.start();
    try {
      const id = "rack-2.failValvePct";
      await waitFor(() => (agent.field.io.outputState(id)?.failures ?? 0) > 0, "its first write lost to the silent device", 10_000);
      expect(agent.field.io.outputState(id)?.written).toBeNull();
      await fetch(`${sim.controlUrl}/fault`, { method: "POST", body: JSON.stringify({ device: "rack-2", offline: false }) });
      await waitFor(() => agent.field.io.outputState(id)?.written !== null && agent.field.io.outputState(id)?.quality === "good", "the fail position written once the device answers", 15_000);
    } finally {
      await agent.stop({ driveSafe: false, reason: "test end" });
      await fetch(`${sim.controlUrl}/fault`, { method: "POST", body: JSON.stringify({ clear: "all" }) });
    }
  }, 60_000);

  it("leaves a bus whose direction is toggled by RTS to the control plane's thread, and says so", () => {
    const { agent } = testAgent(agentConfig(serialPod("rts")));
    expect(agent.field.leak?.ownsBus("rs485")).toBe(false);
    const r2 = agent.config.racks[1];
    expect(agent.field.leakLeft).toEqual(expect.arrayContaining([r2.points.leak[0], r2.outputs.supplyIsolation]));
  });
});
