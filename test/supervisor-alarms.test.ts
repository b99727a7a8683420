// The alarm lifecycle in isolation: raise, the clear dwell, acknowledgement, escalation, latching.
import { describe, expect, it } from "vitest";
import { AlarmManager, type AlarmEvent } from "../agent/supervisor/alarms.js";

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
