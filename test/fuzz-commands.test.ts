// Command fuzzing: 100,000 generated and mutated commands against the authorizer, and those it
// accepts through the executor of a real agent on the simulator, from a seed (FUZZ_SEED) after
// the regression corpus (test/corpus/commands). Oracles that do not trust the code under test: a
// mutated envelope may pass only if it still says exactly what was signed; a re-signed body may
// pass only if it keeps every invariant checked here by hand; the executor may carry out only
// what lies inside the envelope. How far the cases reach (each check, the executor, its envelope)
// is counted and printed, and each stage must be reached by enough of them.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../agent/agent.js";
import { CHECKS, CommandAuthorizer, type Check } from "../agent/commands/authorizer.js";
import { executeCommand } from "../agent/commands/executor.js";
import { commandBody, signedCommand, type CommandSpec } from "../agent/commands/client.js";
import { COMMANDS, type CommandName } from "../agent/commands/schema.js";
import { generateCommandKey, parsePrivateKey } from "../agent/commands/signing.js";
import { agentConfig, demoConfigFor, testAgent } from "./helpers/agent.js";
import { corpus, fuzzSeed, mutateBytes, mutateJson, Prng } from "./helpers/fuzz.js";
import { countWords, fullCount } from "./helpers/counts.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";

/** Generated cases: 100,000 under `npm run soak -- --full-counts`, a sixth in `npm test` (helpers/counts.ts). */
const CASES = fullCount(100_000);

// the replay guard fsyncs every accepted seq: keep it on tmpfs so 100,000 cases stay quick
const stateDir = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "pw-fuzz-"));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

const eng = generateCommandKey();
const ops = generateCommandKey();
const auth = new CommandAuthorizer({
  site: "s1",
  pod: "p1",
  keys: [
    { id: "eng", publicKey: eng.publicRaw, roles: ["engineer"] },
    { id: "ops", publicKey: ops.publicRaw, roles: ["operator"] },
  ],
  maxTtlS: 300,
  clockSkewS: 30,
  stateDir,
});

const VALID_PARAMS: Record<CommandName, Record<string, unknown>> = {
  setpoint: { loop: "rack-1.valve", value: 40, leaseS: 60 },
  mode: { loop: "rack-2.valve", mode: "Manual", outputPct: 30 },
  "ack-alarm": { id: "leak:rack-1" },
  "reset-leak": { rack: "rack-1" },
  "isolate-rack": { rack: "rack-3" },
  "return-rack": { rack: "rack-3" },
  "power-budget": { podKw: 500 },
  snapshot: {},
  record: {},
  tune: { loop: "rack-4.valve", action: "status" },
  gains: { loop: "rack-4.valve" },
  stroke: { action: "status" },
  force: { output: "rack-2.valveCommandPct", value: 40, leaseS: 30 },
  config: { action: "status" },
};

/** Independent statement of what an accepted command may contain (not the ajv schemas). */
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;
const isName = (x: unknown): boolean => typeof x === "string" && x.length >= 1 && x.length <= 64 && NAME.test(x);
const finiteIn = (x: unknown, lo: number, hi: number): boolean => typeof x === "number" && Number.isFinite(x) && x >= lo && x <= hi;
const PARAM_RULES: Record<CommandName, Record<string, (x: unknown) => boolean>> = {
  setpoint: { loop: isName, value: (x) => finiteIn(x, -1e6, 1e6), leaseS: (x) => Number.isInteger(x) && finiteIn(x, 1, 604_800) },
  mode: { loop: isName, mode: (x) => ["Automatic", "Manual", "Override", "Disabled"].includes(x as string), outputPct: (x) => finiteIn(x, 0, 100), leaseS: (x) => Number.isInteger(x) && finiteIn(x, 1, 604_800), maintenance: (x) => typeof x === "boolean" },
  "ack-alarm": { id: (x) => typeof x === "string" && x.length >= 1 && x.length <= 200 },
  "reset-leak": { rack: isName },
  "isolate-rack": { rack: isName },
  "return-rack": { rack: isName },
  "power-budget": { podKw: (x) => finiteIn(x, 0, 1e6) },
  snapshot: {},
  record: {},
  tune: { loop: isName, action: (x) => ["start", "abort", "status"].includes(x as string) },
  gains: { loop: isName, rule: (x) => ["simc", "tyreus-luyben", "ziegler-nichols"].includes(x as string), kp: (x) => finiteIn(x, 0, 1e6), ki: (x) => finiteIn(x, 0, 1e6), kd: (x) => finiteIn(x, 0, 1e6), revert: (x) => x === true },
  stroke: { rack: isName, valve: (x) => x === "supply" || x === "return", action: (x) => ["start", "abort", "status"].includes(x as string) },
  force: { output: isName, value: (x) => finiteIn(x, -1e6, 1e6), leaseS: (x) => Number.isInteger(x) && finiteIn(x, 1, 604_800), release: (x) => x === true },
  config: { action: (x) => x === "apply" || x === "status", yaml: (x) => typeof x === "string" && x.length >= 1 && x.length <= 128 * 1024, windowS: (x) => Number.isInteger(x) && finiteIn(x, 1, 3600) },
};
const REQUIRED: Record<CommandName, string[]> = { setpoint: ["loop", "value", "leaseS"], mode: [], "ack-alarm": ["id"], "reset-leak": ["rack"], "isolate-rack": ["rack"], "return-rack": ["rack"], "power-budget": ["podKw"], snapshot: [], record: [], tune: ["loop", "action"], gains: ["loop"], stroke: ["action"], force: ["output"], config: ["action"] };

