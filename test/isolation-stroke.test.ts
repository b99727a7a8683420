// Partial-stroke tests of isolation valves: one test against the simulator's stroked valve
// (clean, seized, seizing part-way, slow, too fast for the test), the pod's tests with their
// refusals, aborts, alarms, records and schedule, and the wiring that carries a test's close.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as L from "../hotpath-as/assembly/layout.js";
import { demoAgentConfig } from "../cli/demo-config.js";
import { StrokeTest, type LimitReading, type StrokeOutputs } from "../agent/health/isolation-stroke.js";
import { IsolationStrokes, STROKE_STEP_MS, type StrokeHost } from "../agent/health/isolation-strokes.js";
import type { PartialStrokeSection } from "../agent/health/schema.js";
import type { AgentEvent, ProblemReport } from "../agent/pod-api.js";
import { podLayout } from "../pod/layout.js";
import { PodWiring } from "../pod/wiring.js";
import { StrokedValve } from "../sim/plant/valve.js";
import { tempDir } from "./helpers/temp-dirs.js";

/** A limit switch as a device reads it from the valve: made at the last 1 % of travel. */
const openLimit = (v: StrokedValve): number => (v.position >= 99 ? 1 : 0);
const closedLimit = (v: StrokedValve): number => (v.position <= 1 ? 1 : 0);

/**
 * Runs one test against a simulated valve: the valve stepped every ms, its limit switches
 * polled every `pollMs`, the test stepped every STROKE_STEP_MS. Returns the verdict and the
 * lowest position the valve reached.
 */
function runOne(valve: StrokedValve, o: { holdMs?: number; timeoutMs?: number; pollMs?: number; during?: (tMs: number, v: StrokedValve) => void } = {}) {
  const test = new StrokeTest({ holdMs: o.holdMs ?? 400, timeoutMs: o.timeoutMs ?? 3000 }, 0);
  const poll = o.pollMs ?? 100;
  let open: LimitReading = { value: openLimit(valve), atMs: 0 };
  let closed: LimitReading = { value: closedLimit(valve), atMs: 0 };
  let lowest = valve.position;
  let closeHeld = true;
  for (let t = 0; t < 60_000; t++) {
    valve.command = closeHeld ? 0 : 100;
    valve.step(0.001);
    o.during?.(t, valve);
    lowest = Math.min(lowest, valve.position);
    if (t % poll === 0) {
      open = { value: openLimit(valve), atMs: t };
      closed = { value: closedLimit(valve), atMs: t };
    }
    if (t % STROKE_STEP_MS === 0) {
      const v = test.step(t, open, closed);
      closeHeld = test.closing;
      if (v !== null) return { verdict: v, lowest, valve, endMs: t };
    }
  }
  throw new Error("the test never ended");
}

