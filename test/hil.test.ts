// The HIL runner: every expectation kind passing where it should and failing where it should;
// scenario files checked (a typo in a signal is an error, never a silent pass); the standard
// library passing in virtual time against the simulator, through the pod's real wiring and hot
// path; the same seed giving the same report; a deliberately broken config failing the library
// with clear messages; and the reports parsed back by a real browser's XML parser, and the CLI.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../lib/config-file.js";
import { demoAgentConfig } from "../cli/demo-config.js";
import { scenarioConfig } from "../cli/hil-command.js";
import { judge, type Expectation, type Series } from "../hil/expectations.js";
import { campaignRun, campaignTable, summariseCampaign } from "../hil/campaign.js";
import { htmlReport, junitXml } from "../hil/report.js";
import { loadHilScenario, parseHilScenario, scenarioPod } from "../hil/scenario.js";
import { mergePatch } from "../lib/merge-patch.js";
import { checkScenario, planRun, runVirtual, supervisorOnly, type ScenarioRun } from "../hil/virtual-runner.js";
import { eventSeries, uplinkSeries, type DaemonEvent } from "../hil/realtime-runner.js";
import { ALARM_IDS, EVENT_TYPES, expandSignals } from "../hil/signals.js";
import { loadSimConfig } from "../sim/config.js";
import { tempDir } from "./helpers/temp-dirs.js";

const LIBRARY = "configs/hil";
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

/** A level sampled every ms from 0 to `n` ms. */
function level(name: string, n: number, f: (t: number) => number): Series {
  const t = Float64Array.from({ length: n + 1 }, (_, k) => k);
  return { name, unit: "", t, v: t.map(f) };
}

const ex = (over: Partial<Expectation> & Pick<Expectation, "kind">): Expectation => ({ name: "x", signals: ["s"], is: { eq: 0 }, ...over });

describe("expectations, each kind", () => {
  const step = new Map([["s", level("s", 1000, (t) => (t < 120 ? 1 : 0))]]);
  it("within: met in time passes with the figure; too late, or never, fails saying so", () => {
    const ok = judge(ex({ kind: "within", afterMs: 100, withinMs: 50 }), step, 1000);
    expect(ok).toMatchObject({ passed: true, measured: 20, figure: "= 0 in 20 ms (limit 50 ms)" });
    const late = judge(ex({ kind: "within", afterMs: 100, withinMs: 5 }), step, 1000);
    expect(late).toMatchObject({ passed: false, measured: 20, figure: "s = 0 only after 20 ms (limit 5.0 ms)" });
    const never = judge(ex({ kind: "within", afterMs: 100, withinMs: 50, is: { eq: 7 } }), step, 1000);
    expect(never).toMatchObject({ passed: false, measured: null, figure: "s never = 7 by the end of the run (limit 50 ms)" });
  });

  it("hold: every sample in the window passes; one outside fails naming it, and a missing value fails too", () => {
    const temp = new Map([["s", level("s", 1000, (t) => (t === 700 ? 47.5 : 45))]]);
    expect(judge(ex({ kind: "hold", is: { between: [44, 46] }, fromMs: 0, toMs: 600 }), temp, 1000)).toMatchObject({ passed: true });
    expect(judge(ex({ kind: "hold", is: { between: [44, 46] } }), temp, 1000)).toMatchObject({ passed: false, measured: 700, figure: "s was 47.50 at 700 ms: not in [44, 46]" });
    const gap = new Map([["s", level("s", 100, (t) => (t < 10 ? NaN : 1))]]);
    expect(judge(ex({ kind: "hold", is: { eq: 1 } }), gap, 100).figure).toBe("s was without a value at 0 s: not = 1");
  });

  it("never: no sample meeting it passes; one fails with its time and value", () => {
    expect(judge(ex({ kind: "never", is: { eq: 7 } }), step, 1000)).toMatchObject({ passed: true });
    expect(judge(ex({ kind: "never", is: { eq: 0 } }), step, 1000)).toMatchObject({ passed: false, measured: 120, figure: "s was 0 at 120 ms: = 0" });
    expect(judge(ex({ kind: "never", is: { eq: 0 }, toMs: 100 }), step, 1000)).toMatchObject({ passed: true });
  });

  it("eventually: by its deadline passes; after it fails", () => {
    expect(judge(ex({ kind: "eventually", byMs: 200 }), step, 1000)).toMatchObject({ passed: true, measured: 120 });
    expect(judge(ex({ kind: "eventually", byMs: 100 }), step, 1000)).toMatchObject({ passed: false, figure: "s not = 0 by 100 ms" });
  });

  it("count: a level's rises and discrete events (writes), against min and max", () => {
    const chatter = new Map([["s", level("s", 1000, (t) => (Math.floor(t / 100) % 2 === 1 ? 1 : 0))]]);
    expect(judge(ex({ kind: "count", is: { eq: 1 }, min: 5, max: 5 }), chatter, 1000)).toMatchObject({ passed: true, measured: 5 });
    expect(judge(ex({ kind: "count", is: { eq: 1 }, max: 2 }), chatter, 1000)).toMatchObject({ passed: false, figure: "5 times = 1 from 0 s to 1.00 s (expected at most 2)" });
    const writes: Series = { ...level("w", 1000, () => 0), events: [{ tMs: 10, value: 1 }, { tMs: 500, value: 0 }, { tMs: 501, value: 0 }] };
    expect(judge(ex({ kind: "count", signals: ["w"], is: { eq: 0 }, min: 2, max: 2 }), new Map([["w", writes]]), 1000)).toMatchObject({ passed: true, measured: 2 });
    expect(judge(ex({ kind: "count", signals: ["w"], is: { eq: 0 }, fromMs: 0, toMs: 400, min: 1 }), new Map([["w", writes]]), 1000)).toMatchObject({ passed: false, measured: 0 });
  });

  it("several signals: within is judged on the slowest, hold and never on the first to break", () => {
    const two = new Map([
      ["a", level("a", 1000, (t) => (t < 110 ? 1 : 0))],
      ["b", level("b", 1000, (t) => (t < 140 ? 1 : 0))],
    ]);
    expect(judge(ex({ kind: "within", signals: ["a", "b"], afterMs: 100, withinMs: 50 }), two, 1000)).toMatchObject({ passed: true, measured: 40 });
    expect(judge(ex({ kind: "within", signals: ["a", "b"], afterMs: 100, withinMs: 20 }), two, 1000).figure).toMatch(/^b = 0 only after 40 ms/);
  });
});