function invariantViolations(topic: CommandName, body: Record<string, unknown>, now: number, lastSeq: Map<string, number>, keyId: string): string[] {
  const bad: string[] = [];
  const keys = Object.keys(body).sort().join(",");
  if (keys !== "command,expiresAt,issuedAt,params,pod,seq,transaction,v") bad.push(`body keys ${keys}`);
  if (body.v !== 1) bad.push("v");
  if (body.pod !== "s1/p1") bad.push("pod");
  if (body.command !== topic) bad.push("command/topic");
  if (typeof body.transaction !== "string" || body.transaction.length < 1 || body.transaction.length > 64) bad.push("transaction");
  const seq = body.seq;
  if (!Number.isSafeInteger(seq) || (seq as number) < 1 || (seq as number) <= (lastSeq.get(keyId) ?? 0)) bad.push(`seq ${String(seq)}`);
  const issued = Date.parse(String(body.issuedAt));
  const expires = Date.parse(String(body.expiresAt));
  if (!(expires > now && expires > issued && expires - issued <= 300_000 && issued <= now + 30_000)) bad.push("times");
  const params = body.params;
  if (typeof params !== "object" || params === null || Array.isArray(params)) bad.push("params");
  else {
    const rules = PARAM_RULES[topic];
    for (const [k, v] of Object.entries(params)) if (!(k in rules) || !rules[k](v)) bad.push(`param ${k}=${JSON.stringify(v)}`);
    for (const k of REQUIRED[topic]) if (!(k in params)) bad.push(`missing ${k}`);
  }
  if (keyId === "ops" && ["reset-leak", "power-budget", "tune", "gains", "config"].includes(topic)) bad.push("role");
  return bad;
}

/** What an executed command must have stayed inside, checked against the agent's limits by hand; null if it did. */
function outsideEnvelope(command: CommandName, p: Record<string, unknown>, a: Agent): string | null {
  const lim = a.limits;
  const within = (v: unknown, r: { min: number; max: number }): boolean => typeof v === "number" && v >= r.min && v <= r.max;
  const pump = p.loop === "cdu.pump";
  if (command === "setpoint") {
    if (!within(p.value, pump ? lim.dpKpa : lim.returnTempC)) return `setpoint ${String(p.value)} on ${String(p.loop)}`;
    if (!((p.leaseS as number) <= lim.maxLeaseS)) return `lease ${String(p.leaseS)} s`;
  }
  if (command === "mode" && p.outputPct !== undefined && !within(p.outputPct, pump ? lim.pumpOutputPct : lim.rackOutputPct)) return `output ${JSON.stringify(p.outputPct)} % on ${JSON.stringify(p.loop)}`;
  if (command === "mode" && p.mode === "Override" && !((p.leaseS as number) <= lim.maxLeaseS)) return `an Override leased ${String(p.leaseS)} s`;
  if (command === "power-budget" && !within(p.podKw, lim.powerBudgetKw)) return `pod budget ${String(p.podKw)} kW`;
  return null;
}

/** A corpus case: a literal payload, or a command signed at run time (fresh times) and then edited. */
interface CorpusCase {
  why: string;
  topic: CommandName;
  payload?: string;
  signed?: { command: CommandName; params: Record<string, unknown>; edit: "signature-insert-char" | "signature-no-padding" | "signature-urlsafe" | "signature-unused-bits" };
}

