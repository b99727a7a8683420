// The alarm lifecycle in isolation: raise, the clear dwell, acknowledgement, escalation, latching;
// each class's on- and off-delays, and the count of chattering alarms.
import { describe, expect, it } from "vitest";
import { alarmTiming } from "../agent/supervisor/alarm-classes.js";
import { AlarmManager, type AlarmEvent } from "../agent/supervisor/alarms.js";
import { validateSupervisor } from "../agent/supervisor/schema.js";

describe("alarm lifecycle", () => {
  const setup = (dwellMs = 100): { a: AlarmManager; events: AlarmEvent[]; clock: { t: number } } => {
    const events: AlarmEvent[] = [];
    const clock = { t: 0 };
    return { a: new AlarmManager(dwellMs, (e) => events.push(e), () => clock.t, () => "T"), events, clock };
  };
  const spec = { severity: "Warning" as const, message: "m", source: "s" };

  it("raises once, clears only after the condition stayed clear for the dwell", () => {
    const { a, events, clock } = setup();
    a.update("x", true, spec);
    a.update("x", true, spec);
    expect(events.map((e) => e.type)).toEqual(["alarm.raised"]);
    a.update("x", false, spec);
    clock.t = 50;
    a.update("x", false, spec);
    expect(a.get("x")).toBeDefined();
    clock.t = 60;
    a.update("x", true, spec); // chatter: the dwell restarts
    clock.t = 120;
    a.update("x", false, spec);
    clock.t = 200;
    a.update("x", false, spec);
    expect(a.get("x")).toBeDefined();
    clock.t = 221;
    a.update("x", false, spec);
    expect(a.get("x")).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual(["alarm.raised", "alarm.cleared"]);
    // the cleared event's text is in the past tense: what the alarm said while its condition held
    expect(events[1].alarm.message).toBe("was: m (for 0.1 s)");
  });

  it("acknowledges, and re-arms acknowledgement when a Warning escalates to Critical", () => {
    const { a, events } = setup();
    a.update("t", true, spec);
    expect(a.acknowledge("t", "op")).toBe(true);
    expect(a.get("t")).toMatchObject({ acknowledged: true, acknowledgedBy: "op" });
    a.update("t", true, { ...spec, severity: "Critical" });
    expect(a.get("t")).toMatchObject({ severity: "Critical", acknowledged: false });
    expect(events.map((e) => e.type)).toEqual(["alarm.raised", "alarm.acknowledged", "alarm.escalated"]);
    expect(a.acknowledge("nope", "op")).toBe(false);
  });

  it("keeps a latched alarm after its condition clears, until reset", () => {
    const { a, clock } = setup(0);
    a.update("leak", true, { ...spec, latch: true });
    a.update("leak", false, spec);
    clock.t = 1000;
    a.update("leak", false, spec);
    expect(a.get("leak")).toMatchObject({ conditionActive: false, latched: true });
    expect(a.reset("leak")).toBe(true);
    a.update("leak", false, spec);
    expect(a.get("leak")).toBeUndefined();
  });
});

describe("alarm classes and chattering (ISA-18.2)", () => {
  const setup = (): { a: AlarmManager; events: AlarmEvent[]; clock: { t: number } } => {
    const events: AlarmEvent[] = [];
    const clock = { t: 0 };
    const a = new AlarmManager(100, (e) => events.push(e), () => clock.t, () => "T");
    const s = validateSupervisor({ alarmClearDwellMs: 100, alarmClasses: { device: { onDelayMs: 1000, offDelayMs: 3000 } }, alarmChatter: { windowMs: 60_000, maxRaises: 3 } });
    a.setPolicy(alarmTiming(s), s.alarmChatter);
    return { a, events, clock };
  };
  const warning = { severity: "Warning" as const, message: "m", source: "s" };
  const critical = { ...warning, severity: "Critical" as const };

  it("holds a Warning back for its class's on-delay, and forgets a condition that went within it", () => {
    const { a, events, clock } = setup();
    a.update("device:rack-1", true, warning);
    clock.t = 900;
    a.update("device:rack-1", true, warning);
    expect(events).toEqual([]);
    a.update("device:rack-1", false, warning); // a blip shorter than the on-delay is no alarm
    clock.t = 1500;
    a.update("device:rack-1", true, warning);
    clock.t = 2400;
    a.update("device:rack-1", true, warning);
    expect(events).toEqual([]);
    clock.t = 2500;
    a.update("device:rack-1", true, warning);
    expect(events.map((e) => e.type)).toEqual(["alarm.raised"]);
  });

  it("never delays a Critical, whatever its class; an alarm of no class is raised at once", () => {
    const { a, events } = setup();
    a.update("device:rack-1", true, critical);
    a.update("flow:rack-1", true, warning);
    expect(events.map((e) => e.type)).toEqual(["alarm.raised", "alarm.raised"]);
  });

  it("clears after its class's off-delay, else after the clear dwell", () => {
    const { a, clock } = setup();
    a.update("device:rack-1", true, critical);
    a.update("overtemp:rack-1", true, warning);
    clock.t = 10;
    a.update("device:rack-1", false, critical);
    a.update("overtemp:rack-1", false, warning);
    clock.t = 200;
    a.update("device:rack-1", false, critical);
    a.update("overtemp:rack-1", false, warning);
    expect(a.get("overtemp:rack-1")).toBeUndefined();
    expect(a.get("device:rack-1")).toBeDefined();
    clock.t = 3010;
    a.update("device:rack-1", false, critical);
    expect(a.get("device:rack-1")).toBeUndefined();
  });

  it("counts an alarm raised more than maxRaises times within the window as chattering, and forgets raises older than it", () => {
    const { a, clock } = setup();
    const cycle = (id: string): void => {
      a.update(id, true, critical);
      clock.t += 200;
      a.update(id, false, critical);
      clock.t += 200;
      a.update(id, false, critical);
    };
    for (let k = 0; k < 3; k++) cycle("flow:rack-2");
    expect(a.stats()).toEqual({ raisedTotal: 3, chattering: [] });
    cycle("flow:rack-2");
    expect(a.stats()).toEqual({ raisedTotal: 4, chattering: [{ id: "flow:rack-2", raises: 4 }] });
    clock.t += 60_000;
    expect(a.stats()).toEqual({ raisedTotal: 4, chattering: [] });
  });
});
