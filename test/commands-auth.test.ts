// Command authorisation: signature, key, role, pod, expiry, replay (across restarts), malformed
// and hostile payloads. Real Ed25519 keys (node:crypto), a real state directory.
import { mkdirSync, readdirSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CommandAuthorizer, type AuthorizerOptions } from "../agent/commands/authorizer.js";
import { commandBody, signedCommand, type CommandSpec } from "../agent/commands/client.js";
import { generateCommandKey, parsePrivateKey, parsePublicKey, signEnvelope } from "../agent/commands/signing.js";
import { openStateDirectory } from "../lib/state-manifest.js";
import { tempDir } from "./helpers/temp-dirs.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const op = generateCommandKey();
const eng = generateCommandKey();
const stranger = generateCommandKey();

function setup(over: Partial<AuthorizerOptions> = {}): { auth: CommandAuthorizer; opts: AuthorizerOptions } {
  const stateDir = tempDir("pw-auth-");
  dirs.push(stateDir);
  const opts: AuthorizerOptions = {
    site: "s1",
    pod: "p1",
    keys: [
      { id: "ops", publicKey: op.publicRaw, roles: ["operator"] },
      { id: "eng", publicKey: eng.publicPem, roles: ["engineer"] },
      { id: "view", publicKey: stranger.publicRaw, roles: ["observer"] },
    ],
    maxTtlS: 300,
    clockSkewS: 30,
    stateDir,
    ...over,
  };
  return { auth: new CommandAuthorizer(opts), opts };
}

let seq = 0;
function spec(over: Partial<CommandSpec> = {}): CommandSpec {
  return { site: "s1", pod: "p1", command: "setpoint", params: { loop: "rack-1.valve", value: 40, leaseS: 60 }, seq: ++seq, keyId: "ops", privateKey: parsePrivateKey(op.privatePem), ...over };
}
const buf = (s: string): Buffer => Buffer.from(s);