function corpusPayload(c: CorpusCase): string {
  if (c.payload !== undefined) return c.payload;
  const s = c.signed!;
  const env = JSON.parse(signedCommand({ site: "s1", pod: "p1", command: s.command, params: s.params, seq: Date.now(), keyId: "eng", privateKey: parsePrivateKey(eng.privatePem) })) as { signature: string };
  if (s.edit === "signature-insert-char") env.signature = `${env.signature.slice(0, 40)}}${env.signature.slice(40)}`;
  if (s.edit === "signature-no-padding") env.signature = env.signature.replace(/=+$/, "");
  if (s.edit === "signature-unused-bits") {
    // the 86th digit's low 4 bits are unused: flip one of them
    const i = 85;
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    env.signature = env.signature.slice(0, i) + alphabet[alphabet.indexOf(env.signature[i]) ^ 1] + env.signature.slice(i + 1);
  }
  if (s.edit === "signature-urlsafe") env.signature = env.signature.replace(/\+/g, "-").replace(/\//g, "_");
  return JSON.stringify(env);
}

/** A signed command with a well-formed body whose times, seq and params vary: it gets past the schema. */
function wellFormed(rng: Prng, command: CommandName, seq: number, lastAccepted: number, now: number): { params: Record<string, unknown>; seq: number; nowMs: number; ttlS: number } {
  const num = (): number => rng.pick([rng.range(-1e6, 1e6), rng.range(-50, 150), rng.range(0, 100), rng.range(20, 60), rng.int(1, 7200), 0, -1]);
  const name = (what: "loop" | "rack"): string =>
    rng.chance(0.8) ? (what === "loop" ? rng.pick(["rack-1.valve", "rack-4.valve", "rack-8.valve", "cdu.pump"]) : `rack-${rng.int(1, 8)}`) : rng.pick(["rack-9", "rack-0.valve", "cdu", "x"]);
  const params = structuredClone(VALID_PARAMS[command]);
  for (const k of Object.keys(params)) {
    if (!rng.chance(0.5)) continue;
    if (k === "loop" || k === "rack") params[k] = name(k);
    else if (k === "mode") params[k] = rng.pick(["Automatic", "Manual", "Override", "Disabled"]);
    else if (k === "id") params[k] = rng.pick(["leak:rack-1", "nope", "device:rack-4"]);
    else if (k === "output") params[k] = rng.pick(["rack-2.valveCommandPct", "cdu.pumpSpeedCommandPct", "rack-3.supplyIsolationOpen", "rack-1.powerOff", "rack-9.valveCommandPct"]);
    else params[k] = k === "leaseS" ? rng.int(1, 7200) : num();
  }
  if (command === "mode" && rng.chance(0.3)) params.leaseS = rng.int(1, 7200);
  if (command === "mode" && rng.chance(0.1)) Object.assign(params, { maintenance: rng.chance(0.5) });
  // times: mostly valid; some expired, some from the future, some living too long
  const t = rng.next();
  const nowMs = t < 0.8 ? now - rng.int(0, 20_000) : t < 0.88 ? now - rng.int(61_000, 600_000) : t < 0.95 ? now + rng.int(31_000, 600_000) : now;
  const ttlS = t >= 0.95 ? rng.int(301, 3600) : 60;
  // seq: mostly fresh; some replay an accepted one
  return { params, seq: rng.chance(0.1) && lastAccepted > 0 ? lastAccepted : seq, nowMs, ttlS };
}

describe("command fuzzing", () => {
  let t: TestSim;
  let agent: Agent;
  beforeAll(async () => {
    t = await startTestSim();
    ({ agent } = testAgent(agentConfig(demoConfigFor(t.sim, (c) => delete c.stateDir))));
    await agent.start();
  }, 30_000);
  afterAll(async () => {
    await agent?.stop({ driveSafe: false, reason: "test end" });
    await t?.stop();
  });

  it("rejects every case in the regression corpus", async () => {
    for (const { file, value } of corpus<CorpusCase>("commands")) {
      const v = await auth.check(value.topic, Buffer.from(corpusPayload(value)), Date.now());
      expect(v.ok, `${file}: ${value.why}`).toBe(false);
    }
  });

  it(`accepts nothing it should not, over ${countWords(CASES)} generated and mutated commands`, async () => {
    const seed = fuzzSeed(0x5eed_c0de);
    const rng = new Prng(seed);
    const lastSeq = new Map<string, number>();
    let seq = 1;
    const counts = { cases: 0, accepted: 0, envelope: 0, json: 0, resigned: 0, wellFormed: 0 };
    // how far each case got: the check that stopped it, or the executor's verdict
    const stoppedAt = new Map<Check | "executor-ok" | `executor-${string}`, number>();
    const note = (k: Check | "executor-ok" | `executor-${string}`): void => void stoppedAt.set(k, (stoppedAt.get(k) ?? 0) + 1);
    let lastAccepted = 0;
    const polluted = (): boolean => ({} as Record<string, unknown>).polluted !== undefined;
    const fail = (what: string, payload: string): never => {
      throw new Error(`FUZZ_SEED=${seed} case ${counts.cases}: ${what}\npayload: ${payload.slice(0, 2000)}`);
    };
    while (counts.cases < CASES) {
      const command = rng.pick(COMMANDS);
      const keyId = rng.chance(0.8) ? "eng" : "ops";
      const spec: CommandSpec = { site: "s1", pod: "p1", command, params: structuredClone(VALID_PARAMS[command]), seq: seq++, keyId, privateKey: parsePrivateKey(keyId === "eng" ? eng.privatePem : ops.privatePem) };
      const original = signedCommand(spec);
      const originalEnv = JSON.parse(original) as Record<string, unknown>;
      // a group of mutations per signed original keeps the case rate up
      for (let k = 0; k < 10 && counts.cases < CASES; k++) {
        counts.cases++;
        const now = Date.now();
        const topic: CommandName = rng.chance(0.9) ? command : rng.pick(COMMANDS);
        const mode = rng.next();
        let payload: string;
        let resigned = false;
        if (mode < 0.25) {
          counts.envelope++;
          payload = mutateBytes(rng, Buffer.from(original)).toString("latin1");
        } else if (mode < 0.4) {
          counts.wellFormed++;
          resigned = true;
          payload = signedCommand({ ...spec, ...wellFormed(rng, command, seq++, lastAccepted, now) });
        } else if (mode < 0.6) {
          counts.json++;
          payload = JSON.stringify(mutateJson(rng, originalEnv));
        } else {
          counts.resigned++;
          resigned = true;
          // mission control itself sends nonsense, correctly signed
          const body = mutateJson(rng, commandBody({ ...spec, seq: seq++ })) as never;
          payload = signedCommand(spec, body);
        }
        const v = await auth.check(topic, Buffer.from(payload, "latin1"), now);
        if (polluted()) fail("Object.prototype was polluted", payload);
        if (!v.ok) {
          note(v.check);
          continue;
        }
        counts.accepted++;
        lastAccepted = v.body.seq;
        if (!resigned) {
          const env = JSON.parse(payload) as Record<string, unknown>;
          if (env.keyId !== originalEnv.keyId || env.signature !== originalEnv.signature || env.body !== originalEnv.body || topic !== command) fail("a mutated envelope was accepted", payload);
        } else {
          const problems = invariantViolations(topic, v.body as unknown as Record<string, unknown>, now, lastSeq, v.keyId);
          if (problems.length > 0) fail(`accepted with ${problems.join("; ")}`, payload);
        }
        lastSeq.set(v.keyId, v.body.seq);
        // what the authorizer let through goes to the executor of a real agent
        const outcome = await executeCommand(agent.commander, v.body, `key ${v.keyId}`);
        note(outcome.status === "ok" ? "executor-ok" : `executor-${outcome.code}`);
        if (outcome.status === "ok") {
          const bad = outsideEnvelope(v.body.command, v.body.params, agent);
          if (bad !== null) fail(`the executor carried out ${bad}`, payload);
        }
      }
    }
    // reach: every case reached the first check; each later one was reached by the cases that
    // got past every check before it
    const reached: [string, number][] = [];
    let left = counts.cases;
    for (const c of CHECKS) {
      reached.push([c, left]);
      left -= stoppedAt.get(c) ?? 0;
    }
    reached.push(["executor", left]);
    const executorRejects = [...stoppedAt].filter(([k]) => k.startsWith("executor-") && k !== "executor-ok");
    reached.push(["executor envelope (out-of-envelope)", stoppedAt.get("executor-out-of-envelope") ?? 0], ["carried out", stoppedAt.get("executor-ok") ?? 0]);
    console.log(
      [`command fuzzing reach, FUZZ_SEED=${seed}: ${counts.cases} cases (${counts.envelope} byte-mutated envelopes, ${counts.json} JSON-mutated, ${counts.resigned} re-signed mutated bodies, ${counts.wellFormed} well-formed signed)`, ...reached.map(([k, n]) => `  ${k.padEnd(40)} ${String(n).padStart(7)}`), `  executor rejections: ${executorRejects.map(([k, n]) => `${k.slice(9)} ${n}`).join(", ")}`].join("\n"),
    );
    const reach = new Map(reached);
    // each stage the issue named is reached by enough cases to mean something
    for (const stage of ["signature", "expiry", "params", "replay", "executor"]) expect(reach.get(stage), stage).toBeGreaterThan(1000);
    expect(reach.get("executor envelope (out-of-envelope)")).toBeGreaterThan(100);
    expect(reach.get("carried out")).toBeGreaterThan(100);
    expect(counts.cases).toBe(CASES);
    // the fuzzer reached every stage: some mutations stayed valid and were accepted
    expect(counts.accepted).toBeGreaterThan(0);
    expect(counts.envelope + counts.json + counts.resigned + counts.wellFormed).toBe(CASES);
  }, 300_000);
});
