// The leak thread: polls the leak sensors and writes the isolation valves and the racks' power
// outputs, on Modbus TCP connections of its own and on the serial buses it owns whole, beside the
// control worker and away from the control plane's thread. On an owned bus it also serves the
// other devices' points and outputs: their samples go into the frames as its leak inputs do, and
// the control plane's commands for their outputs come as messages, behind the safety frames in
// the bus's queue (the safety group's priority).
//
// On the main thread a leak waited behind whatever else ran there: a 100 MB MQTT message being
// cut, a flood of forged commands being counted and dropped, telemetry, garbage collection
// (BENCHMARKS.md, "Leak-to-isolation under input load"). Here nothing else runs: a leak sample
// goes straight into the control worker's frames and wakes it, and the isolation commands the
// worker decides go straight to the valves, and each rack's power-off or cap follows its
// coolant in the same pass (coolant and power move together). The main thread still sees every point and output
// state, in reports a few times a second, for status, telemetry and alarms.
import { parentPort, workerData } from "node:worker_threads";
import type { ModbusConfig } from "../../drivers/modbus/config.js";
import type { LeaseConfig } from "../../drivers/modbus/lease.js";
import type { ScanOptions, ScanRow } from "../../drivers/modbus/bus-scan.js";
import { ModbusDriver, modbusOutputIds, type OutputState } from "../../drivers/modbus/driver.js";
import { monoMs } from "../../lib/clock.js";
import { PointStore, type Point } from "../../lib/points.js";
import type { PodConfig } from "../../pod/config.js";
import { podLayout } from "../../pod/layout.js";
import { PodWiring, type OutputSink } from "../../pod/wiring.js";
import { Frames, type FrameSizes } from "./frames.js";
import { SharedDecisions } from "./shared-decisions.js";
import { raiseThreadToFifo } from "./sched-fifo.js";

export interface LeakWorkerInput {
  /** the leak inputs, isolation valves and power outputs only (drivers/modbus/split.ts) */
  modbus: ModbusConfig;
  /** each device's lease (ModbusSplit.leases): renewed once before a close it has not had */
  leases: Record<string, LeaseConfig>;
  pod: Pick<PodConfig, "racks" | "cdu">;
  /** the supervisor's power decisions, written by the main thread (SharedDecisions) */
  decisions: SharedArrayBuffer;
  writeCaps: boolean;
  sizes: FrameSizes;
  buffers: { ctrl: SharedArrayBuffer; data: SharedArrayBuffer };
  /** how often points, output states and counters go to the main thread, ms */
  reportMs: number;
  /** isolation and power commands are checked this often besides at every interlock change, ms */
  passMs: number;
  /**
   * the control plane's health, as a deadline (BigInt64, µs of lib/clock's monoMs) it puts forward
   * while control is healthy: the leases of the owned buses' devices are beaten only before it
   * (LeakThread.setHealthy), so a stalled control plane loses them as a stalled agent would
   */
  health: SharedArrayBuffer;
  /** raise this thread to SCHED_FIFO at schedPriority (control.schedFifo) */
  schedFifo: boolean;
  schedPriority: number;
}

/** What the leak thread tells the main thread. */
export type LeakWorkerMessage =
  | { kind: "ready"; sched: "on" | "refused" | "off" }
  | { kind: "report"; points: Point[]; outputs: OutputState[]; stats: ReturnType<ModbusDriver["stats"]> }
  | { kind: "warn"; message: string }
  | { kind: "scanned"; ref: number; rows?: ScanRow[]; error?: string }
  | { kind: "stopped" };

/** What the main side asks of the leak thread. */
export type LeakWorkerRequest =
  | { kind: "stop" }
  | { kind: "decisions" }
  | { kind: "stroke"; rack: number; bits: number; maxMs: number }
  /** the control plane's command for an output of an owned bus that the thread does not decide itself */
  | { kind: "set"; id: string; value: number }
  | { kind: "scan"; ref: number; bus: string; o: ScanOptions };

function send(m: LeakWorkerMessage): void {
  parentPort?.postMessage(m);
}

