// Lead/lag duty of the CDU's pumps (issue 53, item 8): the pure rule on random inputs, and end
// to end in the simulator in virtual time, a pump tripped, one that never proves running, and
// the duty rotation.
import { describe, expect, it } from "vitest";
import { AlarmManager } from "../agent/supervisor/alarms.js";
import { PROOF_MIN_SPEED_PCT, PumpDuty, slotLead, type DutyEvent, type PumpReadings } from "../agent/supervisor/pump-duty.js";
import type { Reading } from "../agent/supervisor/reading.js";
import { tripOf } from "../agent/recorder/flight-recorder.js";
import { demoAgentConfig } from "../cli/demo-config.js";
import { Prng } from "../sim/prng.js";
import { simConfig } from "../sim/config.js";
import { parallelOperatingPoint, operatingPoint } from "../sim/plant/hydraulics.js";
import { SupervisedPod, pumpTrip } from "./helpers/supervised-pod.js";

const HOUR = 3_600_000;
const POLICY = { failoverMs: 5000, rotateHours: 1, overlapMs: 10_000 };
const good = (value: number): Reading => ({ value, good: true });
const bad: Reading = { value: NaN, good: false, why: "no reading" };

describe("pump duty, the rule", () => {
  it("on random status inputs: a pump out of duty never leads while another is in duty, and exactly the lead (and an outgoing lead) runs", () => {
    const rng = new Prng(53);
    for (let trial = 0; trial < 200; trial++) {
      const n = 2 + Math.floor(rng.next() * 3);
      const names = Array.from({ length: n }, (_, i) => `p${i + 1}`);
      const alarms = new AlarmManager(0, () => {}, () => 0);
      const duty = new PumpDuty(names, POLICY, rng.next() * 100 * HOUR);
      let now = 0;
      let wall = rng.next() * 100 * HOUR;
      for (let step = 0; step < 300; step++) {
        now += 100 + rng.next() * 2000;
        wall += 100 + rng.next() * (rng.next() < 0.02 ? 2 * HOUR : 2000);
        const pick = (): Reading | undefined => {
          const u = rng.next();
          return u < 0.1 ? undefined : u < 0.2 ? bad : good(u < 0.35 ? 1 : 0);
        };
        const pumps: PumpReadings[] = names.map(() => ({ fault: pick(), running: pick() }));
        const run = duty.pass({ nowMs: now, wallMs: wall, enabled: rng.next() > 0.05, speedPct: rng.next() * 100, pumps }, alarms, () => {});
        const faulted = pumps.map((p) => p.fault?.good === true && p.fault.value >= 0.5);
        const none = alarms.get("pumps:unavailable")?.conditionActive === true;
        if (none) {
          expect(run.every((r) => r)).toBe(true);
          continue;
        }
        // a pump whose drive reports a fault now is out of duty: it is neither the lead nor run
        for (let i = 0; i < n; i++) if (faulted[i]) expect(run[i]).toBe(false);
        expect(run[duty.lead]).toBe(true);
        expect(run.filter((r) => r).length).toBeLessThanOrEqual(2);
        expect(alarms.get(`pump:${names[duty.lead]}`)?.message ?? "").not.toMatch(/out of duty/);
      }
    }
  });

  it("fails over at once on a fault, after failoverMs without proof of running, and never for a status it cannot read", () => {
    const alarms = new AlarmManager(0, () => {}, () => 0);
    const events: DutyEvent[] = [];
    const duty = new PumpDuty(["a", "b"], POLICY, 0);
    const pass = (now: number, pumps: PumpReadings[], speedPct = 60): readonly boolean[] => duty.pass({ nowMs: now, wallMs: 0, enabled: true, speedPct, pumps }, alarms, (e) => events.push(e));
    const ok = { fault: good(0), running: good(1) };
    expect(pass(0, [ok, { fault: good(0), running: good(0) }])).toEqual([true, false]);
    // the lead's status unreadable: it keeps leading, and the Warning says its failure could not be seen
    expect(pass(100, [{ fault: bad, running: bad }, ok])).toEqual([true, false]);
    expect(alarms.get("pump:a")?.message).toMatch(/a \(the lead\) status unknown: .*its failure could not be seen/);
    // a trip: b leads at once and a stops
    expect(pass(200, [{ fault: good(1), running: good(1) }, { fault: good(0), running: good(0) }])).toEqual([false, true]);
    expect(events).toEqual([{ type: "pump.duty", from: "a", to: "b", why: "failover: a: its drive reports a trip or fault" }]);
    expect(alarms.get("pump:a")?.message).toBe("a out of duty: its drive reports a trip or fault; b leads");
    expect(duty.failovers).toBe(1);
    // b commanded and not turning: below the proof speed nothing is expected of it
    expect(pass(1000, [{ fault: good(0), running: good(0) }, { fault: good(0), running: good(0) }], PROOF_MIN_SPEED_PCT - 1)).toEqual([false, true]);
    expect(pass(9000, [{ fault: good(0), running: good(0) }, { fault: good(0), running: good(0) }], PROOF_MIN_SPEED_PCT - 1)).toEqual([false, true]);
    // a's trip was reset: it stands by; b, commanded at speed, does not prove running within 5 s and a takes over
    pass(10_000, [{ fault: good(0), running: good(0) }, { fault: good(0), running: good(0) }]);
    expect(pass(14_900, [{ fault: good(0), running: good(0) }, { fault: good(0), running: good(0) }])).toEqual([false, true]);
    expect(pass(15_000, [{ fault: good(0), running: good(0) }, { fault: good(0), running: good(0) }])).toEqual([true, false]);
    expect(alarms.get("pump:b")?.message).toMatch(/^b out of duty: it did not prove running within 5 s of its command \(out of duty until a reload\); a leads$/);
    // b's failure holds (nothing says it is over) until a reload releases it
    expect(pass(20_000, [ok, ok])).toEqual([true, false]);
    expect(alarms.get("pump:b")?.conditionActive).toBe(true);
    duty.release();
    pass(20_100, [ok, { fault: good(0), running: good(0) }]);
    expect(alarms.get("pump:b")?.conditionActive ?? false).toBe(false);
    // both out: a Critical, and every pump asked to run
    expect(pass(21_000, [{ fault: good(1), running: good(0) }, { fault: good(1), running: good(0) }])).toEqual([true, true]);
    expect(alarms.get("pumps:unavailable")).toMatchObject({ severity: "Critical", conditionActive: true });
  });

  it("rotates on the wall-clock slot with an overlap, keeps the slot's lead across a restart, and skips a pump out of duty", () => {
    expect([0, 1, 2, 3].map((h) => slotLead(3, POLICY, h * HOUR + 1))).toEqual([0, 1, 2, 0]);
    expect(slotLead(3, { rotateHours: 0 }, 5 * HOUR)).toBe(0);
    expect(new PumpDuty(["a", "b", "c"], POLICY, 2.5 * HOUR).lead).toBe(2); // a restart mid-slot: the slot's lead
    expect(new PumpDuty(["a", "b", "c"], POLICY, 2.5 * HOUR, "a").lead).toBe(0); // a reload carries its lead over
    const alarms = new AlarmManager(0, () => {}, () => 0);
    const events: DutyEvent[] = [];
    const duty = new PumpDuty(["a", "b", "c"], POLICY, 0.5 * HOUR);
    const ok = { fault: good(0), running: good(1) };
    const pass = (now: number, wall: number, pumps: PumpReadings[] = [ok, ok, ok]): readonly boolean[] => duty.pass({ nowMs: now, wallMs: wall, enabled: true, speedPct: 60, pumps }, alarms, (e) => events.push(e));
    expect(pass(0, 0.5 * HOUR)).toEqual([true, false, false]);
    expect(pass(1000, 1 * HOUR)).toEqual([true, true, false]); // b starts, a runs on through the overlap
    expect(pass(10_999, 1 * HOUR + 9999)).toEqual([true, true, false]);
    expect(pass(11_000, 1 * HOUR + 10_000)).toEqual([false, true, false]);
    expect(events).toEqual([{ type: "pump.duty", from: "a", to: "b", why: "duty rotation" }]);
    // c tripped at the next slot: a leads instead
    expect(pass(20_000, 2 * HOUR, [ok, ok, { fault: good(1), running: good(0) }])).toEqual([true, true, false]);
    expect(duty.lead).toBe(0);
    expect(duty.failovers).toBe(0);
  });
});