describe("scenario files", () => {
  const base = { name: "t", duration: "10s", expect: [{ name: "e", signal: "truth.rack-3.supplyIsolationPct", is: { le: 1 }, eventually: { by: "5s" } }] };
  const pod = demoAgentConfig();

  it("a typo in a signal's field is a schema error, naming where", () => {
    const bad = structuredClone(base);
    bad.expect[0].signal = "truth.rack-3.supplyIsolationPcnt";
    expect(() => parseHilScenario(bad, "typo.yaml")).toThrow(ConfigError);
    expect(() => parseHilScenario(bad, "typo.yaml")).toThrow(/expect\[0\]\.signal/);
  });

  it("a rack or output the pod does not have is an error before anything runs", () => {
    const rack = parseHilScenario({ ...base, expect: [{ ...base.expect[0], signal: "truth.rack-9.supplyIsolationPct" }] }, "rack.yaml");
    expect(() => checkScenario(rack, pod)).toThrow(ConfigError);
    expect(() => checkScenario(rack, pod)).toThrow(/rack\.yaml: invalid config\n {2}- expect\[0\] \(e\): unknown signal truth\.rack-9\.supplyIsolationPct \(no rack "rack-9"/);
    const out = parseHilScenario({ ...base, expect: [{ ...base.expect[0], signal: "writes.rack-3.nope" }] }, "out.yaml");
    expect(() => checkScenario(out, pod)).toThrow(/no output "rack-3\.nope"/);
    const except = parseHilScenario({ ...base, expect: [{ ...base.expect[0], signal: "pod.*.isolated", except: ["rack-33"] }] }, "except.yaml");
    expect(() => checkScenario(except, pod)).toThrow(/except: no rack or alarm id rack-33/);
  });

  it("an alarm id or an event type the daemon does not have is an error; virtual time judges its supervisor's alarms and events, and skips the daemon's others, saying so", () => {
    const withSignal = (signal: string, more: object = {}): ReturnType<typeof parseHilScenario> =>
      parseHilScenario({ ...base, expect: [base.expect[0], { name: "a", signal, is: { eq: 0 }, hold: {}, ...more }] }, "alarm.yaml");
    expect(() => checkScenario(withSignal("alarm.leak:rack-99"), pod)).toThrow(/unknown signal alarm\.leak:rack-99 \(no rack "rack-99" for leak/);
    expect(() => checkScenario(withSignal("alarm.lek:rack-1"), pod)).toThrow(/alarm\.lek:rack-1 \(no alarm kind "lek"\)/);
    expect(() => checkScenario(withSignal("alarm.failsafe:rack-1.pump"), pod)).toThrow(/no loop "rack-1\.pump" for failsafe/);
    expect(() => checkScenario(withSignal("alarm.device:rack-77"), pod)).toThrow(/no device "rack-77"/);
    expect(() => checkScenario(withSignal("alarms.critical", { except: ["leak:rack-1", "stale:rack-1"] }), pod)).toThrow(/except: no rack or alarm id stale:rack-1/);
    expect(() => parseHilScenario({ ...base, expect: [{ name: "e", signal: "events.alarm.rased", is: { eq: 1 }, count: { min: 1 } }] }, "ev.yaml")).toThrow(/expect\[0\]\.signal/);
    for (const ok of ["alarm.leak:rack-1", "alarm.failsafe:cdu.pump", "alarm.stroke:rack-2.return", "alarm.control:stalled", "alarm.device:cdu", "events.isolation.proven"]) expect(() => checkScenario(withSignal(ok), pod)).not.toThrow();
    // virtual time judges what its supervisor raises and emits (test/hil-virtual-supervisor.test.ts)
    const r = runVirtual(withSignal("alarms.critical", { except: ["leak:rack-1"] }), loadSimConfig("configs/sim-pod.yaml"), pod);
    expect([r.verdicts[1].skipped, r.verdicts[1].passed]).toEqual([undefined, true]);
    // a scenario of nothing but what only the daemon has is refused: a run that judges nothing must not pass
    const only = parseHilScenario({ ...base, expect: [{ name: "a", signal: "alarm.control:stalled", is: { eq: 0 }, hold: {} }] }, "only.yaml");
    expect(() => checkScenario(only, pod)).toThrow(/only\.yaml: nothing it expects can be judged in virtual time/);
  });

  it("virtual time has no connections: it refuses a connection reset and skips the connections a device holds, saying so", () => {
    const resets = parseHilScenario({ ...base, steps: [{ at: "1s", device: "rack-4", resetEvery: 1 }] }, "resets.yaml");
    expect(() => checkScenario(resets, pod)).toThrow(/resets\.yaml: its connection resets \(rack-4\) need real connections: run it in real time, with --rig/);
    expect(() => runVirtual(resets, loadSimConfig("configs/sim-pod.yaml"), pod)).toThrow(/need real connections/);
    // clearing the fault (resetEvery: 0) is no reset
    expect(() => checkScenario(parseHilScenario({ ...base, steps: [{ at: "1s", device: "rack-4", resetEvery: 0 }] }, "clear.yaml"), pod)).not.toThrow();
    const wires = parseHilScenario({ ...base, expect: [base.expect[0], { name: "w", signal: "truth.rack-4.connections", is: { le: 3 }, hold: {} }] }, "wires.yaml");
    const r = runVirtual(wires, loadSimConfig("configs/sim-pod.yaml"), pod);
    expect(r.verdicts[1].skipped).toMatch(/skipped in virtual time: it has no connections \(truth\.rack-4\.connections\); real time \(--rig\) judges it/);
  });

  it("reads the pod's total power from the plant, and refuses a realTime scenario in virtual time", () => {
    const total = parseHilScenario({ ...base, duration: "2s", expect: [{ name: "p", signal: "truth.pod.powerKw", is: { between: [100, 960] }, hold: { from: "1s" } }] }, "total.yaml");
    const r = runVirtual(total, loadSimConfig("configs/sim-pod.yaml"), pod);
    expect(r.verdicts[0].passed).toBe(true);
    // the sum of the racks' power (the plant starts from rest): the sim pod's loads of 8 × 120 kW
    const v = r.series.get("truth.pod.powerKw")!.v;
    expect(v[v.length - 1]).toBeGreaterThan(300);
    const rt = parseHilScenario({ ...base, realTime: true }, "rt.yaml");
    expect(() => checkScenario(rt, pod)).toThrow(/rt\.yaml: it says realTime: true \(what it expects holds on the rig and the daemon only\): run it in real time, with --rig/);
    expect(() => runVirtual(rt, loadSimConfig("configs/sim-pod.yaml"), pod)).toThrow(/realTime: true/);
  });

  it("holds its alarm ids to the daemon's documented ones, and its event types to the agent's", () => {
    // docs/agent.md's alarm table: `<kind>:<rack|loop|device|…>` or a fixed id; docs/mqtt.md's, the uplink's own
    const table = [...readFileSync("docs/agent.md", "utf8").split("\n").filter((l) => /^\| `[a-z]/.test(l)), ...readFileSync("docs/mqtt.md", "utf8").split("\n").filter((l) => /^\| `uplink:/.test(l))];
    const documented = new Set(table.flatMap((l) => [...l.split(" | ")[0].matchAll(/`([a-z-]+(?::[a-z-]+)?)(?::<[^`]*)?`/g)].map((m) => m[1])));
    const ours = new Set([...ALARM_IDS.rack, ...ALARM_IDS.loop, ...ALARM_IDS.device, ...ALARM_IDS.valve, ...ALARM_IDS.pump, ...ALARM_IDS.fixed]);
    expect([...ours].sort()).toEqual([...documented].sort());
    // the agent's event types, as its sources emit them
    const types = new Set<string>();
    const walk = (dir: string): void => {
      for (const f of readdirSync(dir, { withFileTypes: true })) {
        if (f.isDirectory()) walk(join(dir, f.name));
        else if (f.name.endsWith(".ts")) for (const m of readFileSync(join(dir, f.name), "utf8").matchAll(/type: "([a-z]+\.[a-z.-]+)"/g)) types.add(m[1]);
      }
    };
    walk("agent");
    expect([...EVENT_TYPES].sort()).toEqual([...types].sort());
  });

  it("an alarm's level, a severity's count less its exceptions, and events counted, from the daemon's events", () => {
    const refs = expandSignals(["alarm.leak:rack-1", "alarms.critical", "events.alarm.raised"], ["leak:rack-1"], pod, new Set(), ["rack-1"], "t");
    const t = Float64Array.from([0, 100, 200, 300]);
    const t0 = 1000;
    const ev = (atMs: number, type: string, id?: string, severity = "Critical"): DaemonEvent => ({ atMs: t0 + atMs, type, ...(id === undefined ? {} : { alarm: { id, severity } }) });
    const series = eventSeries(
      refs,
      [
        // raised while the pod settled, before time 0: active at 0, not counted as an event of the run
        ev(-500, "alarm.raised", "flow:rack-2"),
        ev(50, "alarm.raised", "leak:rack-1"),
        ev(150, "alarm.cleared", "flow:rack-2"),
        ev(250, "alarm.raised", "overtemp:rack-3", "Warning"),
        ev(260, "alarm.escalated", "overtemp:rack-3", "Critical"),
      ],
      t0,
      t,
    );
    expect(series.map((x) => x.name)).toEqual(["alarm.leak:rack-1", "alarms.critical except leak:rack-1", "events.alarm.raised"]);
    expect([...series[0].v]).toEqual([0, 1, 1, 1]);
    expect([...series[1].v]).toEqual([1, 1, 0, 1]);
    expect([...series[2].v]).toEqual([0, 1, 1, 2]);
    expect(series[2].events).toEqual([
      { tMs: 50, value: 1 },
      { tMs: 250, value: 1 },
    ]);
  });

  it("mission control's view, from what it saw: online, an alarm its last alarms message listed, events received", () => {
    const refs = expandSignals(["uplink.online", "uplink.alarm.leak:rack-1", "uplink.events.isolation.proven"], [], pod, new Set(), ["rack-1"], "t");
    const t = Float64Array.from([0, 100, 200, 300]);
    const t0 = 1000;
    const series = uplinkSeries(
      refs,
      [
        // seen while the pod settled: the level at 0, not an event of the run
        { atMs: t0 - 500, online: true },
        { atMs: t0 - 400, event: "isolation.proven" },
        { atMs: t0 + 50, online: false },
        { atMs: t0 + 150, online: true },
        { atMs: t0 + 160, alarms: ["leak:rack-1", "flow:rack-2"] },
        { atMs: t0 + 170, event: "isolation.proven" },
        { atMs: t0 + 250, alarms: [] },
      ],
      t0,
      t,
    );
    expect([...series[0].v]).toEqual([1, 0, 1, 1]);
    expect([...series[1].v]).toEqual([0, 0, 1, 0]);
    expect([...series[2].v]).toEqual([0, 0, 1, 1]);
    expect(series[2].events).toEqual([{ tMs: 170, value: 1 }]);
    // a typo in the alarm id is an error, as for alarm.<id>
    expect(() => expandSignals(["uplink.alarm.lek:rack-1"], [], pod, new Set(), ["rack-1"], "t")).toThrow(/uplink\.alarm\.lek:rack-1 \(no alarm kind "lek"\)/);
  });

  it("mission control's telemetry: each message received, and those a gap in seq says were lost, counted", () => {
    const refs = expandSignals(["uplink.telemetry.received", "uplink.telemetry.lost"], [], pod, new Set(), ["rack-1"], "t");
    const t = Float64Array.from([0, 100, 200]);
    const t0 = 1000;
    // seq 7 then 11 (8, 9 and 10 lost), as mission control notes them
    const seen = [{ atMs: t0 + 10, telemetry: "received" as const }, ...Array.from({ length: 3 }, () => ({ atMs: t0 + 150, telemetry: "lost" as const })), { atMs: t0 + 150, telemetry: "received" as const }];
    const series = uplinkSeries(refs, seen, t0, t);
    expect([...series[0].v]).toEqual([0, 1, 2]);
    expect([...series[1].v]).toEqual([0, 0, 3]);
    expect(series[1].events).toHaveLength(3);
    expect(series[1].unit).toMatch(/gaps in seq/);
  });

  it("reads MQTT sensors only with an uplink, faults their gateway only with them, and only in real time", () => {
    const m = parseHilScenario({ ...base, uplink: true, mqttSensors: ["rack-2"], steps: [{ at: "1s", gateway: "silent" }, { at: "2s", gateway: "flush" }] }, "m.yaml");
    expect(m.mqttSensors).toEqual(["rack-2"]);
    expect(m.runnerSteps).toEqual([
      { atS: 1, gateway: "silent" },
      { atS: 2, gateway: "flush" },
    ]);
    expect(m.realTimeOnly).toBe(true);
    expect(() => checkScenario(parseHilScenario({ ...base, uplink: true, mqttSensors: ["rack-2"] }, "m.yaml"), pod)).toThrow(/m\.yaml: its mqttSensors are read by the daemon's MQTT ingest from the runner's broker: run it in real time/);
    expect(() => parseHilScenario({ ...base, mqttSensors: ["rack-2"] }, "m.yaml")).toThrow(/mqttSensors: the sensor gateway publishes through the runner's broker: it needs uplink: true/);
    expect(() => parseHilScenario({ ...base, uplink: true, steps: [{ at: "1s", gateway: "silent" }] }, "m.yaml")).toThrow(/steps\[0\]: a gateway step needs mqttSensors/);
    expect(() => parseHilScenario({ ...base, uplink: true, mqttSensors: ["rack-2"], transmitters: ["rack-2"] }, "m.yaml")).toThrow(/mqttSensors: a rack's return temperature comes from a transmitter or from MQTT, not both/);
    expect(() => parseHilScenario({ ...base, uplink: true, mqttSensors: ["rack-2"], steps: [{ at: "1s", gateway: "asleep" }] }, "m.yaml")).toThrow(/gateway/);
  });

  it("sets the daemon's spool only with an uplink, within the config's bounds", () => {
    expect(parseHilScenario({ ...base, uplink: true, spool: { maxBytes: 65536, segmentBytes: 4096 } }, "s.yaml").spool).toEqual({ maxBytes: 65536, segmentBytes: 4096 });
    expect(() => parseHilScenario({ ...base, spool: { maxBytes: 65536 } }, "s.yaml")).toThrow(/spool: the daemon's spool holds what its uplink sends: it needs uplink: true/);
    expect(() => parseHilScenario({ ...base, uplink: true, spool: { maxBytes: 1000 } }, "s.yaml")).toThrow(/spool\/maxBytes|spool\.maxBytes/);
    expect(() => parseHilScenario({ ...base, uplink: true, spool: { size: 1 } }, "s.yaml")).toThrow(/spool/);
  });

  it("skips mission control's view in virtual time, saying why, and judges the rest", () => {
    const s = parseHilScenario({ ...base, uplink: true, expect: [...base.expect, { name: "told", signal: "uplink.alarm.leak:rack-1", is: { eq: 1 }, eventually: { by: "9s" } }] }, "u.yaml");
    const plan = planRun(s, pod, "virtual time", supervisorOnly("virtual time"));
    expect([...plan.skipped.keys()]).toEqual([1]);
    expect(plan.skipped.get(1)).toMatch(/skipped in virtual time: mission control sees the daemon's uplink \(uplink\.alarm\.leak:rack-1\)/);
  });

  it("a step on a condition: at or when, delay only with when, a runner step only at a time, one signal the mode can read; one whose condition never holds fails the run, saying the step was not injected", () => {
    const step = (x: Record<string, unknown>): unknown => ({ ...base, steps: [x] });
    const when = { signal: "pod.rack-1.isolated", is: { eq: 1 } };
    expect(() => parseHilScenario(step({ at: "1s", when, leak: "rack-2" }), "w.yaml")).toThrow(/steps\[0\]: needs at or when, not both or neither/);
    expect(() => parseHilScenario(step({ leak: "rack-2" }), "w.yaml")).toThrow(/steps\[0\]: needs at or when, not both or neither/);
    expect(() => parseHilScenario(step({ at: "1s", delay: "1s", leak: "rack-2" }), "w.yaml")).toThrow(/steps\[0\]: delay goes with when/);
    expect(() => parseHilScenario(step({ when, daemon: "kill" }), "w.yaml")).toThrow(/steps\[0\]: a daemon step happens at a time \(at\), not on a condition/);
    expect(() => parseHilScenario(step({ when: { signal: "pod.rack-1.isolatd", is: { eq: 1 } }, leak: "rack-2" }), "w.yaml")).toThrow(/steps\[0\]\.when\.signal: must match pattern/);
    const star = parseHilScenario(step({ when: { signal: "pod.*.isolated", is: { eq: 1 } }, leak: "rack-2" }), "w.yaml");
    expect(() => checkScenario(star, pod)).toThrow(/steps\[0\]\.when: one signal, not pod\.\*\.isolated \(8 of them\)/);
    const alarm = parseHilScenario(step({ when: { signal: "alarm.state:latches", is: { eq: 1 } }, leak: "rack-2" }), "w.yaml");
    expect(() => checkScenario(alarm, pod)).toThrow(/w\.yaml: steps\[0\] waits on alarm\.state:latches, which virtual time cannot read/);
    // rack-1 never leaks here, so rack-2's leak is never injected: the run fails, and says why
    const never = parseHilScenario({ ...base, steps: [{ when, delay: "1s", leak: "rack-2" }], expect: [{ name: "rack-2 isolated", signal: "pod.rack-2.isolated", is: { eq: 1 }, never: {} }] }, "never.yaml");
    const r = runVirtual(never, loadSimConfig("configs/sim-pod.yaml"), pod);
    expect(r.passed).toBe(false);
    expect(r.verdicts.map((v) => [v.name, v.passed, v.figure])).toEqual([
      ["rack-2 isolated", true, expect.stringMatching(/^never = 1/)],
      ['steps[0] ({"leak":"rack-2"}) when pod.rack-1.isolated = 1', false, "its condition never held by the end of the run: the step was not injected, so what the scenario tests did not happen"],
    ]);
  });

  it("a scenario's control patch: merged over the pod's, checked as the config is, and what its expectations rest on", () => {
    expect(mergePatch({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { c: [3] }, e: 2 })).toEqual({ a: { b: 1, c: [3] }, d: 1, e: 2 });
    const s = loadHilScenario(join(LIBRARY, "sensor-frozen-rack-5.yaml"));
    const patched = scenarioPod(s, pod);
    expect(patched.control.points.temperature).toMatchObject({ stuckMs: 2000, stuckEps: 0.001, stuckMove: 0, staleMs: pod.control.points.temperature.staleMs });
    expect(pod.control.points.temperature.stuckMs).toBe(0); // the pod's own is untouched
    const bad = parseHilScenario({ ...base, control: { points: { temperature: { stuckMs: -1 } } } }, "bad.yaml");
    expect(() => checkScenario(bad, pod)).toThrow(/bad\.yaml: control[\s\S]*points\.temperature\.stuckMs/);
    // without its patch the frozen sensor is never seen: the scenario fails, saying so
    const unpatched = runVirtual({ ...s, control: undefined }, loadSimConfig("configs/sim-pod.yaml"), pod);
    const v = unpatched.verdicts.find((x) => x.name.startsWith("rack-5's loop fails safe within 3 s"));
    expect(v?.passed).toBe(false);
    expect(v?.figure).toMatch(/^pod\.rack-5\.failsafe = 1 (only after|never)/);
  });

  it("a scenario's transmitters: the config under test rewired to read those racks' return temperature as a 4–20 mA current, refused on a pod that is not", () => {
    const s = loadHilScenario(join(LIBRARY, "sensor-loop-current-rack-6.yaml"));
    const wired = scenarioConfig(s, undefined, pod);
    const rack6 = wired.racks.find((r) => r.name === "rack-6");
    expect(rack6?.points.returnTempC).toBe("rack-6.returnTempTx");
    expect(wired.modbus.devices.find((d) => d.name === "rack-6")?.points.find((p) => p.name === "returnTempTx")?.loop4to20).toBeDefined();
    // only the racks it names
    expect(wired.racks.find((r) => r.name === "rack-5")?.points.returnTempC).toBe(pod.racks.find((r) => r.name === "rack-5")?.points.returnTempC);
    expect(scenarioConfig({ file: "x.yaml" }, undefined, pod)).toBe(pod);
    // on the pod as it is, the current's fault would reach nothing: refused, not run
    expect(() => runVirtual(s, loadSimConfig("configs/sim-pod.yaml"), pod)).toThrow(/transmitters: rack-6 reads its return temperature from rack-6\.returnTempC, not through a 4–20 mA transmitter/);
    expect(() => checkScenario(s, pod)).toThrow(/not through a 4–20 mA transmitter/);
    // a rack with no device of its name cannot be rewired
    expect(() => scenarioConfig({ transmitters: ["rack-99"], file: "t.yaml" }, undefined, pod)).toThrow(/t\.yaml[\s\S]*transmitters: rack-99: the config has no Modbus device named after the rack/);
    // a replay reads no wire
    expect(() => parseHilScenario({ name: "r", replay: "x.pwrec", transmitters: ["rack-6"], expect: base.expect }, "r.yaml")).toThrow(/transmitters: a replay's inputs are the recording's/);
  });

  it("an expectation needs exactly one kind, within needs after, and its times lie inside the run", () => {
    const two = { ...base, expect: [{ ...base.expect[0], never: {} }] };
    expect(() => parseHilScenario(two, "two.yaml")).toThrow(/needs exactly one of within, hold, never, eventually, count \(has never, eventually\)/);
    const within = { ...base, expect: [{ name: "w", signal: "pod.rack-1.isolated", is: { eq: 1 }, within: "1s" }] };
    expect(() => parseHilScenario(within, "w.yaml")).toThrow(/within and after go together/);
    const late = { ...base, expect: [{ ...base.expect[0], eventually: { by: "11s" } }] };
    expect(() => parseHilScenario(late, "late.yaml")).toThrow(/eventually\.by \(11s\) is after the run's end \(10s\)/);
    const step = { ...base, steps: [{ at: "1s", leak: "rack-3", sensor: "rack-3.returnTempC" }] };
    expect(() => parseHilScenario(step, "step.yaml")).toThrow(/steps\[0\]: needs exactly one of/);
  });
});

describe("the standard library in virtual time, through the pod's wiring and hot path", () => {
  const sim = loadSimConfig("configs/sim-pod.yaml");
  const pod = demoAgentConfig();
  const files = readdirSync(LIBRARY)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map((f) => join(LIBRARY, f));
  const runs: ScenarioRun[] = [];

  it.each(files)("%s passes", (file) => {
    const s = loadHilScenario(file);
    const r = runVirtual(s, sim, scenarioConfig(s, undefined, pod));
    runs.push(r);
    expect(r.verdicts.filter((v) => !v.passed).map((v) => `${v.name}: ${v.figure}`)).toEqual([]);
    expect(r.passed).toBe(true);
  });

  it("the same seed gives the same report, byte for byte", () => {
    const s = loadHilScenario(join(LIBRARY, "leak-rack-3.yaml"));
    const a = runVirtual(s, sim, pod);
    const b = runVirtual(s, sim, pod);
    expect(junitXml([b])).toBe(junitXml([a]));
    expect(htmlReport([b])).toBe(htmlReport([a]));
    // and a measured figure a person can read
    expect(a.verdicts[0].figure).toMatch(/^= 0 in \d+ ms \(limit 50 ms\)$/);
  });

  it("a deliberately broken config (leak isolation debounced past the run) fails the library, saying what was missed", () => {
    const broken = demoAgentConfig((d) => {
      const control = (d.control ?? {}) as Record<string, unknown>;
      control.points = { leak: { debounceFault: 100_000 } };
      d.control = control;
    });
    const r = runVirtual(loadHilScenario(join(LIBRARY, "leak-rack-3.yaml")), sim, broken);
    expect(r.passed).toBe(false);
    const failed = new Map(r.verdicts.filter((v) => !v.passed).map((v) => [v.name, v.figure]));
    expect(failed.get("rack-3's isolation valves commanded shut within 50 ms of the leak")).toMatch(/writes\.rack-3\.supplyIsolationOpen never = 0 by the end of the run \(limit 50 ms\)/);
    expect(failed.get("rack-3's power off within 100 ms of the leak (coolant and power together)")).toMatch(/never = 1/);
    expect(junitXml([r])).toMatch(/<failure type="within" message="writes\.rack-3\.supplyIsolationOpen never = 0 by the end of the run \(limit 50 ms\)">/);
  });

  describe("the reports, parsed back", () => {
    let browser: Browser;
    let dir: string;
    beforeAll(async () => {
      if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM}: npm test installs Debian's chromium (scripts/test-peers.sh) (or set CHROMIUM)`);
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      dir = tempDir("podwarden-hil-");
    }, 30_000);
    afterAll(async () => {
      await browser?.close();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    /**
     * Loads `file` in the browser as XML (an .xml or .xhtml file is parsed strictly: any error
     * shows as a <parsererror>): the parser's error, or what the report holds.
     */
    const parse = async (file: string) => {
      const page = await browser.newPage();
      try {
        await page.goto(pathToFileURL(file).href);
        const error = (await page.locator("parsererror").count()) > 0 ? await page.locator("parsererror").first().textContent() : null;
        const suites = [];
        for (const s of await page.locator("testsuite").all()) {
          const cases = [];
          for (const c of await s.locator("testcase").all()) {
            const f = c.locator("failure");
            cases.push({ name: await c.getAttribute("name"), failure: (await f.count()) > 0 ? await f.getAttribute("message") : null });
          }
          suites.push({ name: await s.getAttribute("name"), tests: Number(await s.getAttribute("tests")), failures: Number(await s.getAttribute("failures")), skipped: Number(await s.getAttribute("skipped")), cases });
        }
        return { error, suites, svgs: await page.locator("svg").count() };
      } finally {
        await page.close();
      }
    };

    it("podwarden hil run: exit 1 when anything fails, a JUnit file CI reads back, and a well-formed HTML report with a plot per expectation", async () => {
      const junit = join(dir, "hil.xml");
      const html = join(dir, "hil.html");
      // a passing library scenario and one of its expectations made impossible
      const failing = join(dir, "impossible.yaml");
      const text = readFileSync(join(LIBRARY, "leak-rack-3.yaml"), "utf8").replace("name: leak-rack-3", "name: impossible").replace("within: 50ms", "within: 1ms");
      writeFileSync(failing, text);
      const out = spawnSync("node", ["dist/cli/podwarden.js", "hil", "run", join(LIBRARY, "leak-cable-fault-rack-4.yaml"), failing, "--junit", junit, "--html", html], { encoding: "utf8" });
      expect(out.status, out.stderr).toBe(1);
      expect(out.stdout).toMatch(/^PASS leak-cable-fault-rack-4 \(30\.0 s of virtual time/m);
      expect(out.stdout).toMatch(/^FAIL impossible /m);
      expect(out.stdout).toMatch(/ {2}FAIL rack-3's isolation valves commanded shut within 50 ms of the leak: writes\.rack-3\.\w+IsolationOpen = 0 only after \d+ ms \(limit 1\.0 ms\)/);
      expect(out.stdout).toMatch(/1 of 2 scenarios failed/);

      const j = await parse(junit);
      expect(j.error).toBeNull();
      expect(j.suites.map((s) => [s.name, s.failures])).toEqual([
        ["leak-cable-fault-rack-4", 0],
        ["impossible", 1],
      ]);
      const bad = j.suites[1].cases.filter((c) => c.failure !== null);
      expect(bad).toHaveLength(1);
      expect(bad[0].failure).toMatch(/only after \d+ ms \(limit 1\.0 ms\)/);

      // the HTML as XHTML: parsed strictly, as XML
      const xhtml = join(dir, "hil.xhtml");
      copyFileSync(html, xhtml);
      const h = await parse(xhtml);
      expect(h.error).toBeNull();
      // a plot per judged expectation (leak-rack-3's on the supervisor's alarms and events are judged in virtual time too)
      expect(j.suites.map((s) => s.skipped)).toEqual([0, 0]);
      expect(h.svgs).toBe(j.suites.reduce((n, s) => n + s.tests - s.skipped, 0));

      const ok = spawnSync("node", ["dist/cli/podwarden.js", "hil", "run", join(LIBRARY, "leak-cable-fault-rack-4.yaml")], { encoding: "utf8" });
      expect(ok.status, ok.stderr).toBe(0);
      const typo = spawnSync("node", ["dist/cli/podwarden.js", "hil", "run", join(dir, "missing.yaml")], { encoding: "utf8" });
      expect(typo.status).toBe(2);
      // a signal the pod does not have: a bad file too, before anything runs
      const unknown = join(dir, "unknown.yaml");
      writeFileSync(unknown, text.replace("signal: truth.rack-3.powerOff", "signal: truth.rack-33.powerOff"));
      const wrong = spawnSync("node", ["dist/cli/podwarden.js", "hil", "run", join(LIBRARY, "leak-cable-fault-rack-4.yaml"), unknown], { encoding: "utf8" });
      expect(wrong.status).toBe(2);
      expect(wrong.stderr).toMatch(/unknown signal truth\.rack-33\.powerOff \(no rack "rack-33"/);
      expect(wrong.stdout).toBe(""); // nothing ran
    }, 60_000);
  });

  it("a campaign: each run another seed and phase against the pod's polls, the same campaign the same table, each time to safe over the runs beside its limit", () => {
    expect([0, 1, 2, 3].map((k) => campaignRun(k, 4, 7))).toEqual([
      { seed: 7, ioPhaseMs: 0 },
      { seed: 8, ioPhaseMs: 25 },
      { seed: 9, ioPhaseMs: 50 },
      { seed: 10, ioPhaseMs: 75 },
    ]);
    const s = loadHilScenario(join(LIBRARY, "leak-rack-3.yaml"));
    // seven phases, so that they fall at different points of the 20 ms leak poll
    const campaign = (): ScenarioRun[] => Array.from({ length: 7 }, (_, k) => runVirtual(s, sim, pod, campaignRun(k, 7, s.seed)));
    const runs7 = campaign();
    for (const r of runs7) expect(r.verdicts.filter((v) => !v.passed).map((v) => v.figure)).toEqual([]);
    const figures = runs7.map((r) => r.verdicts[0].measured as number);
    expect(new Set(figures).size, `the isolation write's figure moves with the phase: ${figures.join(", ")}`).toBeGreaterThan(1);
    const lines = summariseCampaign(runs7);
    const iso = lines[0];
    expect(iso).toMatchObject({ scenario: "leak-rack-3", expectation: s.expect[0].name, kind: "within", runs: 7, passed: 7, skipped: 0, max: Math.max(...figures), limitMs: 50 });
    expect(iso.p50).toBeLessThanOrEqual(iso.p99);
    expect(summariseCampaign(campaign())).toEqual(lines);
    const table = campaignTable(lines);
    expect(table).toMatch(/\| leak-rack-3 \| rack-3's isolation valves commanded shut within 50 ms of the leak \| 7\/7 \| [\d.]+ ms \| [\d.]+ ms \| [\d.]+ ms \| 50 ms \|/);
    // only the within expectations unless asked
    expect(table.split("\n")).toHaveLength(2 + lines.filter((l) => l.kind === "within").length);
    // a run of a campaign is named so in the reports
    runs7[2].campaign = { run: 3, of: 7, ...campaignRun(2, 7, s.seed) };
    expect(junitXml([runs7[2]])).toMatch(/<testsuite name="leak-rack-3 #3"[\s\S]*<property name="seed" value="9"\/>\s*<property name="campaign" value="run 3 of 7, I\/O phase 28 ms"\/>/);
  });

  it("podwarden hil run --repeat: a campaign's runs and its table; refused for a replay and for a count that is not one", () => {
    const out = spawnSync("node", ["dist/cli/podwarden.js", "hil", "run", join(LIBRARY, "leak-chatter-rack-6.yaml"), "--repeat", "3"], { encoding: "utf8" });
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^PASS leak-chatter-rack-6 run 3 of 3 \(/m);
    expect(out.stdout).toMatch(/campaign: 3 runs of each scenario, seeds and phases \(0-100 ms\) varied/);
    expect(out.stdout).toMatch(/\| leak-chatter-rack-6 \| .* \| 3\/3 \|/);
    const bad = spawnSync("node", ["dist/cli/podwarden.js", "hil", "run", join(LIBRARY, "leak-chatter-rack-6.yaml"), "--repeat", "lots"], { encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--repeat lots: a whole number of runs/);
    const dir = tempDir("podwarden-hil-repeat-");
    try {
      const replay = join(dir, "a-replay.yaml");
      writeFileSync(replay, "name: a-replay\nreplay: capture.log\nexpect:\n  - { name: e, signal: pod.rack-1.isolated, is: { eq: 1 }, never: {} }\n");
      const refused = spawnSync("node", ["dist/cli/podwarden.js", "hil", "run", replay, "--repeat", "2"], { encoding: "utf8" });
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toMatch(/--repeat: a replay is the same run every time/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
