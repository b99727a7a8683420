// The supervisor's coolant-and-power rules on their own, pass by pass at chosen times: power that
// did not follow the coolant (no-coolant-power), power held back until the flow is proven
// (coolantPending), cap mode's thermal backstop, and the power pass's held alarms. Each bound is
// met exactly and missed by a little, so that a rule moved by one comparison fails here: they
// were first tested only through the whole agent, which left them open to such changes (the
// mutation run, docs/reliability.md).
import { describe, expect, it } from "vitest";
import { AlarmManager } from "../agent/supervisor/alarms.js";
import { NoCoolantWatch, type NoCoolantInputs } from "../agent/supervisor/no-coolant.js";
import { HeldCondition, PowerPass } from "../agent/supervisor/power-pass.js";
import type { Reading } from "../agent/supervisor/reading.js";
import { validateSupervisor } from "../agent/supervisor/schema.js";
import { demoAgentConfig } from "../cli/demo-config.js";
import type { RackConfig } from "../pod/config.js";

const demo = demoAgentConfig();
const s = validateSupervisor({});
const good = (value: number): Reading => ({ value, good: true });
const bad = (value = NaN): Reading => ({ value, good: false, why: "x: stale" });

/** rack-1 of the demo pod with its noCoolant section (and, optionally, without a power-off output) */
function rack(noCoolant: Partial<RackConfig["noCoolant"]>, powerOff = true): RackConfig {
  const r = demo.racks[0];
  const outputs = { ...r.outputs };
  if (!powerOff) delete outputs.powerOff;
  return { ...r, outputs, noCoolant: { ...r.noCoolant, ...noCoolant } };
}

function harness(): { alarms: AlarmManager; active: (id: string) => boolean; message: (id: string) => string } {
  const alarms = new AlarmManager(0, () => {}, () => 0);
  return {
    alarms,
    active: (id) => alarms.active().some((a) => a.id === id),
    message: (id) => alarms.get(id)?.message ?? "",
  };
}

const inputs = (x: Partial<NoCoolantInputs>): NoCoolantInputs => ({ returnTempC: good(35), flowLpm: good(40), powerKw: good(50), noCoolant: false, ...x });

