// The pod stage on its own: the layout, the wiring's routing and writes, the status words, and
// the bank's defaults coming from the config schema alone.
import { describe, expect, it } from "vitest";
import * as L from "../hotpath-as/assembly/layout.js";
import { demoAgentConfig } from "../cli/demo-config.js";
import { validateAgentConfig } from "../agent/config/load.js";
import type { Point } from "../lib/points.js";
import { defaultSetpoints, podBankSpec } from "../pod/bank.js";
import { defaultControl } from "../pod/config.js";
import { bankPointIds, podLayout } from "../pod/layout.js";
import { cduStatus, rackStatuses, valveSeen } from "../pod/status-view.js";
import { failsafeReasons, isolationState, leakState, qualityWords } from "../pod/status-words.js";
import { PodWiring, type PodOutputs } from "../pod/wiring.js";
import { failSafeMatrix, failSafeProblems, leaseFailWrites, safeValue } from "../pod/fail-safe.js";

const DEMO = demoAgentConfig((d) => {
  // two leak ropes on rack-2: the layout must give each its own point
  (d.racks as { points: { leak: string[] } }[])[1].points.leak.push("rack-2.status");
});
const lay = podLayout(DEMO);

const point = (id: string, value: number, quality: Point["quality"] = "good", sourceTimeMs = 100): Point => ({ id, value, quality, sourceTimeMs });

describe("an isolation valve's limit switches", () => {
  it("say open, closed or moving, and say so when they cannot", () => {
    expect(valveSeen(undefined, undefined)).toBeNull();
    expect(valveSeen(1, 0)).toBe("open");
    expect(valveSeen(0, 1)).toBe("closed");
    expect(valveSeen(0, 0)).toBe("moving");
    expect(valveSeen(1, 1)).toBe("limit fault");
    expect(valveSeen(null, 0)).toBe("no reading");
    expect(valveSeen(0, undefined)).toBe("not open");
    expect(valveSeen(undefined, 0)).toBe("not closed");
    expect(valveSeen(undefined, 1)).toBe("closed");
  });
});

describe("pod layout", () => {
  it("puts rack loops first in rack order and the pump last, and each rack's points together", () => {
    expect(lay.rackLoops).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(lay.pumpLoop).toBe(8);
    expect(lay.loops).toBe(9);
    // the demo's racks have both closed limit switches: they follow the leak sensors
    expect(lay.racks[0]).toMatchObject({ name: "rack-1", returnTempC: 0, supplyTempC: 1, flowLpm: 2, powerKw: 3, leaks: [4], supplyClosedLimit: 5, returnClosedLimit: 6, loop: 0 });
    expect(lay.racks[1].leaks).toEqual([11, 12]);
    expect(lay.racks[1]).toMatchObject({ supplyClosedLimit: 13, returnClosedLimit: 14 });
    expect(lay.racks[2].returnTempC).toBe(15);
    // then the CDU's, then each pump's status inputs (fault, running)
    expect(lay.cdu).toEqual({
      dpKpa: lay.points - 6,
      supplyTempC: lay.points - 5,
      pumps: [
        { name: "pump-1", fault: lay.points - 4, running: lay.points - 3 },
        { name: "pump-2", fault: lay.points - 2, running: lay.points - 1 },
      ],
    });
    expect(bankPointIds(DEMO).slice(-4)).toEqual(["cdu.pumpTripped", "cdu.pumpRunning", "cdu.pump2Tripped", "cdu.pump2Running"]);
  });

  it("names loops and finds racks and loops by name", () => {
    expect(lay.loopName(2)).toBe("rack-3.valve");
    expect(lay.loopName(8)).toBe("cdu.pump");
    expect(lay.loopIndex("cdu.pump")).toBe(8);
    expect(lay.loopIndex("rack-9.valve")).toBeUndefined();
    expect(lay.rackIndex("rack-4")).toBe(3);
    expect(lay.rackIndex("nope")).toBeUndefined();
    expect(lay.isPumpLoop(8)).toBe(true);
    expect(lay.isPumpLoop(7)).toBe(false);
  });
});