describe("one partial-stroke test against the simulator's valve", () => {
  it("a sound valve passes: it leaves its open limit, travels about the configured share, and comes back", () => {
    const { verdict, lowest, valve } = runOne(new StrokedValve(4, 100));
    expect(verdict.state).toBe("passed");
    expect(verdict.critical).toBeUndefined();
    // 1 % of a 4 s stroke is 40 ms; the switch is read every 100 ms
    expect(verdict.breakawayMs).toBeGreaterThanOrEqual(40);
    expect(verdict.breakawayMs).toBeLessThanOrEqual(140);
    expect(verdict.heldMs).toBe(400);
    // 400 ms of a 4 s stroke: 10 %, and back in the time it took, to the next poll
    expect(100 - lowest).toBeCloseTo(10, 0);
    expect(verdict.returnMs).toBeGreaterThanOrEqual(360);
    expect(verdict.returnMs).toBeLessThanOrEqual(460);
    expect(valve.position).toBeGreaterThanOrEqual(99);
  });

  it("a seized valve fails, Critical, once the timeout passes with its open limit still made; the close is released", () => {
    const v = new StrokedValve(4, 100);
    v.stuck = true;
    const { verdict, endMs } = runOne(v, { timeoutMs: 3000 });
    expect(verdict).toMatchObject({ state: "failed", critical: true });
    expect(verdict.reason).toMatch(/did not leave its open limit within 3\.0 s of the close command: stuck open/);
    expect(endMs).toBe(3000);
    expect(verdict.breakawayMs).toBeUndefined();
  });

  it("a valve that seizes part-closed fails, Critical: it did not come back", () => {
    const { verdict, valve } = runOne(new StrokedValve(4, 100), {
      during: (_, v) => {
        if (v.position < 95) v.stuck = true;
      },
    });
    expect(verdict).toMatchObject({ state: "failed", critical: true });
    expect(verdict.reason).toMatch(/did not come back to its open limit/);
    expect(verdict.breakawayMs).toBeDefined();
    expect(valve.position).toBeLessThan(99);
  });

  it("a slow valve still passes (it moved), with its slowness in the figures; the close is held until it is seen to leave", () => {
    const v = new StrokedValve(4, 100);
    v.faults.strokeFactor = 10; // 1 % takes 400 ms
    const { verdict, lowest } = runOne(v);
    expect(verdict.state).toBe("passed");
    expect(verdict.breakawayMs).toBeGreaterThanOrEqual(400);
    expect(verdict.heldMs).toBeGreaterThanOrEqual(400);
    expect(100 - lowest).toBeLessThan(3);
  });

  it("a long stroke passes: the way back may take as long as the close was held, beyond timeoutS", () => {
    // 10 % of a 40 s stroke: held 4 s, back in about 4 s, with a 3 s timeout
    const { verdict } = runOne(new StrokedValve(40, 100), { holdMs: 4000, timeoutMs: 3000 });
    expect(verdict.state).toBe("passed");
    expect(verdict.returnMs).toBeGreaterThan(3000);
  });

  it("a valve far faster than fullStrokeS says goes all the way: failed, not Critical (it does close), and released", () => {
    const { verdict } = runOne(new StrokedValve(0.2, 100));
    expect(verdict.state).toBe("failed");
    expect(verdict.critical).toBeUndefined();
    expect(verdict.reason).toMatch(/all the way to its closed limit/);
  });

  it("an open limit switch without a good reading aborts the test; so does a stop from outside", () => {
    const t = new StrokeTest({ holdMs: 400, timeoutMs: 3000 }, 0);
    expect(t.step(20, { value: 1, atMs: 0 }, null)).toBeNull();
    expect(t.step(40, null, null)).toMatchObject({ state: "aborted", reason: "its open limit switch has no good reading" });
    const u = new StrokeTest({ holdMs: 400, timeoutMs: 3000 }, 0);
    expect(u.abort(100, "a leak in the pod (rack-2)")).toMatchObject({ state: "aborted", reason: "a leak in the pod (rack-2)" });
  });

  it("a reading taken before the close command says nothing: an old 0 is not a breakaway", () => {
    const t = new StrokeTest({ holdMs: 400, timeoutMs: 3000 }, 1000);
    expect(t.step(1500, { value: 0, atMs: 900 }, null)).toBeNull();
    expect(t.closing).toBe(true);
  });
});

