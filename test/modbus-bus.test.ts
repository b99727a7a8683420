// The Modbus bus's scheduler (drivers/modbus/bus.ts) over a real TCP transport to a simulated
// device, one transaction at a time as on an RS-485 line: leak and safety jobs go before the
// control and telemetry jobs queued ahead of them; a device whose breaker is open gets no bus
// time; past the bus's time budget, sheddable jobs are skipped and counted (issue #54: no test
// imported it, so breaking its priority failed nothing).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { monoMs } from "../lib/clock.js";
import { CircuitBreaker } from "../drivers/breaker.js";
import { Bus, newDeviceStats, type BusDevice } from "../drivers/modbus/bus.js";
import { FC } from "../drivers/modbus/protocol.js";
import { OutputWriter } from "../drivers/modbus/output-writer.js";
import { PointStore } from "../lib/points.js";
import { TcpTransport } from "../drivers/modbus/tcp-transport.js";
import type { ModbusOutcome } from "../drivers/modbus/types.js";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";

describe("the Modbus bus's scheduler", () => {
  let t: TestSim;
  let transport: TcpTransport;
  const device = (): BusDevice => ({ name: "rack-1", unitId: 11, timeoutMs: 1000, retries: 0, retryDelayMs: 10, breaker: new CircuitBreaker(2, { baseMs: 60_000, maxMs: 60_000 }, monoMs), stats: newDeviceStats() });
  const read = { fc: FC.READ_INPUT_REGISTERS, address: 0, count: 8 } as const;

  beforeAll(async () => {
    t = await startTestSim();
    const port = t.sim.portOf("rack-1");
    if (port === undefined) throw new Error("the simulator has no rack-1");
    transport = new TcpTransport({ host: "127.0.0.1", port, maxInFlight: 1, connectTimeoutMs: 2000, reconnect: { baseMs: 100, maxMs: 1000 } });
    transport.start();
    await waitFor(() => transport.connected, "connected", 10_000);
  });
  afterAll(async () => {
    await transport.stop();
    await t.stop();
  });

  it("runs a safety job before the control and telemetry jobs queued ahead of it", async () => {
    const bus = new Bus("test", transport, 1);
    const d = device();
    const order: string[] = [];
    const outcomes: ModbusOutcome[] = [];
    const all: Promise<void>[] = [];
    const submit = (label: string, priority: number): void => {
      all.push(
        new Promise((resolve) =>
          bus.submit({
            device: d,
            request: read,
            priority,
            sheddable: false,
            done: (o) => {
              order.push(label);
              outcomes.push(o);
              resolve();
            },
          }),
        ),
      );
    };
    submit("control-0", 2); // on the wire at once: the bus was idle
    for (let i = 1; i <= 4; i++) submit(`telemetry-${i}`, 5);
    submit("control-5", 2);
    submit("leak", 0);
    await Promise.all(all);
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(order).toEqual(["control-0", "leak", "control-5", "telemetry-1", "telemetry-2", "telemetry-3", "telemetry-4"]);
    expect(d.stats.ok).toBe(7);
  });

  it("gives a device whose breaker is open no bus time: its job ends at once, counted", async () => {
    const bus = new Bus("test", transport, 1);
    const d = device();
    d.breaker.failure();
    d.breaker.failure(); // open for a minute
    const o = await new Promise<ModbusOutcome>((done) => bus.submit({ device: d, request: read, priority: 0, sheddable: false, done }));
    expect(o).toMatchObject({ ok: false, kind: "disconnected", message: expect.stringMatching(/circuit breaker open/) as unknown });
    expect(d.stats).toMatchObject({ requests: 0, offlineSkips: 1 });
  });

  it("skips a sheddable job past the bus's time budget, counted, and runs one that is not", async () => {
    const bus = new Bus("test", transport, 1e-9); // any transaction in the last second is over it
    const d = device();
    const job = (sheddable: boolean): Promise<ModbusOutcome> => new Promise((done) => bus.submit({ device: d, request: read, priority: 5, sheddable, done }));
    expect((await job(false)).ok).toBe(true);
    expect(await job(true)).toMatchObject({ ok: false, message: expect.stringMatching(/over its time budget/) as unknown });
    expect(bus.budgetOverruns).toBe(1);
    expect((await job(false)).ok).toBe(true);
  });

  it("takes a job that has not gone on the wire back out of its queue, and never ends it; not one on the wire", async () => {
    const bus = new Bus("test", transport, 1);
    const d = device();
    const ended: string[] = [];
    const job = (label: string) => ({ device: d, request: read, priority: 1, sheddable: false, done: () => ended.push(label) });
    const onWire = job("on the wire");
    const queued = job("queued");
    const after = job("after");
    bus.submit(onWire);
    bus.submit(queued);
    bus.submit(after);
    expect(bus.withdraw(onWire)).toBe(false);
    expect(bus.withdraw(queued)).toBe(true);
    expect(bus.withdraw(queued)).toBe(false); // once
    await waitFor(() => ended.length === 2, "the other two ended");
    expect(ended).toEqual(["on the wire", "after"]);
  });

  it("sends an output's command ahead of the line's queue, in place of a refresh of it still queued behind control traffic", async () => {
    const bus = new Bus("test", transport, 1);
    const d = { ...device(), bus, lease: null };
    // rack-1's supply isolation valve (coil 0 of the simulator's rack device), at the safety priority
    const writer = new OutputWriter("rack-1.supplyIso", d, { name: "supplyIso", table: "coil", address: 0, type: "bool", order: "ABCD", scale: 1, offset: 0, refreshMs: 0, verify: false, tolerance: 0, priority: 0 }, new PointStore(), () => true);
    writer.set(1);
    await waitFor(() => writer.state.written === 1, "opened");
    const endedAt: number[] = [];
    const control = (k: number): void => bus.submit({ device: d, request: read, priority: 1, sheddable: false, done: () => (endedAt[k] = monoMs()) });
    for (let k = 0; k < 4; k++) control(k); // the first on the wire, three queued
    writer.refresh(); // queued behind them, at 1: a refresh is no command
    writer.set(0); // the close
    await waitFor(() => writer.state.written === 0 && endedAt.filter((t) => t !== undefined).length === 4, "closed, and the control traffic done");
    // after the frame that was on the wire, before the control traffic queued ahead of it
    expect(writer.state.writtenAtMs).toBeGreaterThan(endedAt[0]);
    expect(writer.state.writtenAtMs).toBeLessThan(endedAt[1]);
    expect(writer.state.writes).toBe(2); // the queued refresh was withdrawn, never sent
    expect(writer.state.written).toBe(0);
  });
});