describe("pod bank defaults", () => {
  it("come from the config schema alone: an agent config that sets no tuning gets exactly defaultControl()", () => {
    const minimal = demoAgentConfig((d) => delete d.control);
    expect(minimal.control).toEqual(defaultControl());
    expect(podBankSpec(minimal.control, podLayout(minimal), minimal.racks)).toEqual(podBankSpec(defaultControl(), podLayout(minimal), minimal.racks));
    // the figures that once drifted in a second table
    expect(defaultControl().points.flow.max).toBe(1000);
    expect(defaultControl().points.leak.debounceFault).toBe(1);
  });

  it("builds each loop on its rack's inputs, with feed-forward from power, and the pump on the CDU dp", () => {
    const spec = podBankSpec(DEMO.control, lay, DEMO.racks);
    expect(spec.loops[2]).toMatchObject({ pvPoint: lay.racks[2].returnTempC, ffPoint: lay.racks[2].powerKw, rack: 2, action: "direct", sp: DEMO.control.returnTempSetpointC });
    expect(spec.loops[8]).toMatchObject({ pvPoint: lay.cdu.dpKpa, action: "reverse", sp: DEMO.control.dpSetpointKpa });
    expect(spec.points[lay.racks[1].leaks[1]]).toMatchObject({ kind: "leak", rack: 1 });
    expect(defaultSetpoints(DEMO.control, lay)).toEqual([...new Array<number>(8).fill(45), 120]);
  });
});