describe("the pod's partial-stroke tests", () => {
  const CONFIG: PartialStrokeSection = { travelPct: 10, fullStrokeS: 4, timeoutS: 3, intervalH: 0, gapS: 60 };
  let dir: string;
  let now = 0;
  /** the hot path's outputs the tests read: two racks, both normal */
  let out: { [K in keyof StrokeOutputs]: number[] };
  let failsafe = false;
  let valves: { supply: StrokedValve; return: StrokedValve }[];
  let held: number[];
  let events: AgentEvent[];
  let problems: Map<string, ProblemReport>;
  let limitGood = true;
  /** a rack whose isolation valves the main thread writes (-1: none) */
  let serialRack = -1;
  /** every manager a test made: ended and settled before its directory goes */
  let made: IsolationStrokes[] = [];
  const strokes = (cfg: PartialStrokeSection = CONFIG): IsolationStrokes => {
    const s = new IsolationStrokes(host(RACKS), cfg, dir);
    made.push(s);
    return s;
  };

  const host = (racks: StrokeHost["racks"]): StrokeHost => ({
    racks,
    outputs: () => out,
    podFailsafe: () => failsafe,
    limit: (id) => {
      const [rack, which] = id.split(".");
      const v = valves[Number(rack.slice(1))][which.startsWith("supply") ? "supply" : "return"];
      if (!limitGood) return null;
      return { value: which.endsWith("OpenLimit") ? openLimit(v) : closedLimit(v), atMs: now };
    },
    holdBounded: (rack) => !(serialRack === rack),
    setStroke: (rack, bits) => (held[rack] = bits),
    emit: (e) => events.push(e),
    reportProblem: (id, p) => problems.set(id, p),
    resolveProblem: (id) => problems.delete(id),
    log: () => undefined,
    monoMs: () => now,
    wallMs: () => Date.UTC(2026, 11, 3) + now,
  });
  const RACKS: StrokeHost["racks"] = [
    { name: "r0", loop: 0, supplyOpenLimit: "r0.supplyOpenLimit", supplyClosedLimit: "r0.supplyClosedLimit", returnOpenLimit: "r0.returnOpenLimit" },
    { name: "r1", loop: 1, returnOpenLimit: "r1.returnOpenLimit" },
  ];

  /** advances time by ms: the valves follow what the tests hold, the tests' timers run */
  const advance = (ms: number): void => {
    for (let t = 0; t < ms; t++) {
      now++;
      valves.forEach((v, r) => {
        v.supply.command = held[r] & 1 ? 0 : 100;
        v.return.command = held[r] & 2 ? 0 : 100;
        v.supply.step(0.001);
        v.return.step(0.001);
      });
      vi.advanceTimersByTime(1);
    }
  };
  const savedValves = (): unknown[] => (JSON.parse(readFileSync(join(dir, "strokes.json"), "utf8")) as { valves: unknown[] }).valves;
  const ended = (): Extract<AgentEvent, { type: "stroke.ended" }>[] => events.filter((e): e is Extract<AgentEvent, { type: "stroke.ended" }> => e.type === "stroke.ended");

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    dir = tempDir("podwarden-stroke-");
    now = 0;
    out = { loopStatus: [L.LS_AUTOMATIC, L.LS_AUTOMATIC], rackState: [L.RACK_NORMAL, L.RACK_NORMAL], rackStatus: [0, 0], rackSupplyOpen: [1, 1], rackReturnOpen: [1, 1] };
    failsafe = false;
    limitGood = true;
    serialRack = -1;
    valves = [0, 1].map(() => ({ supply: new StrokedValve(4, 100), return: new StrokedValve(4, 100) }));
    held = [0, 0];
    events = [];
    problems = new Map();
  });
  afterEach(async () => {
    for (const s of made) {
      s.end("test end");
      await s.settled();
    }
    made = [];
    vi.useRealTimers();
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a test it cannot run or see, saying why", () => {
    const s = strokes();
    s.begin();
    expect(s.refusal(1, "supply")).toMatch(/r1's supply isolation valve has no open limit switch/);
    out.rackState[0] = L.RACK_ISOLATED;
    expect(s.refusal(0, "supply")).toMatch(/a leak in the pod \(r0\)|r0 is isolated/);
    out.rackState[0] = L.RACK_NORMAL;
    out.rackStatus[1] = L.RS_LEAK_WET;
    expect(s.refusal(0, "supply")).toBe("a leak in the pod (r1)");
    out.rackStatus[1] = L.RS_MANUAL_ISOLATE | L.RS_LATCHED; // an operator's isolation of another rack is no leak
    expect(s.refusal(0, "supply")).toBeNull();
    out.rackStatus[0] = L.RS_MANUAL_ISOLATE | L.RS_LATCHED;
    expect(s.refusal(0, "supply")).toBe("r0 is isolated");
    out.rackStatus = [0, 0];
    out.loopStatus[0] = L.LS_INTERLOCK_FAILSAFE | L.LS_PV_BAD;
    expect(s.refusal(0, "supply")).toMatch(/r0's loop is held in fail-safe/);
    out.loopStatus[0] = L.LS_AUTOMATIC;
    out.rackStatus[0] = L.RS_FLOW_BAD;
    expect(s.refusal(0, "supply")).toBe("r0's flow reading is bad");
    out.rackStatus[0] = 0;
    failsafe = true;
    expect(s.refusal(0, "supply")).toBe("the pod is in fail-safe");
    failsafe = false;
    limitGood = false;
    expect(s.refusal(0, "supply")).toBe("r0.supplyOpenLimit has no good reading");
    limitGood = true;
    valves[0].supply.position = 50;
    expect(s.refusal(0, "supply")).toMatch(/not at its open limit/);
    valves[0].supply.position = 100;
    serialRack = 0;
    expect(s.refusal(0, "supply")).toMatch(/written by the agent's main thread .* not tested/);
    serialRack = -1;
    s.start(0, "supply", "eng");
    expect(() => s.start(0, "return", "eng")).toThrow(/a test of r0\.supply is running: one valve at a time/);
    s.end("test end");
    expect(held).toEqual([0, 0]);
  });

  it("passes a sound valve: held, released, figures in the event and the record, no alarm", () => {
    const s = strokes();
    s.begin();
    const started = s.start(0, "supply", "eng");
    expect(started).toMatchObject({ rack: "r0", valve: "supply", state: "running", by: "eng" });
    expect(held[0]).toBe(1);
    expect(s.status().running).toMatchObject({ rack: "r0", valve: "supply" });
    advance(2000);
    expect(held[0]).toBe(0);
    expect(ended()).toHaveLength(1);
    const r = ended()[0];
    expect(r).toMatchObject({ rack: "r0", valve: "supply", state: "passed", heldMs: 400 });
    expect(r.breakawayMs).toBeLessThanOrEqual(60);
    expect(r.returnMs).toBeGreaterThan(300);
    expect(s.status()).toMatchObject({ running: null, recent: { state: "passed" }, last: [{ rack: "r0", valve: "supply", state: "passed" }] });
    expect(problems.size).toBe(0);
    expect(valves[0].supply.position).toBeGreaterThanOrEqual(99);
    s.end("test end");
  });

  it("a seized valve raises Critical stroke:<rack>.<valve>, kept across a restart, and cleared by a test it passes", async () => {
    const s = strokes();
    s.begin();
    valves[0].return.stuck = true;
    s.start(0, "return", "eng");
    advance(3100);
    expect(held[0]).toBe(0);
    expect(ended()[0]).toMatchObject({ state: "failed", critical: true });
    expect(problems.get("stroke:r0.return")).toMatchObject({ severity: "Critical", source: "r0" });
    expect(problems.get("stroke:r0.return")?.message).toMatch(/r0 return isolation valve failed its partial-stroke test .*stuck open/);
    s.end("restart");
    await vi.waitFor(() => expect(savedValves()).toHaveLength(1), { interval: 5, timeout: 10_000 });
    // the restart: the alarm is raised again from the record
    problems.clear();
    const again = strokes();
    again.begin();
    expect(problems.get("stroke:r0.return")?.severity).toBe("Critical");
    valves[0].return.stuck = false;
    again.start(0, "return", "eng");
    advance(2000);
    expect(ended().at(-1)?.state).toBe("passed");
    expect(problems.has("stroke:r0.return")).toBe(false);
    again.end("test end");
  });

  it("a leak anywhere in the pod releases the close at once: aborted, no alarm, no record", () => {
    const s = strokes();
    s.begin();
    s.start(0, "supply", "eng");
    advance(100);
    out.rackStatus[1] = L.RS_LEAK_WET;
    s.step(); // what an interlock change does, before the next step is due
    expect(held[0]).toBe(0);
    expect(ended()[0]).toMatchObject({ state: "aborted", reason: "a leak in the pod (r1)" });
    expect(s.status()).toMatchObject({ running: null, recent: { state: "aborted" }, last: [] });
    expect(problems.size).toBe(0);
    s.end("test end");
  });

  it("the rack entering an interlock aborts its test; so do the pod's fail-safe and a stop", () => {
    const s = strokes();
    s.begin();
    s.start(0, "supply", "eng");
    out.loopStatus[0] = L.LS_INTERLOCK_FAILSAFE;
    advance(STROKE_STEP_MS);
    expect(ended().at(-1)).toMatchObject({ state: "aborted", reason: "r0's loop is held in fail-safe (a bad input or command)" });
    out.loopStatus[0] = L.LS_AUTOMATIC;
    advance(1000);
    s.start(0, "supply", "eng");
    failsafe = true;
    advance(STROKE_STEP_MS);
    expect(ended().at(-1)).toMatchObject({ state: "aborted", reason: "the pod went to fail-safe" });
    failsafe = false;
    advance(1000);
    s.start(0, "supply", "eng");
    expect(s.abort("aborted by eng")).toMatchObject({ state: "aborted", reason: "aborted by eng" });
    expect(s.abort("again")).toBeNull();
    expect(held).toEqual([0, 0]);
    s.end("test end");
  });

  it("a stalled main thread aborts the test on its next step (the leak thread released the hold meanwhile): no verdict, no alarm", () => {
    const s = strokes();
    s.begin();
    s.start(0, "supply", "eng");
    advance(100);
    now += 2500; // the main thread blocked: no timer ran
    s.step();
    expect(ended().at(-1)).toMatchObject({ state: "aborted", reason: "the agent's main thread stalled for 2.5 s during the test: no verdict" });
    expect(held[0]).toBe(0);
    expect(problems.size).toBe(0);
  });

  it("a damaged record file is moved aside with a Warning; one that cannot be written raises state:strokes-write", async () => {
    writeFileSync(join(dir, "strokes.json"), "{ not json");
    const s = strokes();
    s.begin();
    expect(problems.get("state:strokes")?.message).toMatch(/unreadable/);
    rmSync(dir, { recursive: true, force: true });
    s.start(0, "supply", "eng");
    advance(2000);
    await vi.waitFor(() => expect(problems.get("state:strokes-write")?.severity).toBe("Warning"), { interval: 5, timeout: 10_000 });
    s.end("test end");
  });

  it("the schedule tests each valve with a limit switch when due, the most overdue first, one at a time, a gap apart; a refused one waits for the next gap", async () => {
    const cfg = { ...CONFIG, intervalH: 1 / 3600, gapS: 2 }; // every second, for the test
    const s = strokes(cfg);
    s.begin();
    await vi.waitFor(() => expect(savedValves()).toHaveLength(3), { interval: 5, timeout: 10_000 });
    out.rackStatus[1] = L.RS_LEAK_WET; // refused while a leak is on
    advance(1500);
    expect(events.filter((e) => e.type === "stroke.started")).toHaveLength(0);
    out.rackStatus[1] = 0;
    advance(9000);
    const started = events.filter((e): e is Extract<AgentEvent, { type: "stroke.started" }> => e.type === "stroke.started");
    expect(started.map((e) => `${e.rack}.${e.valve}:${e.by}`).slice(0, 3).sort()).toEqual(["r0.return:schedule", "r0.supply:schedule", "r1.return:schedule"]);
    expect(ended().every((e) => e.state === "passed")).toBe(true);
    s.end("test end");
  });
});

describe("the wiring carries a test's close", () => {
  const DEMO = demoAgentConfig(() => undefined);
  it("a held valve is written closed over the hot path's open, never open over its close, and released to the hot path's command", () => {
    const w = new PodWiring(DEMO, podLayout(DEMO), { writeCaps: false });
    const writes = new Map<string, number>();
    const sink = { setOutput: (id: string, v: number) => writes.set(id, v) };
    const n = DEMO.racks.length;
    const open = { rackSupplyOpen: new Array<number>(n).fill(1), rackReturnOpen: new Array<number>(n).fill(1) };
    const r = DEMO.racks[2].outputs;
    w.setStroke(2, 1);
    w.writeIsolation(open, sink);
    expect([writes.get(r.supplyIsolation), writes.get(r.returnIsolation)]).toEqual([0, 1]);
    expect(writes.get(DEMO.racks[1].outputs.supplyIsolation)).toBe(1);
    // the rack's power follows the hot path's commands alone: a partial stroke keeps its coolant
    expect(PodWiring.noCoolant(open, 2)).toBe(false);
    const closed = { rackSupplyOpen: [...open.rackSupplyOpen], rackReturnOpen: [...open.rackReturnOpen] };
    closed.rackSupplyOpen[2] = 0;
    closed.rackReturnOpen[2] = 0;
    w.setStroke(2, 2);
    w.writeIsolation(closed, sink);
    expect([writes.get(r.supplyIsolation), writes.get(r.returnIsolation)]).toEqual([0, 0]);
    w.setStroke(2, 0);
    w.writeIsolation(open, sink);
    expect([writes.get(r.supplyIsolation), writes.get(r.returnIsolation)]).toEqual([1, 1]);
  });
});