describe("command authorisation", () => {
  it("accepts a command signed by a configured key whose role allows it", async () => {
    const { auth } = setup();
    const v = await auth.check("setpoint", buf(signedCommand(spec())), Date.now());
    expect(v.ok).toBe(true);
    // a PEM key works as well as a raw one
    expect((await auth.check("reset-leak", buf(signedCommand(spec({ command: "reset-leak", params: { rack: "rack-1" }, keyId: "eng", privateKey: parsePrivateKey(eng.privatePem) }))), Date.now())).ok).toBe(true);
  });

  const cases: [string, (now: number) => [string, string], string][] = [
    ["unsigned", () => ["setpoint", JSON.stringify({ keyId: "ops", body: JSON.stringify(commandBody(spec())) })], "malformed"],
    ["an empty signature", () => ["setpoint", JSON.stringify({ keyId: "ops", signature: "", body: JSON.stringify(commandBody(spec())) })], "malformed"],
    ["signed by a key that is not configured", () => ["setpoint", signedCommand(spec({ keyId: "nobody" }))], "unknown-key"],
    ["signed with the wrong private key", () => ["setpoint", signedCommand(spec({ privateKey: parsePrivateKey(eng.privatePem) }))], "bad-signature"],
    [
      "with a body altered after signing",
      () => {
        const e = JSON.parse(signedCommand(spec())) as { body: string };
        e.body = e.body.replace('"value":40', '"value":90');
        return ["setpoint", JSON.stringify(e)];
      },
    "bad-signature",
    ],
    ["expired", (now) => ["setpoint", signedCommand(spec({ nowMs: now - 120_000, ttlS: 60 }))], "expired"],
    ["issued in the future beyond the skew", (now) => ["setpoint", signedCommand(spec({ nowMs: now + 120_000 }))], "not-yet-valid"],
    ["with a lifetime beyond maxTtlS", () => ["setpoint", signedCommand(spec({ ttlS: 3600 }))], "malformed"],
    ["addressed to another pod", () => ["setpoint", signedCommand(spec({ pod: "p2" }))], "wrong-pod"],
    ["addressed to another site", () => ["setpoint", signedCommand(spec({ site: "s2" }))], "wrong-pod"],
    ["sent to another command's topic", () => ["mode", signedCommand(spec())], "malformed"],
    ["beyond its signer's role", () => ["reset-leak", signedCommand(spec({ command: "reset-leak", params: { rack: "rack-1" } }))], "forbidden"],
    ["from an observer, for anything but a snapshot", () => ["setpoint", signedCommand(spec({ keyId: "view", privateKey: parsePrivateKey(stranger.privatePem) }))], "forbidden"],
    ["tampered to carry a non-finite number (1e999 parses as Infinity)", () => ["setpoint", signedCommand(spec()).replace(/\\"value\\":40/, '\\"value\\":1e999')], "bad-signature"],
    ["with unknown params", () => ["setpoint", signedCommand(spec({ params: { loop: "rack-1.valve", value: 40, leaseS: 60, interlocks: "off" } }))], "invalid-params"],
    ["with a string where a number goes", () => ["setpoint", signedCommand(spec({ params: { loop: "rack-1.valve", value: "40", leaseS: 60 } }))], "invalid-params"],
    ["not JSON", () => ["setpoint", "{{{"], "malformed"],
    ["JSON but not an envelope", () => ["setpoint", "[1,2,3]"], "malformed"],
    ["oversized", () => ["setpoint", "x".repeat(20_000)], "malformed"],
    ["with a body that is not JSON", () => ["setpoint", JSON.stringify(signEnvelope("not json", "ops", parsePrivateKey(op.privatePem)))], "malformed"],
    ["with a zero seq", () => ["setpoint", signedCommand(spec({ seq: 0 }))], "malformed"],
    [
      "signed with a key repeated in its body (JSON.parse would keep the last)",
      () => {
        const body = JSON.stringify(commandBody(spec())).replace('"value":40', '"value":40,"value":90');
        return ["setpoint", JSON.stringify(signEnvelope(body, "ops", parsePrivateKey(op.privatePem)))];
      },
      "malformed",
    ],
    [
      "with the same key repeated under an escape",
      () => {
        const body = JSON.stringify(commandBody(spec())).replace('"value":40', '"value":40,"\\u0076alue":90');
        return ["setpoint", JSON.stringify(signEnvelope(body, "ops", parsePrivateKey(op.privatePem)))];
      },
      "malformed",
    ],
  ];
  for (const [what, make, code] of cases) {
    it(`rejects a command ${what} (${code})`, async () => {
      const { auth } = setup();
      const now = Date.now();
      const [topic, payload] = make(now);
      const v = await auth.check(topic as "setpoint", buf(payload), now);
      expect(v.ok).toBe(false);
      if (!v.ok) {
        expect(v.code).toBe(code);
        expect(v.reason.length).toBeGreaterThan(5);
      }
    });
  }

  it("signs the key id: an envelope relabelled with another id of the same key does not verify (it would start a fresh seq count)", async () => {
    // the config refuses one key under two ids; the signature does not rely on that
    const { auth } = setup({ keys: [{ id: "ops", publicKey: op.publicRaw, roles: ["operator"] }, { id: "ops-b", publicKey: op.publicPem, roles: ["operator"] }] });
    const e = JSON.parse(signedCommand(spec())) as { keyId: string };
    expect((await auth.check("setpoint", buf(JSON.stringify(e)), Date.now())).ok).toBe(true);
    e.keyId = "ops-b";
    expect(await auth.check("setpoint", buf(JSON.stringify(e)), Date.now())).toMatchObject({ ok: false, code: "bad-signature" });
  });

  it("a signed number that is not finite never passes: the schema refuses it", async () => {
    const { auth } = setup();
    const body = { ...commandBody(spec()), params: { loop: "rack-1.valve", value: Number.POSITIVE_INFINITY, leaseS: 60 } };
    const v = await auth.check("setpoint", buf(signedCommand(spec(), body)), Date.now());
    // JSON.stringify writes Infinity as null: the signed body carries null, which is not a number
    expect(v).toMatchObject({ ok: false, code: "invalid-params" });
  });

  it("refuses a replay, and a reordered older seq, also after a restart", async () => {
    const { auth, opts } = setup();
    const first = signedCommand(spec({ seq: 100 }));
    const older = signedCommand(spec({ seq: 99 }));
    expect((await auth.check("setpoint", buf(first), Date.now())).ok).toBe(true);
    expect(await auth.check("setpoint", buf(first), Date.now())).toMatchObject({ ok: false, code: "replayed" });
    expect(await auth.check("setpoint", buf(older), Date.now())).toMatchObject({ ok: false, code: "replayed" });
    // the agent restarts: a new authorizer on the same state directory
    const again = new CommandAuthorizer(opts);
    expect(await again.check("setpoint", buf(first), Date.now())).toMatchObject({ ok: false, code: "replayed" });
    expect((await again.check("setpoint", buf(signedCommand(spec({ seq: 101 }))), Date.now())).ok).toBe(true);
    // each key has its own sequence
    expect((await again.check("reset-leak", buf(signedCommand(spec({ seq: 1, command: "reset-leak", params: { rack: "r" }, keyId: "eng", privateKey: parsePrivateKey(eng.privatePem) }))), Date.now())).ok).toBe(true);
  });

  it("refuses a copy that arrives while the first is still being recorded", async () => {
    const { auth } = setup();
    const cmd = buf(signedCommand(spec()));
    const [first, copy] = await Promise.all([auth.check("setpoint", cmd, Date.now()), auth.check("setpoint", cmd, Date.now())]);
    expect(first.ok).toBe(true);
    expect(copy).toMatchObject({ ok: false, code: "replayed" });
  });

  it("refuses a command whose seq cannot be recorded, and does not use the seq up", async () => {
    const { auth, opts } = setup();
    // every write goes through command-seq.json.bg.tmp: a directory in its place makes it fail
    const blocker = join(opts.stateDir as string, "command-seq.json.bg.tmp");
    mkdirSync(blocker);
    const cmd = buf(signedCommand(spec({ seq: 900 })));
    const v = await auth.check("setpoint", cmd, Date.now());
    expect(v).toMatchObject({ ok: false, code: "unavailable" });
    if (!v.ok) expect(v.reason).toMatch(/cannot record the command sequence/);
    rmdirSync(blocker);
    expect((await auth.check("setpoint", cmd, Date.now())).ok).toBe(true);
    // and it is on disk: a restarted authorizer refuses it
    expect(await new CommandAuthorizer(opts).check("setpoint", cmd, Date.now())).toMatchObject({ ok: false, code: "replayed" });
  });

  it("a rejected command does not use up its seq", async () => {
    const { auth } = setup();
    const bad = spec({ seq: 500, params: { loop: "x", value: "y", leaseS: 1 } });
    expect((await auth.check("setpoint", buf(signedCommand(bad)), Date.now())).ok).toBe(false);
    expect((await auth.check("setpoint", buf(signedCommand(spec({ seq: 500 }))), Date.now())).ok).toBe(true);
  });

  it("with a damaged replay-guard file: quarantines it, reports it, and refuses commands issued before the restart", async () => {
    const { opts } = setup();
    const stateDir = opts.stateDir as string;
    const recorded = signedCommand(spec({ seq: 7, nowMs: Date.now() - 10_000 }));
    writeFileSync(join(stateDir, "command-seq.json"), "{garbage");
    const auth = new CommandAuthorizer(opts);
    expect(auth.problem).toMatch(/command-seq.json unreadable/);
    expect(readdirSync(stateDir).some((f) => f.startsWith("command-seq.json.corrupt-"))).toBe(true);
    expect(await auth.check("setpoint", buf(recorded), Date.now())).toMatchObject({ ok: false, code: "replayed" });
    expect((await auth.check("setpoint", buf(signedCommand(spec({ seq: 8, nowMs: Date.now() + 5 }))), Date.now() + 10)).ok).toBe(true);
  });

  it("with the replay-guard file deleted after it was written: reports it and refuses a command captured before (the state directory's manifest)", async () => {
    const { opts } = setup();
    const stateDir = opts.stateDir as string;
    openStateDirectory(stateDir, { firstStart: false }); // as podwarden run does before the services start
    const captured = signedCommand(spec({ seq: 7, nowMs: Date.now() - 10_000 }));
    expect((await new CommandAuthorizer(opts).check("setpoint", buf(captured), Date.now())).ok).toBe(true);
    rmSync(join(stateDir, "command-seq.json"));
    const auth = new CommandAuthorizer(opts);
    expect(auth.problem).toMatch(/command-seq.json is missing, though the state directory's manifest says it was written/);
    expect(await auth.check("setpoint", buf(captured), Date.now())).toMatchObject({ ok: false, code: "replayed", reason: expect.stringMatching(/state was lost/) as unknown });
    expect((await auth.check("setpoint", buf(signedCommand(spec({ seq: 8, nowMs: Date.now() + 5 }))), Date.now() + 10)).ok).toBe(true);
  });

  it("keeps refusing commands issued before the damage after the next restart: the loss marker is on disk", async () => {
    const { opts } = setup();
    const stateDir = opts.stateDir as string;
    const recorded = signedCommand(spec({ seq: 7, nowMs: Date.now() - 10_000 }));
    writeFileSync(join(stateDir, "command-seq.json"), "{garbage");
    expect(new CommandAuthorizer(opts).problem).toMatch(/unreadable/);
    // restarted before any new command was accepted: the recorded one is still refused
    const restarted = new CommandAuthorizer(opts);
    expect(restarted.problem).toBeNull();
    expect(await restarted.check("setpoint", buf(recorded), Date.now())).toMatchObject({ ok: false, code: "replayed", reason: expect.stringMatching(/state was lost/) as unknown });
    expect((await restarted.check("setpoint", buf(signedCommand(spec({ seq: 8, nowMs: Date.now() + 5 }))), Date.now() + 10)).ok).toBe(true);
  });

  it("refuses every command when a damaged replay-guard file's loss marker cannot be saved", async () => {
    const { opts } = setup();
    const stateDir = opts.stateDir as string;
    writeFileSync(join(stateDir, "command-seq.json"), "{garbage");
    mkdirSync(join(stateDir, "command-seq.json.tmp")); // the synchronous write's temporary file
    const auth = new CommandAuthorizer(opts);
    expect(auth.problem).toMatch(/loss marker cannot be saved/);
    expect(await auth.check("setpoint", buf(signedCommand(spec({ seq: 9, nowMs: Date.now() + 5 }))), Date.now() + 10)).toMatchObject({ ok: false, code: "unavailable" });
  });

  it("refuses every command when replay protection cannot persist (no state directory)", async () => {
    const { auth } = setup({ stateDir: undefined });
    expect(auth.problem).toMatch(/no state directory/);
    expect(await auth.check("setpoint", buf(signedCommand(spec())), Date.now())).toMatchObject({ ok: false, code: "unavailable" });
  });

  it("rejects keys that are not Ed25519 public keys", () => {
    expect(() => parsePublicKey("AAAA")).toThrow(/32 bytes/);
    expect(() => parsePublicKey("-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----")).toThrow();
  });
});