describe("coolant and power together: the supervisor's half", () => {
  it("says from the start that a rack with no power output keeps its power without coolant, and no more than that", () => {
    const h = harness();
    const w = new NoCoolantWatch(1);
    w.update(0, rack({ action: "none" }), inputs({}), s, h.alarms, 0);
    expect(h.active("no-power-output:rack-1")).toBe(true);
    expect(h.message("no-power-output:rack-1")).toMatch(/rack-1 has no power output podwarden can reach \(racks\[\]\.noCoolant\.action: none\)/);
    const h2 = harness();
    new NoCoolantWatch(1).update(0, rack({ action: "power-off" }), inputs({}), s, h2.alarms, 0);
    expect(h2.alarms.active()).toEqual([]);
  });

  it("raises no-coolant-power once an isolated rack has drawn past its limit and tolerance for the whole delay, and not a pass before", () => {
    const { toleranceKw, delayMs } = s.noCoolantPower;
    const r = rack({ action: "cap", capKw: 10 });
    const over = 10 + toleranceKw + 0.1;
    const h = harness();
    const w = new NoCoolantWatch(1);
    w.update(0, r, inputs({ noCoolant: true, powerKw: good(over) }), s, h.alarms, 1000);
    w.update(0, r, inputs({ noCoolant: true, powerKw: good(over) }), s, h.alarms, 1000 + delayMs - 1);
    expect(h.active("no-coolant-power:rack-1")).toBe(false);
    w.update(0, r, inputs({ noCoolant: true, powerKw: good(over) }), s, h.alarms, 1000 + delayMs);
    expect(h.active("no-coolant-power:rack-1")).toBe(true);
    expect(h.message("no-coolant-power:rack-1")).toBe(`rack-1 is isolated but draws ${over.toFixed(1)} kW, above its no-coolant limit of 10 kW (cap): its power did not follow its coolant`);
  });

  it("counts the delay afresh after any pass the rack was not drawing: at its limit and tolerance exactly, unread, or not isolated", () => {
    const { toleranceKw, delayMs } = s.noCoolantPower;
    const r = rack({ action: "power-off" });
    for (const brk of [inputs({ noCoolant: true, powerKw: good(toleranceKw) }), inputs({ noCoolant: true, powerKw: bad(500) }), inputs({ noCoolant: false, powerKw: good(500) })]) {
      const h = harness();
      const w = new NoCoolantWatch(1);
      w.update(0, r, inputs({ noCoolant: true, powerKw: good(500) }), s, h.alarms, 0);
      w.update(0, r, brk, s, h.alarms, delayMs / 2);
      w.update(0, r, inputs({ noCoolant: true, powerKw: good(500) }), s, h.alarms, delayMs);
      expect(h.active("no-coolant-power:rack-1")).toBe(false);
      w.update(0, r, inputs({ noCoolant: true, powerKw: good(500) }), s, h.alarms, 2 * delayMs - 1);
      expect(h.active("no-coolant-power:rack-1")).toBe(false);
      w.update(0, r, inputs({ noCoolant: true, powerKw: good(500) }), s, h.alarms, 2 * delayMs);
      expect(h.active("no-coolant-power:rack-1")).toBe(true);
    }
  });

  it("tells the operator to power a rack with no power output down at the rack", () => {
    const h = harness();
    const w = new NoCoolantWatch(1);
    const r = rack({ action: "none" });
    w.update(0, r, inputs({ noCoolant: true, powerKw: good(42.26) }), s, h.alarms, 0);
    w.update(0, r, inputs({ noCoolant: true, powerKw: good(42.26) }), s, h.alarms, s.noCoolantPower.delayMs);
    expect(h.message("no-coolant-power:rack-1")).toBe("rack-1 is isolated but draws 42.3 kW, and podwarden has no power output for it (noCoolant.action: none): power it down at the rack");
  });

  it("holds a rack's power back after its isolation until a good flow reading at lossOfFlow.minLpm, and no longer", () => {
    const min = s.lossOfFlow.minLpm;
    const r = rack({ action: "power-off" });
    const h = harness();
    const w = new NoCoolantWatch(2);
    expect(w.update(0, r, inputs({}), s, h.alarms, 0).coolantPending).toBe(false);
    expect(w.update(0, r, inputs({ noCoolant: true }), s, h.alarms, 1).coolantPending).toBe(true);
    // reopened: a flow meter with no good reading, or under the minimum, keeps it held
    expect(w.update(0, r, inputs({ flowLpm: bad(80) }), s, h.alarms, 2).coolantPending).toBe(true);
    expect(w.update(0, r, inputs({ flowLpm: good(min - 0.01) }), s, h.alarms, 3).coolantPending).toBe(true);
    expect(w.coolantPending).toEqual([true, false]);
    expect(w.update(0, r, inputs({ flowLpm: good(min) }), s, h.alarms, 4).coolantPending).toBe(false);
    expect(w.coolantPending[0]).toBe(false);
  });

  it("cap mode's backstop: a rack without coolant at powerOffAboveC goes off, held until its coolant is back, and not a tenth below it", () => {
    const r = rack({ action: "cap", capKw: 5, powerOffAboveC: 60 });
    const h = harness();
    const w = new NoCoolantWatch(1);
    expect(w.update(0, r, inputs({ noCoolant: true, returnTempC: good(59.9) }), s, h.alarms, 0).powerOff).toBe(false);
    expect(h.active("no-coolant-backstop:rack-1")).toBe(false);
    expect(w.update(0, r, inputs({ noCoolant: true, returnTempC: good(60) }), s, h.alarms, 1).powerOff).toBe(true);
    expect(h.message("no-coolant-backstop:rack-1")).toBe("rack-1 is without coolant and capped at 5 kW, and its return temperature reached 60.0 °C (limit 60 °C): power-off requested until its coolant is back");
    // held: cooler, or unread, while still without coolant, and while its flow is not yet proven
    expect(w.update(0, r, inputs({ noCoolant: true, returnTempC: good(40) }), s, h.alarms, 2).powerOff).toBe(true);
    expect(w.update(0, r, inputs({ noCoolant: true, returnTempC: bad() }), s, h.alarms, 3).powerOff).toBe(true);
    expect(h.message("no-coolant-backstop:rack-1")).toMatch(/its return temperature reached above 60 °C when last read \(limit 60 °C\)/);
    expect(w.update(0, r, inputs({ flowLpm: bad() }), s, h.alarms, 4).powerOff).toBe(true);
    // the coolant proven back: released
    expect(w.update(0, r, inputs({}), s, h.alarms, 5)).toEqual({ coolantPending: false, powerOff: false });
    expect(h.active("no-coolant-backstop:rack-1")).toBe(false);
  });

  it("the backstop is cap mode's alone, and without a power-off output it only says so", () => {
    const h = harness();
    const off = new NoCoolantWatch(1);
    expect(off.update(0, rack({ action: "power-off" }), inputs({ noCoolant: true, returnTempC: good(90) }), s, h.alarms, 0).powerOff).toBe(false);
    expect(h.active("no-coolant-backstop:rack-1")).toBe(false);
    // with coolant, a hot capped rack is the loop's business, not the backstop's
    const cap = new NoCoolantWatch(1);
    expect(cap.update(0, rack({ action: "cap", capKw: 5 }), inputs({ returnTempC: good(90) }), s, h.alarms, 0).powerOff).toBe(false);
    const h2 = harness();
    const bare = new NoCoolantWatch(1);
    const r = rack({ action: "cap", capKw: 5, powerOffAboveC: 60 }, false);
    expect(bare.update(0, r, inputs({ noCoolant: true, returnTempC: good(61) }), s, h2.alarms, 0).powerOff).toBe(false);
    expect(h2.active("no-coolant-backstop:rack-1")).toBe(true);
    expect(h2.message("no-coolant-backstop:rack-1")).toMatch(/it has no power-off output \(racks\[\]\.outputs\.powerOff\), so podwarden cannot take its power: power it down at the rack$/);
  });
});