describe("pod wiring", () => {
  const samples: [number, number, number][] = [];
  const sink = { writeSample: (i: number, v: number, t: number) => samples.push([i, v, t]) };

  it("routes a good sample to its point, an invalid one as NaN now, and a communication failure not at all", () => {
    const w = new PodWiring(DEMO, lay, { writeCaps: true });
    samples.length = 0;
    w.routeSample(point("rack-3.returnTempC", 44.5, "good", 100), sink, 500);
    w.routeSample(point("rack-3.flowLpm", 12, "invalid", 100), sink, 500);
    for (const q of ["timeout", "disconnected", "offline", "exception", "corrupt", "stale"] as const) w.routeSample(point("rack-3.powerKw", 50, q), sink, 500);
    w.routeSample(point("cdu.status", 1), sink, 500); // not wired to the hot path
    expect(samples).toEqual([
      [lay.racks[2].returnTempC, 44.5, 100],
      [lay.racks[2].flowLpm, NaN, 500],
    ]);
  });

  it("routes each rack's closed limit switches to the isolation proof; a rack without them is proven by flow alone", () => {
    const pod = demoAgentConfig((d) => {
      const r1 = (d.racks as { points: Record<string, unknown> }[])[0].points;
      delete r1.supplyIsolationClosedLimit;
      delete r1.returnIsolationClosedLimit;
    });
    const l = podLayout(pod);
    expect(l.racks[0].supplyClosedLimit).toBeUndefined();
    expect(l.racks[0].returnClosedLimit).toBeUndefined();
    const spec = podBankSpec(pod.control, l, pod.racks);
    expect(spec.racks[0]).toMatchObject({ supplyClosedPoint: undefined, returnClosedPoint: undefined });
    expect(spec.racks[1]).toMatchObject({ supplyClosedPoint: l.racks[1].supplyClosedLimit, returnClosedPoint: l.racks[1].returnClosedLimit });
    expect(spec.points[l.racks[1].returnClosedLimit ?? -1]).toMatchObject({ min: 0, max: 1, staleMs: pod.control.points.limitSwitch.staleMs });
    // a recording names each slot by the point that feeds it, in the layout's order
    const ids = bankPointIds(pod);
    expect(ids).toHaveLength(l.points);
    expect(ids[l.racks[1].supplyClosedLimit ?? -1]).toBe(pod.racks[1].points.supplyIsolationClosedLimit);
    const w = new PodWiring(pod, l, { writeCaps: true });
    samples.length = 0;
    w.routeSample(point("rack-2.returnIsoClosedLimit", 1, "good", 100), sink, 500);
    w.routeSample(point("rack-1.returnIsoClosedLimit", 1, "good", 100), sink, 500); // rack-1's is not wired
    expect(samples).toEqual([[l.racks[1].returnClosedLimit, 1, 100]]);
  });

  it("says when a leak input changed, so the caller ticks at once; an unchanged one or an analog input does not", () => {
    const w = new PodWiring(DEMO, lay, { writeCaps: true });
    expect(w.routeSample(point("rack-1.leakState", 0), sink, 0)).toBe(true); // first reading
    expect(w.routeSample(point("rack-1.leakState", 0), sink, 0)).toBe(false);
    expect(w.routeSample(point("rack-1.leakState", 1), sink, 0)).toBe(true);
    expect(w.routeSample(point("rack-1.leakState", 1, "invalid"), sink, 0)).toBe(true); // unreadable: NaN
    expect(w.routeSample(point("rack-1.returnTempC", 50), sink, 0)).toBe(false);
    expect(w.isLeakInput("rack-2.status")).toBe(true);
  });

  const outputs = (over: Partial<Record<keyof PodOutputs, number[]>> = {}): PodOutputs => ({
    loopOut: over.loopOut ?? [...new Array<number>(8).fill(55.55), 72.04],
    rackSupplyOpen: over.rackSupplyOpen ?? new Array<number>(8).fill(1),
    rackReturnOpen: over.rackReturnOpen ?? new Array<number>(8).fill(1),
  });

  it("writes every isolation valve before any other output, then each rack's valve, power-off and cap, then the pump", () => {
    const w = new PodWiring(DEMO, lay, { writeCaps: true });
    const writes: [string, number][] = [];
    const d = { ...w.initialDecisions(), pumpEnable: false };
    d.powerCapsKw[3] = 87.26;
    d.rackPowerOff[3] = true;
    w.writeActuators(outputs({ rackSupplyOpen: [1, 1, 0, 1, 1, 1, 1, 1], rackReturnOpen: [1, 1, 0, 1, 1, 1, 1, 1] }), d, { setOutput: (id, v) => writes.push([id, v]) });
    const firstOther = writes.findIndex(([id]) => !id.endsWith("IsolationOpen"));
    expect(firstOther).toBe(16);
    expect(writes.slice(4, 6)).toEqual([
      ["rack-3.supplyIsolationOpen", 0],
      ["rack-3.returnIsolationOpen", 0],
    ]);
    // commands in tenths of a unit
    expect(writes).toContainEqual(["rack-1.valveCommandPct", 55.6]);
    expect(writes).toContainEqual(["rack-4.powerCapKw", 87.3]);
    expect(writes).toContainEqual(["rack-4.powerOff", 1]);
    // the lead at the loop's speed, the standby stopped; the escalation's stop takes both
    expect(writes.slice(-4)).toEqual([
      ["cdu.pumpSpeedCommandPct", 72],
      ["cdu.pumpEnable", 0],
      ["cdu.pump2SpeedCommandPct", 0],
      ["cdu.pump2Enable", 0],
    ]);
    writes.length = 0;
    w.writeActuators(outputs(), { ...d, pumpEnable: true, pumpRun: [false, true], pumpLead: 1 }, { setOutput: (id, v) => writes.push([id, v]) });
    expect(writes.slice(-4)).toEqual([
      ["cdu.pumpSpeedCommandPct", 0],
      ["cdu.pumpEnable", 0],
      ["cdu.pump2SpeedCommandPct", 72],
      ["cdu.pump2Enable", 1],
    ]);
  });

  it("writes no cap with writeCaps off, and skips a value that is not finite", () => {
    const w = new PodWiring(DEMO, lay, { writeCaps: false });
    const writes: string[] = [];
    w.writeActuators(outputs({ loopOut: [NaN, ...new Array<number>(7).fill(50), 60] }), w.initialDecisions(), { setOutput: (id) => writes.push(id) });
    expect(writes.some((id) => id.endsWith("powerCapKw"))).toBe(false);
    expect(writes).not.toContain("rack-1.valveCommandPct");
    expect(writes).toContain("rack-2.valveCommandPct");
  });

  it("couples power to coolant: an isolated rack is powered off (the default) or held to its no-coolant cap, whatever its budget", () => {
    const pod = { ...DEMO, racks: DEMO.racks.map((r, i) => (i === 1 ? { ...r, noCoolant: { ...r.noCoolant, action: "cap" as const, capKw: 12 } } : r)) };
    const w = new PodWiring(pod, lay, { writeCaps: true });
    const d = w.initialDecisions();
    const wet = outputs({ rackSupplyOpen: [0, 1, 1, 1, 1, 1, 1, 1], rackReturnOpen: [1, 0, 1, 1, 1, 1, 1, 1] });
    expect(w.powerCommand(wet, d, 0)).toEqual({ powerOff: true, capKw: 120, writeCap: true }); // supply closed: power-off
    expect(w.powerCommand(wet, d, 1)).toEqual({ powerOff: false, capKw: 12, writeCap: true }); // return closed: the no-coolant cap
    expect(w.powerCommand(wet, d, 2)).toEqual({ powerOff: false, capKw: 120, writeCap: true }); // in service
    const writes: [string, number][] = [];
    w.writeActuators(wet, d, { setOutput: (id, v) => writes.push([id, v]) });
    // the power commands follow the isolation valves in the same pass, before any valve
    const firstValve = writes.findIndex(([id]) => id.endsWith("valveCommandPct"));
    expect(writes.findIndex(([id, v]) => id === "rack-1.powerOff" && v === 1)).toBeLessThan(firstValve);
    expect(writes).toContainEqual(["rack-2.powerCapKw", 12]);
    // with writeCaps off a rack that couples by cap still has its cap written: its rating in service, the limit isolated
    const noBudget = new PodWiring(pod, lay, { writeCaps: false });
    expect(noBudget.powerCommand(wet, d, 1)).toEqual({ powerOff: false, capKw: 12, writeCap: true });
    expect(noBudget.powerCommand(outputs(), d, 1)).toEqual({ powerOff: false, capKw: 120, writeCap: true });
    expect(noBudget.powerCommand(outputs(), d, 0).writeCap).toBe(false);
  });

  it("reports a cap only where one is written: null for a rack with no cap output, or with writeCaps off", () => {
    const pod = { ...DEMO, racks: DEMO.racks.map((r, i) => (i === 2 ? { ...r, outputs: { ...r.outputs, powerCap: undefined } } : r)) };
    const view = (writeCaps: boolean): ReturnType<typeof rackStatuses> => {
      const w = new PodWiring(pod, lay, { writeCaps });
      const d = w.initialDecisions();
      const o = { ...outputs(), loopStatus: new Array<number>(9).fill(0), rackState: new Array<number>(8).fill(0), rackStatus: new Array<number>(8).fill(0) };
      return rackStatuses(pod, lay, { outputs: o, decisions: d, power: (i) => w.powerCommand(o, d, i), value: () => NaN, setpoints: defaultSetpoints(pod.control, lay), manualIsolate: new Array<number>(8).fill(0) });
    };
    expect(view(true)[1].powerCapKw).toBe(120);
    expect(view(true)[2].powerCapKw).toBeNull();
    expect(view(false)[1].powerCapKw).toBeNull();
  });

  it("words a rack's leak sensors as their fault is (not read, read unusable, cable), and reads the CDU's own points where configured", () => {
    const w = new PodWiring(DEMO, lay, { writeCaps: true });
    const d = w.initialDecisions();
    const o = { ...outputs(), loopStatus: new Array<number>(9).fill(0), rackState: new Array<number>(8).fill(0), rackStatus: new Array<number>(8).fill(0) };
    const points = new Map<string, Pick<Point, "value" | "quality">>();
    const inputs = { outputs: o, decisions: d, power: (i: number) => w.powerCommand(o, d, i), setpoints: defaultSetpoints(DEMO.control, lay), manualIsolate: new Array<number>(8).fill(0) };
    const value = (id: string): number | null => (points.get(id)?.quality === "good" ? points.get(id)!.value : null);
    const sensorOf = (rack: number): string => rackStatuses(DEMO, lay, { ...inputs, value, quality: (id) => points.get(id)?.quality }).at(rack)!.leakSensor;
    const [leak, ...others] = DEMO.racks[1].points.leak;
    expect(sensorOf(1)).toBe("comms fault"); // never read: not arrived
    for (const id of others) points.set(id, { value: 0, quality: "good" });
    points.set(leak, { value: 0, quality: "good" });
    expect(sensorOf(1)).toBe("ok");
    points.set(leak, { value: L.LEAK_CABLE_FAULT, quality: "good" });
    expect(sensorOf(1)).toBe("cable fault");
    for (const q of ["timeout", "offline", "stale", "disconnected"] as const) {
      points.set(leak, { value: 0, quality: q });
      expect(sensorOf(1)).toBe("comms fault");
    }
    points.set(leak, { value: 7, quality: "invalid" });
    expect(sensorOf(1)).toBe("no reading");
    // the CDU: null where no point is configured (the demo config names none of the three)
    const cdu = { ...DEMO.cdu, points: { ...DEMO.cdu.points, returnTempC: "cdu.returnTempC", reservoirPct: "cdu.reservoirPct" } };
    points.set("cdu.returnTempC", { value: 41.5, quality: "good" });
    points.set("cdu.reservoirPct", { value: 80, quality: "stale" });
    expect(cduStatus({ cdu }, { value })).toEqual({ supplyTempC: null, returnTempC: 41.5, totalFlowLpm: null, reservoirPct: null });
  });

  it("drives each control actuator to its declared shutdown value for a shutdown, and leaves isolation valves alone", () => {
    const w = new PodWiring(DEMO, lay, { writeCaps: true });
    const safe = w.safeWrites(outputs(), DEMO.control);
    expect(safe).toHaveLength(10);
    expect(safe[0]).toEqual({ id: "rack-1.valveCommandPct", value: DEMO.control.rackLoop.outMax }); // fail open
    expect(safe[8]).toEqual({ id: "cdu.pumpSpeedCommandPct", value: 80 }); // fixed 80
    expect(safe[9]).toEqual({ id: "cdu.pump2SpeedCommandPct", value: 0 }); // standing by: stays stopped
    // the pump that runs is the one that gets the shutdown speed
    expect(w.safeWrites(outputs(), DEMO.control, [false, true]).slice(8)).toEqual([
      { id: "cdu.pumpSpeedCommandPct", value: 0 },
      { id: "cdu.pump2SpeedCommandPct", value: 80 },
    ]);
    expect(safe.some((x) => x.id.includes("Isolation"))).toBe(false);
    expect(safeValue("hold", 10, 100, NaN)).toBe(100); // hold with nothing to hold: the open end
    expect(safeValue("closed", 10, 100, 50)).toBe(10);
    expect(safeValue({ fixed: 120 }, 10, 100, 50)).toBe(100);
  });
});

