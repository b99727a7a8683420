// Supervisor pieces in isolation: modes, leak escalation and setpoint leases (the power
// budget and the heat-balance suspects, pure, are in supervisor-rules.test.ts).
import { describe, expect, it } from "vitest";
import * as L from "../hotpath-as/assembly/layout.js";
import { COOLANT_KJ_PER_L_K } from "../pod/coolant.js";
import { LoopLeases } from "../agent/operator/loop-leases.js";
import { Supervisor, type SupervisorEvent, type SupervisorInputs } from "../agent/supervisor/supervisor.js";
import { loadAgentConfig } from "../agent/config/load.js";
import { podLayout } from "../pod/layout.js";

describe("setpoint leases", () => {
  it("expire back to the caller after their lease", () => {
    const s = new LoopLeases();
    s.set(2, 47, 1000, 0, "mc");
    expect(s.expire(999)).toEqual([]);
    expect(s.expire(1000)).toMatchObject([{ loop: 2, value: 47 }]);
    expect(s.get(2)).toBeUndefined();
  });
});

describe("supervisor", () => {
  const config = loadAgentConfig("configs/demo-pod.yaml").config;
  const supervisor = (emit: (e: SupervisorEvent) => void, now: () => number): Supervisor => new Supervisor(config.supervisor, config, podLayout(config), emit, now);
  const good = (value: number) => ({ value, good: true });
  type Rack = SupervisorInputs["racks"][number];
  const inputs = (over: Partial<SupervisorInputs> = {}): SupervisorInputs & { racks: Rack[] } => ({
    nowMs: 0,
    controlHealthy: true,
    recentTicks: { ticks: 10_000, overruns: 0, spanMs: 10_000 },
    loopStatus: new Array(9).fill(L.LS_AUTOMATIC),
    loopOut: new Array(9).fill(80),
    rackState: new Array(8).fill(L.RACK_NORMAL),
    rackStatus: new Array(8).fill(0),
    cduSupplyTempC: good(35),
    cduDpKpa: good(80),
    devices: [],
    ...over,
    racks: [...(over.racks ?? Array.from({ length: 8 }, (): Rack => ({ returnTempC: good(45), supplyTempC: good(35), flowLpm: good(100), powerKw: good((COOLANT_KJ_PER_L_K / 60) * 100 * 10), manualIsolate: false })))],
  });

  it.each<[string, { value: number; good: boolean }, { powerKw?: number; supplyC?: number }, string]>([
    ["with the CDU's supply reading", good(35), { powerKw: 2 }, "powerKw"],
    ["without one (no CDU supply sensor)", { value: NaN, good: false }, { powerKw: 2 }, "powerKw"],
    ["without one, a rack supply sensor 5 °C high against its peers", { value: NaN, good: false }, { supplyC: 5 }, "supplyTempC"],
  ])("raises heat-balance:<rack> once the disagreement outlasts its dwell, %s", (_what, cdu, lie, suspect) => {
    const clock = { t: 0 };
    const s = supervisor(() => undefined, () => clock.t);
    const lying = (): SupervisorInputs => {
      const x = inputs({ cduSupplyTempC: cdu });
      const r = x.racks[2];
      x.racks[2] = { ...r, powerKw: good((lie.powerKw ?? 1) * r.powerKw.value), supplyTempC: good(r.supplyTempC.value + (lie.supplyC ?? 0)) };
      return { ...x, nowMs: clock.t };
    };
    s.evaluate(lying());
    expect(s.alarms.get("heat-balance:rack-3")).toBeUndefined(); // not before the dwell
    clock.t = config.supervisor.heatBalance.dwellMs;
    s.evaluate(lying());
    expect(s.alarms.get("heat-balance:rack-3")).toMatchObject({ severity: "Warning", message: expect.stringContaining(`suspect sensor: ${suspect}`) as unknown });
  });

  it("runs, degrades on an alarm, and fails safe when the control loop stops", () => {
    const events: SupervisorEvent[] = [];
    const clock = { t: 0 };
    const s = supervisor((e) => events.push(e), () => clock.t);
    s.evaluate(inputs());
    expect(s.mode).toBe("Running");
    const hot = inputs();
    hot.racks[1] = { ...hot.racks[1], returnTempC: good(56) };
    s.evaluate(hot);
    expect(s.mode).toBe("Degraded");
    expect(s.alarms.get("overtemp:rack-2")?.severity).toBe("Critical");
    s.evaluate(inputs({ controlHealthy: false }));
    expect(s.mode).toBe("Failsafe");
    expect(events.filter((e) => e.type === "mode.changed").map((e) => (e as { to: string }).to)).toEqual(["Running", "Degraded", "Failsafe"]);
  });

  it("says an over-temperature alarm's reading as it is: above its threshold, or back under it inside the hysteresis band", () => {
    const s = supervisor(() => undefined, () => 0);
    const at = (c: number): ReturnType<typeof inputs> => {
      const i = inputs();
      i.racks[1] = { ...i.racks[1], returnTempC: good(c) };
      return i;
    };
    s.evaluate(at(51));
    expect(s.alarms.get("overtemp:rack-2")?.message).toBe("rack-2 return temperature 51.0 °C, above 50 °C");
    // 49.5 °C: under the threshold, inside the band (1 °C): the alarm holds, and says why (it read "49.5 °C above 50 °C")
    s.evaluate(at(49.5));
    expect(s.alarms.get("overtemp:rack-2")).toMatchObject({ conditionActive: true, message: "rack-2 return temperature 49.5 °C, back under 50 °C; the alarm clears under 49 °C" });
  });

  it("raises power:budget after alarmAfterMs of constraint and holds it for alarmHoldMs after the last, so neither a start nor a draw about its share flaps it (and the pod's mode with it)", () => {
    const clock = { t: 0 };
    const modes: string[] = [];
    const s = supervisor((e) => (e.type === "mode.changed" ? modes.push(e.to) : undefined), () => clock.t);
    const hold = config.supervisor.powerBudget.alarmHoldMs;
    const after = config.supervisor.powerBudget.alarmAfterMs;
    const minSum = config.racks.reduce((a, r) => a + r.minPowerKw, 0);
    const at = (t: number): SupervisorInputs => {
      clock.t = t;
      return { ...inputs(), nowMs: t };
    };
    s.evaluate(at(0));
    expect(s.alarms.get("power:budget")).toBeUndefined();
    s.setPowerBudget(minSum + 1); // every rack's draw is above its share
    s.evaluate(at(1000));
    s.setPowerBudget(null); // a moment's constraint, as at a start before the power is read: nothing raised
    s.evaluate(at(1500));
    s.setPowerBudget(minSum + 1);
    s.evaluate(at(2000));
    s.evaluate(at(2000 + after - 1));
    expect(s.alarms.get("power:budget")).toBeUndefined();
    s.evaluate(at(2000 + after));
    expect(s.alarms.get("power:budget")).toMatchObject({ conditionActive: true, message: `pod power budget ${minSum + 1} kW constrains rack caps` });
    s.setPowerBudget(null); // no longer constrained, as a rack's draw falls under its share
    s.evaluate(at(2000 + after + 1000));
    expect(s.alarms.get("power:budget")?.conditionActive).toBe(true);
    s.setPowerBudget(minSum + 1); // and over it again, as in the demo every 15-40 s
    s.evaluate(at(30_000));
    s.setPowerBudget(null);
    s.evaluate(at(30_000 + hold - 1));
    expect(s.alarms.get("power:budget")).toMatchObject({ conditionActive: true, message: expect.stringMatching(/constrained rack caps within the last/) as unknown });
    s.evaluate(at(30_000 + hold));
    expect(s.alarms.get("power:budget")?.conditionActive).toBe(false);
    s.evaluate(at(30_000 + hold + config.supervisor.alarmClearDwellMs));
    expect(s.alarms.get("power:budget")).toBeUndefined();
    expect(modes).toEqual(["Running", "Degraded", "Running"]); // one Degraded spell, not one per swing
  });

  it("stays Degraded while any alarm is listed, including one waiting out its clear dwell, then runs", () => {
    const modes: string[] = [];
    const clock = { t: 0 };
    const s = supervisor((e) => (e.type === "mode.changed" ? modes.push(e.to) : undefined), () => clock.t);
    const warm = inputs();
    warm.racks[1] = { ...warm.racks[1], returnTempC: good(51) }; // a Warning
    s.evaluate(warm);
    expect(s.mode).toBe("Degraded");
    clock.t = 100;
    s.evaluate({ ...inputs(), nowMs: clock.t }); // the condition has gone, the alarm has not
    expect(s.alarms.get("overtemp:rack-2")?.severity).toBe("Warning");
    expect(s.mode).toBe("Degraded");
    clock.t = 100 + config.supervisor.alarmClearDwellMs;
    s.evaluate({ ...inputs(), nowMs: clock.t });
    expect(s.alarms.get("overtemp:rack-2")).toBeUndefined();
    expect(s.mode).toBe("Running");
    expect(modes).toEqual(["Degraded", "Running"]);
  });

  it("in maintenance, suppresses only the Warnings work causes, and never hides Degraded, a Critical or a leak", () => {
    const events: SupervisorEvent[] = [];
    const s = supervisor((e) => events.push(e), () => 0);
    s.evaluate(inputs());
    expect(s.mode).toBe("Running");
    const work = inputs({ devices: [{ name: "rack-4", ok: false, why: "offline" }] });
    work.racks[1] = { ...work.racks[1], returnTempC: good(51) }; // overtemp Warning
    (work.rackState as number[])[5] = L.RACK_ISOLATED; // a leak
    (work.rackStatus as number[])[6] = L.RS_LEAK_SENSOR_FAULT; // a leak sensor's cable unplugged
    s.evaluate(work);
    expect(s.alarms.get("overtemp:rack-2")).toMatchObject({ severity: "Warning", suppressed: false });
    s.setMaintenance(true);
    s.setMaintenance(true); // said once
    expect(events.filter((e) => e.type === "maintenance.changed")).toEqual([{ type: "maintenance.changed", on: true }]);
    s.evaluate(work);
    // the mode keeps telling the truth; maintenance shows beside it
    expect(s.mode).toBe("Degraded");
    expect(s.maintenance).toBe(true);
    const flagged = Object.fromEntries(s.alarms.active().map((a) => [a.id, a.suppressed]));
    expect(flagged).toMatchObject({ "overtemp:rack-2": true, "device:rack-4": true, "leak:rack-6": false, "leak-sensor:rack-7": false });
    // an alarm raised during maintenance is flagged from its raise event
    const more = inputs({ devices: [{ name: "rack-4", ok: false, why: "offline" }], recentTicks: { ticks: 10_000, overruns: 500, spanMs: 10_000 } });
    more.racks[1] = work.racks[1];
    (more.rackState as number[])[5] = L.RACK_ISOLATED;
    (more.rackStatus as number[])[6] = L.RS_LEAK_SENSOR_FAULT;
    s.evaluate(more);
    const raised = events.find((e) => e.type === "alarm.raised" && e.alarm.id === "control:overrun");
    expect(raised).toMatchObject({ alarm: { suppressed: true } });
    // a Warning that escalates to Critical is suppressed no longer
    more.racks[1] = { ...more.racks[1], returnTempC: good(56) };
    s.evaluate(more);
    expect(s.alarms.get("overtemp:rack-2")).toMatchObject({ severity: "Critical", suppressed: false });
    // ending maintenance clears every flag at once
    s.setMaintenance(false);
    expect(s.alarms.active().filter((a) => a.suppressed)).toEqual([]);
    expect(events.filter((e) => e.type === "maintenance.changed").map((e) => (e as { on: boolean }).on)).toEqual([true, false]);
  });

  it("raises control:overrun for a share of late ticks over the window, never for a single late tick", () => {
    const modes: string[] = [];
    const s = supervisor((e) => (e.type === "mode.changed" ? modes.push(e.to) : undefined), () => 0);
    s.evaluate(inputs());
    // one late tick in 10 000: no alarm, no mode change (the retained state does not flip)
    s.evaluate(inputs({ recentTicks: { ticks: 10_000, overruns: 1, spanMs: 10_000 } }));
    expect(s.alarms.get("control:overrun")).toBeUndefined();
    // 1 % is the limit; above it the pod says its control timing is not kept
    s.evaluate(inputs({ recentTicks: { ticks: 10_000, overruns: 100, spanMs: 10_000 } }));
    expect(s.alarms.get("control:overrun")).toBeUndefined();
    s.evaluate(inputs({ recentTicks: { ticks: 10_000, overruns: 101, spanMs: 10_000 } }));
    expect(s.alarms.get("control:overrun")?.message).toMatch(/101 of 10000 in the last 10\.0 s/);
    expect(modes).toEqual(["Running", "Degraded"]);
  });

  it("names the bad input of a loop in fail-safe, and why: a rack loop's PV, the pump loop's PV", () => {
    const s = supervisor(() => undefined, () => 0);
    s.evaluate(inputs()); // out of Starting, whose input alarms wait
    const i = inputs({ loopStatus: [...new Array<number>(8).fill(L.LS_AUTOMATIC), L.LS_INTERLOCK_FAILSAFE | L.LS_PV_BAD], cduDpKpa: { value: NaN, good: false, why: "cdu.dpKpa: stale, timeout" } });
    (i.loopStatus as number[])[2] = L.LS_INTERLOCK_FAILSAFE | L.LS_PV_BAD | L.LS_FF_BAD;
    i.racks[2] = { ...i.racks[2], returnTempC: { value: NaN, good: false, why: "rack-3.returnTempTx: no usable value, invalid (loop current 0.00 mA)" }, powerKw: { value: 10, good: false, why: "rack-3.powerKw: out of range" } };
    s.evaluate(i);
    expect(s.alarms.get("failsafe:rack-3.valve")?.message).toBe("rack-3.valve in fail-safe: PV input bad (rack-3.returnTempTx: no usable value, invalid (loop current 0.00 mA))");
    // a loop in fail-safe is not also "degraded": the fail-safe says it all
    expect(s.alarms.get("degraded:rack-3.valve")).toBeUndefined();
    expect(s.alarms.get("failsafe:cdu.pump")?.message).toBe("cdu.pump in fail-safe: PV input bad (cdu.dpKpa: stale, timeout)");
    // a reason that is not an input (here the setpoint) names none
    const sp = inputs({ loopStatus: [L.LS_INTERLOCK_FAILSAFE | L.LS_SP_INVALID, ...new Array<number>(8).fill(L.LS_AUTOMATIC)] });
    s.evaluate(sp);
    expect(s.alarms.get("failsafe:rack-1.valve")?.message).toBe("rack-1.valve in fail-safe: setpoint invalid");
  });

  it("raises a Warning, not a fail-safe, for a loop that lost a secondary input and kept control: its feed-forward, its minimum-flow floor (not while Starting)", () => {
    const s = supervisor(() => undefined, () => 0);
    const i = inputs();
    i.loopStatus = i.loopStatus.map((st, l) => (l === 3 ? L.LS_AUTOMATIC | L.LS_FF_BAD : st));
    s.evaluate(i); // Starting: its inputs still arriving
    expect(s.alarms.get("degraded:rack-4.valve")).toBeUndefined();
    i.loopStatus = i.loopStatus.map((st, l) => (l === 3 ? L.LS_AUTOMATIC | L.LS_FF_BAD : l === 4 ? L.LS_AUTOMATIC | L.LS_FLOW_FLOOR_LOST : st));
    i.racks[3] = { ...i.racks[3], powerKw: { value: 40, good: false, why: "rack-4.powerKw: stale" } };
    i.racks[4] = { ...i.racks[4], flowLpm: { value: 0, good: false, why: "rack-5.flowLpm: out of range" } };
    s.evaluate(i);
    expect(s.alarms.get("failsafe:rack-4.valve")).toBeUndefined();
    expect(s.alarms.get("degraded:rack-4.valve")).toMatchObject({ severity: "Warning", message: "rack-4.valve in control, degraded: feed-forward dropped, PID on its PV alone (rack-4.powerKw: stale)" });
    expect(s.alarms.get("degraded:rack-5.valve")?.message).toBe("rack-5.valve in control, degraded: minimum-flow floor dropped, the valve may close to outMin (rack-5.flowLpm: out of range)");
    expect(s.mode).toBe("Degraded");
  });

  it("keeps an over-temperature tier until the temperature falls below it by the hysteresis", () => {
    const s = supervisor(() => undefined, () => 0);
    const at = (t: number): string | undefined => {
      const i = inputs();
      i.racks[0] = { ...i.racks[0], returnTempC: good(t) };
      s.evaluate(i);
      return s.alarms.get("overtemp:rack-1")?.severity;
    };
    expect(at(50.5)).toBe("Warning");
    expect(at(49.5)).toBe("Warning"); // within the 1 °C hysteresis
    expect(at(55.2)).toBe("Critical");
    expect(at(54.5)).toBe("Critical");
    expect(at(53.5)).toBe("Warning");
  });

  it("escalates an unproven isolation to a rack power-off request, and only for that rack", () => {
    const events: SupervisorEvent[] = [];
    const s = supervisor((e) => events.push(e), () => 0);
    const i = inputs();
    (i.rackState as number[])[3] = L.RACK_ESCALATED;
    const d = s.evaluate(i);
    expect(d.rackPowerOff).toEqual([false, false, false, true, false, false, false, false]);
    expect(d.pumpEnable).toBe(true); // pump stop is off by default: it would stop cooling for every rack
    expect(s.alarms.get("isolation-failed:rack-4")?.severity).toBe("Critical");
    expect(events.some((e) => e.type === "leak.escalated" && e.rack === "rack-4")).toBe(true);
  });

  it("raises flow-meter:<rack> for a flow meter with no good reading, Critical while the rack isolates on it, and says so when the isolation goes unproven", () => {
    const s = supervisor(() => undefined, () => 0);
    s.evaluate(inputs());
    const bad = { value: NaN, good: false, why: "rack-4.flowLpm: no usable value, invalid" };
    const i = inputs();
    i.racks[3] = { ...i.racks[3], flowLpm: bad };
    s.evaluate(i);
    expect(s.alarms.get("flow-meter:rack-4")).toMatchObject({ severity: "Warning", message: expect.stringContaining("rack-4.flowLpm: no usable value, invalid") as unknown });
    expect(s.alarms.get("flow-meter:rack-4")?.message).toMatch(/cannot be proven/);
    (i.rackState as number[])[3] = L.RACK_ISOLATING;
    s.evaluate(i);
    expect(s.alarms.get("flow-meter:rack-4")?.severity).toBe("Critical");
    (i.rackState as number[])[3] = L.RACK_ESCALATED;
    s.evaluate(i);
    // not "flow has not stopped": nobody knows whether it has
    expect(s.alarms.get("isolation-failed:rack-4")?.message).toMatch(/not proven: the flow meter has no good reading \(rack-4\.flowLpm/);
    // a flow that is read and has not stopped says that
    const s2 = supervisor(() => undefined, () => 0);
    const j = inputs();
    (j.rackState as number[])[3] = L.RACK_ESCALATED;
    s2.evaluate(j);
    expect(s2.alarms.get("isolation-failed:rack-4")?.message).toMatch(/not proven: flow has not stopped/);
    expect(s2.alarms.get("flow-meter:rack-4")).toBeUndefined();
  });

  it("proves an operator's isolation like a leak's: isolation-failed (Critical, no escalation) when flow has not stopped by the deadline, and a flow meter it relies on is Critical", () => {
    const deadline = config.control.isolation.deadlineMs;
    const clock = { t: 0 };
    const s = supervisor(() => undefined, () => clock.t);
    const at = (nowMs: number, flow: { value: number; good: boolean; why?: string }, limitsClosed = true): SupervisorInputs => {
      clock.t = nowMs;
      const i = inputs({ nowMs });
      i.racks[4] = { ...i.racks[4], flowLpm: flow, manualIsolate: true, noCoolant: true, powerKw: good(0) };
      (i.rackStatus as number[])[4] = L.RS_MANUAL_ISOLATE | L.RS_VALVES_CLOSED | (limitsClosed ? L.RS_LIMITS_CLOSED : 0);
      return i;
    };
    s.evaluate(at(0, good(60))); // valves still closing
    s.evaluate(at(deadline - 1, good(20)));
    expect(s.alarms.get("isolation-failed:rack-5")).toBeUndefined();
    const d = s.evaluate(at(deadline, good(20)));
    expect(s.alarms.get("isolation-failed:rack-5")).toMatchObject({ severity: "Critical", message: expect.stringMatching(/operator isolation of rack-5 not proven after 15 s: flow has not stopped \(20\.0 L\/min\); do not open its lines/) as unknown });
    expect(d.rackPowerOff[4]).toBe(false); // no leak: nothing escalates, the wiring's no-coolant power-off is what cuts power
    // proven once flow is below isolatedFlowMaxLpm; the alarm then clears after its dwell
    s.evaluate(at(deadline + 1, good(0)));
    s.evaluate(at(deadline + 1 + config.supervisor.alarmClearDwellMs, good(0)));
    expect(s.alarms.get("isolation-failed:rack-5")).toBeUndefined();
    // a flow meter with no good reading leaves the isolation unproven, and its alarm is Critical
    const bad = { value: NaN, good: false, why: "rack-5.flowLpm: stale" };
    s.evaluate(at(deadline + 2 + config.supervisor.alarmClearDwellMs, bad));
    expect(s.alarms.get("flow-meter:rack-5")?.severity).toBe("Critical");
    expect(s.alarms.get("isolation-failed:rack-5")?.message).toMatch(/not proven after 15 s: the flow meter has no good reading \(rack-5\.flowLpm: stale\)/);
    // no flow, but a valve off its closed limit switch (seized open, the control valve passing little): not proven either, and it says so
    s.evaluate(at(deadline + 3 + config.supervisor.alarmClearDwellMs, good(0), false));
    expect(s.alarms.get("isolation-failed:rack-5")?.message).toMatch(/not proven after 15 s: an isolation valve is not at its closed limit switch/);
    // a rack in service is not proven at all
    const t = supervisor(() => undefined, () => 0);
    for (const nowMs of [0, 2 * deadline]) t.evaluate(inputs({ nowMs }));
    expect(t.alarms.get("isolation-failed:rack-5")).toBeUndefined();
  });

  it("holds the start's input alarms back while Starting, raises what is still wrong once it is not, and never holds back a leak", () => {
    const clock = { t: 0 };
    const events: SupervisorEvent[] = [];
    const s = supervisor((e) => events.push(e), () => clock.t);
    const nothingYet = (nowMs: number): SupervisorInputs => {
      clock.t = nowMs;
      const stale = { value: NaN, good: false, why: "stale" };
      const i = inputs({ nowMs, loopStatus: new Array(9).fill(L.LS_INTERLOCK_FAILSAFE | L.LS_PV_BAD), rackStatus: new Array(8).fill(L.RS_LEAK_SENSOR_FAULT), devices: [{ name: "rack-1", ok: false, why: "not connected yet" }] });
      i.racks.forEach((x, r) => (i.racks[r] = { ...x, flowLpm: stale, returnTempC: stale, powerKw: stale }));
      return i;
    };
    for (let t = 0; t < 30_000; t += 1000) s.evaluate(nothingYet(t));
    expect(s.mode).toBe("Starting");
    expect(events.filter((e) => e.type === "alarm.raised").map((e) => e.type === "alarm.raised" && e.alarm.id)).toEqual([]);
    // a leak while Starting is raised at once, and the flow meter its isolation needs with it
    const leak = nothingYet(30_000 - 500);
    (leak.rackState as number[])[2] = L.RACK_ISOLATING;
    s.evaluate(leak);
    expect(events.filter((e) => e.type === "alarm.raised").map((e) => e.type === "alarm.raised" && [e.alarm.id, e.alarm.severity])).toEqual([
      ["leak:rack-3", "Critical"],
      ["flow-meter:rack-3", "Critical"],
    ]);
    // after 30 s without its inputs the pod leaves Starting; what is still wrong is raised then
    s.evaluate(nothingYet(30_000));
    s.evaluate(nothingYet(30_100));
    expect(s.mode).toBe("Degraded");
    for (const id of ["failsafe:rack-1.valve", "failsafe:cdu.pump", "leak-sensor:rack-8", "flow-meter:rack-1", "device:rack-1"]) expect(s.alarms.get(id)).toBeDefined();
  });

  it("raises nothing at a start whose inputs arrive within seconds", () => {
    const events: SupervisorEvent[] = [];
    const s = supervisor((e) => events.push(e), () => 0);
    const first = inputs({ loopStatus: new Array(9).fill(L.LS_INTERLOCK_FAILSAFE | L.LS_PV_BAD), rackStatus: new Array(8).fill(L.RS_LEAK_SENSOR_FAULT) });
    s.evaluate(first);
    s.evaluate(inputs({ nowMs: 2000 }));
    s.evaluate(inputs({ nowMs: 2100 }));
    expect(s.mode).toBe("Running");
    expect(events.filter((e) => e.type === "alarm.raised")).toEqual([]);
  });

  it("holds a loss of flow until the flow is its deadband above the threshold: a flow hovering there raises it once", () => {
    const lf = config.supervisor.lossOfFlow;
    const raised: string[] = [];
    const t = supervisor((e) => e.type === "alarm.raised" && raised.push(e.alarm.id), () => 0);
    let now = 0;
    for (let k = 0; k < 20; k++) {
      const i = inputs({ nowMs: now });
      // 0.2 L/min either side of the threshold, each for longer than the delay and the clear dwell
      i.racks[0] = { ...i.racks[0], flowLpm: good(lf.minLpm + (k % 2 === 0 ? -0.2 : 0.2)) };
      for (let j = 0; j < 10; j++, now += 1000) t.evaluate({ ...i, nowMs: now });
    }
    expect(raised.filter((id) => id === "flow:rack-1")).toEqual(["flow:rack-1"]);
    expect(lf.deadbandLpm).toBeGreaterThan(0.2);
  });

  it("raises loss of flow only after its delay, and only for a rack in service", () => {
    const clock = { t: 0 };
    const s = supervisor(() => undefined, () => clock.t);
    const low = inputs();
    low.racks[0] = { ...low.racks[0], flowLpm: good(1) };
    s.evaluate({ ...low, nowMs: 0 });
    expect(s.alarms.get("flow:rack-1")).toBeUndefined();
    s.evaluate({ ...low, nowMs: 5000 });
    expect(s.alarms.get("flow:rack-1")?.severity).toBe("Critical");
    const isolated = inputs();
    isolated.racks[1] = { ...isolated.racks[1], flowLpm: good(0), manualIsolate: true };
    s.evaluate({ ...isolated, nowMs: 0 });
    s.evaluate({ ...isolated, nowMs: 10_000 });
    expect(s.alarms.get("flow:rack-2")).toBeUndefined();
  });

  it("raises no-coolant-power when an isolated rack still draws above its no-coolant limit after the delay, and not before or below it", () => {
    const s = supervisor(() => undefined, () => 0);
    const at = (nowMs: number, kw: number, noCoolant = true): string | undefined => {
      const i = inputs({ nowMs });
      i.racks[2] = { ...i.racks[2], powerKw: good(kw), flowLpm: good(0), noCoolant };
      s.evaluate(i);
      return s.alarms.get("no-coolant-power:rack-3")?.severity;
    };
    expect(at(0, 90)).toBeUndefined();
    expect(at(config.supervisor.noCoolantPower.delayMs - 1, 90)).toBeUndefined();
    expect(at(config.supervisor.noCoolantPower.delayMs, 90)).toBe("Critical");
    expect(s.alarms.get("no-coolant-power:rack-3")?.message).toMatch(/isolated but draws 90\.0 kW, above its no-coolant limit of 0 kW \(power-off\)/);
    // within the tolerance of the limit, or in service, no alarm
    const t = supervisor(() => undefined, () => 0);
    for (const nowMs of [0, 60_000]) {
      const i = inputs({ nowMs });
      i.racks[2] = { ...i.racks[2], powerKw: good(config.supervisor.noCoolantPower.toleranceKw), noCoolant: true };
      i.racks[3] = { ...i.racks[3], powerKw: good(90), noCoolant: false };
      t.evaluate(i);
    }
    expect(t.alarms.get("no-coolant-power:rack-3")).toBeUndefined();
    expect(t.alarms.get("no-coolant-power:rack-4")).toBeUndefined();
  });

  it("gives a reopened rack its power back only once its flow is proven back, and never on a flow meter with no good reading", () => {
    const s = supervisor(() => undefined, () => 0);
    const pending = (noCoolant: boolean, flow: { value: number; good: boolean; why?: string }): boolean => {
      const i = inputs();
      i.racks[2] = { ...i.racks[2], flowLpm: flow, noCoolant };
      return s.evaluate(i).coolantPending[2];
    };
    const minLpm = config.supervisor.lossOfFlow.minLpm;
    expect(pending(false, good(100))).toBe(false); // in service: nothing held
    expect(pending(true, good(0))).toBe(true); // isolated
    expect(pending(false, good(0))).toBe(true); // valves reopened, the flow not back yet
    expect(pending(false, good(minLpm - 0.1))).toBe(true);
    expect(pending(false, { value: NaN, good: false, why: "rack-3.flowLpm: stale" })).toBe(true); // unknown is not back
    expect(s.alarms.get("flow-meter:rack-3")).toMatchObject({ severity: "Critical", message: expect.stringMatching(/power waits at its no-coolant limit until its flow is seen/) as unknown });
    expect(pending(false, good(minLpm))).toBe(false); // proven back: the power follows
    expect(pending(false, good(0))).toBe(false); // a later low flow is a loss of flow, not a return
  });

  it("keeps the caps within the pod budget", () => {
    const s = supervisor(() => undefined, () => 0);
    const d = s.evaluate(inputs());
    expect(d.powerCapsKw.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(config.supervisor.powerBudget.podKw + 1e-6);
  });
});