function run(input: LeakWorkerInput): void {
  // Measured (BENCHMARKS.md, "Leak-to-isolation under input load"): at normal priority this
  // thread's polls of one device were 20-40 ms apart at worst on a 2-core host under load, and
  // leak-to-isolation p99 was 8-19 ms; at SCHED_FIFO, with the devices not sharing its cores,
  // p99 ~3 ms. It wakes for every poll answer and sleeps between them: it never spins.
  let sched: "on" | "refused" | "off" = "off";
  if (input.schedFifo) {
    const refused = raiseThreadToFifo(input.schedPriority);
    if (refused !== null) send({ kind: "warn", message: refused });
    sched = refused === null ? "on" : "refused";
  }
  const frames = new Frames(input.sizes, input.buffers);
  const wiring = new PodWiring(input.pod, podLayout(input.pod), { writeCaps: input.writeCaps });
  const decisions = new SharedDecisions(input.pod.racks.length, input.decisions);
  const safeSide = wiring.safeSides();
  const points = new PointStore();
  const driver = new ModbusDriver(input.modbus, { points });
  const healthyUntilUs = new BigInt64Array(input.health);
  const gateOpen = (): boolean => BigInt(Math.round(monoMs() * 1000)) < Atomics.load(healthyUntilUs, 0);
  driver.setHealthGate(gateOpen);
  /** the devices whose lease this thread beats: those of the serial buses it owns */
  const beaten = new Set(input.modbus.devices.filter((d) => d.lease !== undefined).map((d) => d.name));
  const outputIds = modbusOutputIds(input.modbus);
  const changed = new Map<string, Point>();
  let running = true;

  // a leak input that changed wakes the control worker now: it ticks, isolates, and signals
  points.subscribe((p) => {
    changed.set(p.id, p);
    if (wiring.routeSample(p, frames, monoMs())) frames.wake();
  });

  const warned = new Set<string>();
  const sink: OutputSink = {
    setOutput: (id, v) => {
      // a power output on a serial bus or a BMC's Redfish is the main thread's to write
      if (driver.outputState(id) === undefined) return;
      try {
        // A close (or a power-off) not asked of the device before goes after one heartbeat on this connection. The
        // lease is the main thread's, renewed only while the agent is healthy; a device whose
        // lease ran out while the main thread was held (the real-time HIL scenario
        // leak-while-main-thread-busy held it 10 s: the leak came 3 s in, after the 3 s lease)
        // holds its isolation valves and did not take this thread's close until the main thread
        // went on, 7 s late. One beat renews the lease for one lease period: the device takes the
        // close, its other outputs take the last commands the main thread sent for that while,
        // and its isolation valves stay shut once the lease runs out again where their lease
        // fail position is hold (the default). Nothing else renews a lease here: a dead agent still loses its
        // leases, and a held main thread's devices lose theirs but for that one period.
        // Asked once per close (the last value asked for, not the last acknowledged: a close the
        // device keeps refusing must not have this thread beat its lease at every pass).
        if (v === safeSide.get(id) && driver.outputState(id)?.value !== v) {
          const device = id.slice(0, id.indexOf("."));
          const lease = input.leases[device];
          // a device of an owned bus whose lease this thread beats while the gate is open has it:
          // the renewal would cost the close a frame's time on the line (13 ms at 19,200 baud)
          if (lease !== undefined && !(beaten.has(device) && gateOpen())) driver.renewLease(device, lease);
        }
        driver.setOutput(id, v);
      } catch (err) {
        // once per output: a bad value repeats at every pass
        if (!warned.has(id)) send({ kind: "warn", message: `cannot write ${id}: ${(err as Error).message}` });
        warned.add(id);
      }
    },
  };
  const supplyOpen = new Int32Array(input.sizes.racks);
  const returnOpen = new Int32Array(input.sizes.racks);
  const iso = { rackSupplyOpen: supplyOpen, rackReturnOpen: returnOpen };
  const pass = (): void => {
    const read = frames.readOutputs((f) => {
      supplyOpen.set(f.rackSupplyOpen);
      returnOpen.set(f.rackReturnOpen);
      return true;
    });
    // only changed commands are sent (the driver compares), so a pass with nothing new is free;
    // the valves first, as on the main thread: a close must not queue behind a power write
    if (read !== true) return;
    wiring.writeIsolation(iso, sink);
    wiring.writePower(iso, decisions.read(), sink);
  };
  const watch = async (): Promise<void> => {
    while (running) {
      // the count is read before the pass: a change that lands during it is not missed
      const seen = frames.interlockCount();
      pass();
      await frames.interlockChange(seen, input.passMs);
    }
  };

  const report = (): void => {
    const stats = driver.stats();
    const outputs = outputIds.map((id) => driver.outputState(id)).filter((s): s is OutputState => s !== undefined);
    send({ kind: "report", points: [...changed.values()], outputs, stats });
    changed.clear();
  };
  const reporter = setInterval(report, input.reportMs);

  // a partial-stroke hold ends here on its own at its deadline, whatever the main thread does
  const strokeEnds = new Map<number, NodeJS.Timeout>();
  const stroke = (rack: number, bits: number): void => {
    wiring.setStroke(rack, bits);
    if (running) pass();
  };
  parentPort?.on("message", (m: LeakWorkerRequest) => {
    if (m.kind === "decisions") {
      if (running) pass();
      return;
    }
    if (m.kind === "set") {
      if (running) sink.setOutput(m.id, m.value);
      return;
    }
    if (m.kind === "scan") {
      driver.scan(m.bus, m.o).then(
        (rows) => send({ kind: "scanned", ref: m.ref, rows }),
        (err: Error) => send({ kind: "scanned", ref: m.ref, error: err.message }),
      );
      return;
    }
    if (m.kind === "stroke") {
      clearTimeout(strokeEnds.get(m.rack));
      stroke(m.rack, m.bits);
      if (m.bits !== 0) {
        strokeEnds.set(
          m.rack,
          setTimeout(() => {
            send({ kind: "warn", message: `partial-stroke hold on rack ${m.rack} released by the leak thread at its ${m.maxMs} ms deadline: the main thread did not release it` });
            stroke(m.rack, 0);
          }, m.maxMs),
        );
      }
      return;
    }
    if (m.kind !== "stop" || !running) return;
    running = false;
    clearInterval(reporter);
    void driver.stop().then(() => {
      report();
      send({ kind: "stopped" });
      parentPort?.close();
    });
  });

  driver.start();
  void watch();
  send({ kind: "ready", sched });
}

run(workerData as LeakWorkerInput);