describe("status words", () => {
  it("decodes the hot path's bits into the words alarms and the status view use", () => {
    expect(failsafeReasons(L.LS_PV_BAD | L.LS_SP_INVALID)).toBe("PV input bad, setpoint invalid");
    expect(qualityWords(L.Q_STALE | L.Q_RANGE)).toBe("out of range, stale");
    expect(isolationState(L.RACK_ISOLATED)).toBe("Isolated");
    expect(isolationState(99)).toBe("Normal");
    expect(leakState(L.RACK_NORMAL, 0)).toBe("OK");
    expect(leakState(L.RACK_NORMAL, L.RS_LEAK_SENSOR_FAULT)).toBe("Warning");
    expect(leakState(L.RACK_NORMAL, L.RS_LEAK_WET)).toBe("Critical");
    expect(leakState(L.RACK_ISOLATED, 0)).toBe("Critical");
  });
});

it("the demo config validates with its leak rope patch (guards the fixtures above)", () => {
  expect(() => validateAgentConfig(JSON.parse(JSON.stringify(DEMO)) as unknown)).not.toThrow();
});

describe("fail-safe per actuator per fault class", () => {
  type RackData = { failSafe?: object; outputs: Record<string, string> };
  const OWN = { safeOnSensorFault: "hold", safeOnShutdown: "closed", safeOnLeaseLoss: { fixed: 35 }, isolationOnLeaseLoss: "open" };
  const pod = demoAgentConfig((d) => ((d.racks as RackData[])[1].failSafe = OWN));

  it("takes each rack's own settings over its kind's, into the bank, the shutdown writes and the devices' fail positions", () => {
    const spec = podBankSpec(pod.control, podLayout(pod), pod.racks);
    expect(spec.loops[0]).toMatchObject({ safeOnLeak: "closed", safeOnSensorFault: "open" }); // the kind's
    expect(spec.loops[1]).toMatchObject({ safeOnLeak: "closed", safeOnSensorFault: "hold" }); // rack-2's own
    const w = new PodWiring(pod, podLayout(pod), { writeCaps: true });
    const shutdown = Object.fromEntries(w.safeWrites(undefined, pod.control).map((x) => [x.id, x.value]));
    expect(shutdown).toMatchObject({ "rack-1.valveCommandPct": 100, "rack-2.valveCommandPct": pod.control.rackLoop.outMin, "cdu.pumpSpeedCommandPct": 80 });
    const lease = Object.fromEntries(leaseFailWrites(pod).map((x) => [x.id, x.value]));
    expect(lease).toEqual({
      ...Object.fromEntries(pod.racks.flatMap((r) => [[`${r.name}.failValvePct`, 100], [`${r.name}.failIsolationOpen`, 0]])),
      "rack-2.failValvePct": 35,
      "rack-2.failIsolationOpen": 1,
      "cdu.failSpeedPct": 80,
    });
    // the actuator pass carries them to the devices
    const writes = new Map<string, number>();
    const running = { loopOut: new Array<number>(9).fill(50), rackSupplyOpen: new Array<number>(8).fill(1), rackReturnOpen: new Array<number>(8).fill(1) };
    w.writeActuators(running, w.initialDecisions(), { setOutput: (id, v) => writes.set(id, v) }, leaseFailWrites(pod));
    expect(writes.get("rack-2.failValvePct")).toBe(35);
    expect(writes.get("cdu.failSpeedPct")).toBe(80);
  });

  it("states every actuator's behaviour in every class, saying which fail positions are written and which are the device's own", () => {
    const rows = failSafeMatrix(pod, pod.supervisor.escalation);
    // per rack: the control valve, the isolation valves, the power; then the pump's speed and enable
    expect(rows.map((r) => r.actuator)).toEqual([...pod.racks.flatMap((r) => [`${r.name} control valve`, `${r.name} isolation valves`, `${r.name} power`]), "CDU pump-1 speed", "CDU pump-1 enable", "CDU pump-2 speed", "CDU pump-2 enable"]);
    const valve2 = rows.find((r) => r.actuator === "rack-2 control valve")!;
    expect(valve2.behaviour).toEqual({
      leak: "closed (10 %)",
      badInput: "hold its last output while its return temperature or power reading is bad",
      commsLoss: "35 % (written to `rack-2.failValvePct`)",
      shutdown: "closed (10 %)",
      agentDeath: "35 % (written to `rack-2.failValvePct`)",
    });
    expect(rows.find((r) => r.actuator === "rack-2 isolation valves")!.behaviour.agentDeath).toBe("open (written to `rack-2.failIsolationOpen`)");
    expect(rows.find((r) => r.actuator === "rack-1 isolation valves")!.behaviour.agentDeath).toBe("hold (an isolated rack stays isolated) (written to `rack-1.failIsolationOpen`)");
    // without a fail-position output, the lease behaviour is the device's own, as declared
    const template = demoAgentConfig((d) => delete (d.racks as RackData[])[0].outputs.failValve);
    expect(failSafeMatrix(template, template.supervisor.escalation)[0].behaviour.agentDeath).toBe("open (100 %) (declared: the device's own setting)");
    for (const r of rows) for (const b of Object.values(r.behaviour)) expect(b.length).toBeGreaterThan(3);
  });

  it("refuses a fail position a device register cannot hold, and a fixed value outside the envelope, naming the key", () => {
    expect(() => demoAgentConfig((d) => ((d.racks as RackData[])[2].failSafe = { safeOnLeaseLoss: "hold" }))).toThrow(/racks\[2\]\.failSafe\.safeOnLeaseLoss: "hold" cannot be written to outputs\.failValve/);
    expect(() => demoAgentConfig((d) => ((d.racks as RackData[])[0].failSafe = { safeOnShutdown: { fixed: 5 } }))).toThrow(/racks\[0\]\.failSafe\.safeOnShutdown\.fixed: must be within control\.rackLoop \[outMin, outMax\]/);
    // "hold" is a fine declaration for a device podwarden does not write
    const declared = demoAgentConfig((d) => {
      const r = (d.racks as RackData[])[2];
      r.failSafe = { safeOnLeaseLoss: "hold" };
      delete r.outputs.failValve;
    });
    expect(failSafeProblems(declared)).toEqual([]);
    expect(failSafeProblems(pod)).toEqual([]);
  });
});