describe("parallel pumps in the simulator", () => {
  it("match one pump's closed form, share one speed's head exactly, and meet at one dp at two speeds", () => {
    const curve = { shutoffKpa: 250, resistance: 5e-5 };
    const kv = [12, 12, 12, 8];
    expect(parallelOperatingPoint(curve, [0.7, 0], kv)).toEqual(operatingPoint(curve, 0.7, kv));
    const two = parallelOperatingPoint(curve, [0.7, 0.7], kv);
    expect(two.dpKpa).toBeGreaterThan(operatingPoint(curve, 0.7, kv).dpKpa);
    // two speeds: each pump's flow at the common dp sums to the branches' flow
    const p = parallelOperatingPoint(curve, [0.8, 0.5], kv);
    const q = (s: number): number => Math.sqrt(Math.max(0, 250 * s * s - p.dpKpa) / 5e-5);
    expect(q(0.8) + q(0.5)).toBeCloseTo(p.totalFlowLpm, 6);
    expect(parallelOperatingPoint(curve, [0, 0], kv).dpKpa).toBe(0);
  });
});

describe("pump duty end to end, in virtual time", () => {
  const pod = (patch?: (c: ReturnType<typeof demoAgentConfig>) => void): SupervisedPod => {
    const c = demoAgentConfig();
    patch?.(c);
    return new SupervisedPod(simConfig({ plant: { load: { profile: "idle", pct: 60 } } }), c);
  };
  const truth = (p: SupervisedPod) => p.vp.sim.truth().cdu;

  it("a tripped lead: the standby runs within failoverMs, dp and the racks' flow come back, and it is alarmed and logged", () => {
    const r = pumpTrip(true);
    const p = r.pod;
    expect(r.standbyMs).not.toBeNull();
    expect(r.standbyMs!).toBeLessThanOrEqual(p.config.cdu.pumpDuty.failoverMs);
    expect(r.dpBackMs).not.toBeNull();
    expect(truth(p).pumps.map((m) => m.speedPct > 1)).toEqual([false, true]);
    expect(r.lowestFlowLpm).toBeGreaterThan(p.config.supervisor.lossOfFlow.minLpm);
    expect(p.supervisor.alarms.get("pump:pump-1")).toMatchObject({ severity: "Warning", conditionActive: true });
    const failover = { type: "pump.duty", from: "pump-1", to: "pump-2", why: "failover: pump-1: its drive reports a trip or fault" } as const;
    expect(p.events).toContainEqual(failover);
    // the flight recorder keeps the seconds around it; a rotation is no trip
    expect([tripOf(failover), tripOf({ ...failover, why: "duty rotation" })]).toEqual(["failover:pump-1", null]);
    expect(p.raised().filter((id) => id.startsWith("flow:") || id.startsWith("overtemp:"))).toEqual([]);
    // the trip reset: pump-1 stands by again, pump-2 keeps the lead
    p.vp.sim.inject({ pumpTrip: false, pump: 1 });
    p.run(30);
    expect(p.supervisor.alarms.get("pump:pump-1")?.conditionActive ?? false).toBe(false);
    expect(truth(p).pumps.map((m) => m.speedPct > 1)).toEqual([false, true]);
  });

  it("the same trip on a CDU with one pump loses the loop: the baseline", () => {
    const r = pumpTrip(false);
    expect(r.standbyMs).toBeNull();
    expect(r.lowestFlowLpm).toBe(0);
    expect(r.pod.raised().filter((id) => id.startsWith("flow:"))).toHaveLength(8);
  });

  it("a lead that stops with its trip contact broken is caught by its proof of running within failoverMs", () => {
    const p = pod();
    p.run(60);
    p.vp.sim.inject({ sensor: "cdu.pumpTripped", fault: "value", value: 0 });
    p.vp.sim.inject({ pumpTrip: true, pump: 1 });
    const tripMs = p.vp.timeMs;
    let startedMs: number | null = null;
    p.run(30, () => {
      if (startedMs === null && truth(p).pumps[1].speedPct > 1) startedMs = p.vp.timeMs;
    });
    // the coast-down below the running threshold (70 % at 20 %/s: 3.5 s), then failoverMs
    expect(startedMs).not.toBeNull();
    expect(startedMs! - tripMs).toBeLessThanOrEqual(3500 + p.config.cdu.pumpDuty.failoverMs + 500);
    expect(p.supervisor.alarms.get("pump:pump-1")?.message).toMatch(/did not prove running/);
  });

  it("rotates the lead on its schedule, the old lead running through the overlap, without a loss of flow", () => {
    const p = pod((c) => (c.cdu.pumpDuty = { failoverMs: 5000, rotateHours: 0.01, overlapMs: 10_000 })); // 36 s slots
    const leads: number[] = [];
    let both = 0;
    let minDp = Infinity;
    p.run(30);
    p.run(100, () => {
      const run = truth(p).pumps.map((m) => m.speedPct > 1);
      if (run[0] && run[1]) both += 1;
      const lead = p.vp.decisions.pumpLead ?? -1;
      if (leads[leads.length - 1] !== lead) leads.push(lead);
      minDp = Math.min(minDp, truth(p).dpKpa);
    });
    expect(leads).toEqual([0, 1, 0, 1]); // slots begin at 36, 72 and 108 s
    expect(both).toBeGreaterThan(0);
    expect(p.events.filter((e) => e.type === "pump.duty").map((e) => (e.type === "pump.duty" ? e.why : ""))).toEqual(["duty rotation", "duty rotation", "duty rotation"]);
    expect(p.raised().filter((id) => id.startsWith("flow:") || id.startsWith("pump"))).toEqual([]);
    expect(minDp).toBeGreaterThan(p.config.control.dpSetpointKpa - 30);
  });
});