describe("the power pass's held alarms", () => {
  it("HeldCondition: raised once held afterMs without a break, kept until holdMs after it last held", () => {
    const c = new HeldCondition();
    expect(c.update(true, 0, 100, 50)).toBe(false);
    expect(c.update(true, 99, 100, 50)).toBe(false);
    expect(c.update(true, 100, 100, 50)).toBe(true);
    expect(c.update(false, 120, 100, 50)).toBe(true);
    expect(c.update(false, 149, 100, 50)).toBe(true);
    expect(c.update(false, 150, 100, 50)).toBe(false);
    // a break restarts the on-delay
    expect(c.update(true, 200, 100, 50)).toBe(false);
    expect(c.update(false, 250, 100, 50)).toBe(false);
    expect(c.update(true, 260, 100, 50)).toBe(false);
    expect(c.update(true, 359, 100, 50)).toBe(false);
    expect(c.update(true, 360, 100, 50)).toBe(true);
  });

  it("power:budget waits out its on-delay, names the limit that binds, and waits while starting", () => {
    const pod = { racks: demo.racks, cdu: { ...demo.cdu, ratedHeatKw: undefined } };
    const racks = demo.racks.map(() => ({ powerKw: good(110), supplyTempC: good(30) }));
    const x = { racks, cduSupplyTempC: good(30) };
    const pb = s.powerBudget;
    const h = harness();
    const pass = new PowerPass(demo.racks);
    expect(pass.caps).toEqual(demo.racks.map((r) => r.ratedKw));
    // the budget binds: 8 racks at 110 kW against 600
    pass.evaluate(x, pod, s, 600, h.alarms, 0, true);
    pass.evaluate(x, pod, s, 600, h.alarms, pb.alarmAfterMs, true);
    expect(h.active("power:budget")).toBe(false);
    const p2 = new PowerPass(demo.racks);
    p2.evaluate(x, pod, s, 600, h.alarms, 0);
    const caps = p2.evaluate(x, pod, s, 600, h.alarms, pb.alarmAfterMs - 1);
    expect(caps.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(600 + 1e-6);
    expect(p2.caps).toBe(caps);
    expect(h.active("power:budget")).toBe(false);
    p2.evaluate(x, pod, s, 600, h.alarms, pb.alarmAfterMs);
    expect(h.active("power:budget")).toBe(true);
    expect(h.message("power:budget")).toBe("pod power budget 600 kW constrains rack caps");
    // the CDU's heat rejection binds below the budget: it is named instead
    const h2 = harness();
    const p3 = new PowerPass(demo.racks);
    const hot = { racks: demo.racks, cdu: { ...demo.cdu, ratedHeatKw: 500 } };
    p3.evaluate(x, hot, s, 2000, h2.alarms, 0);
    p3.evaluate(x, hot, s, 2000, h2.alarms, pb.alarmAfterMs);
    expect(h2.message("power:budget")).toBe("the CDU's rated heat rejection 500 kW constrains rack caps");
  });

  it("asks for headroom above a cap its rack draws close to, and only what it draws otherwise", () => {
    const pod = { racks: demo.racks, cdu: { ...demo.cdu, ratedHeatKw: undefined } };
    const h = harness();
    const pass = new PowerPass(demo.racks);
    const rated = demo.racks[0].ratedKw;
    // every rack light: nothing constrained however small the headroom
    const light = { racks: demo.racks.map(() => ({ powerKw: good(10), supplyTempC: good(30) })), cduSupplyTempC: good(30) };
    pass.evaluate(light, pod, s, 10_000, h.alarms, 0);
    expect(pass.caps.every((c) => c > 0)).toBe(true);
    // an unread meter counts the rack at its rating: 8 ratings against a budget of 7 bind
    const unread = { racks: demo.racks.map(() => ({ powerKw: bad(), supplyTempC: good(30) })), cduSupplyTempC: good(30) };
    const p2 = new PowerPass(demo.racks);
    p2.evaluate(unread, pod, s, rated * 7, h.alarms, 0);
    p2.evaluate(unread, pod, s, rated * 7, h.alarms, s.powerBudget.alarmAfterMs);
    expect(h.active("power:budget")).toBe(true);
  });
});
