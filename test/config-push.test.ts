// A config pushed across a fleet (issue #51 item 4): the pusher's parts on their own, then three
// real daemons, each on its own simulator, on a real mosquitto. One template, made each pod's by
// its inventory values, pushed canary first and then one pod a batch: the canary keeps it after
// its health window; the next pod, whose inventory points its uplink at a port no broker answers
// on, puts it back, comes back to mission control and says why (config:push-reverted); the push stops there, and the third pod is
// never sent it; `podwarden fleet watch`'s library sees each pod's state. Then what a push must
// survive or refuse: a restart (the kept config runs again), a restart during a trial (the config
// from before comes back), an operator's edit of the file given with -c (the file wins), a
// config that is invalid or names another pod, and a pod that takes no pushes.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePrivateKey } from "../agent/commands/signing.js";
import { selectPods, renderFor, stages } from "../fleet/config-push.js";
import { FleetWatch, type CommandSigner } from "../fleet/watch.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { demoConfigFor, TEST_POD } from "./helpers/agent.js";
import { raisedAlarms, startDaemon, untilRunning, type Daemon } from "./helpers/daemon.js";
import { run, stopProcess, waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";
import { KEYS } from "./helpers/uplink.js";

describe("the pusher's parts", () => {
  it("makes a template each pod's, and names every placeholder a pod has no value for", () => {
    const t = "site: {{site}}\npod: {{ pod }}\nport: {{port}}\nlevel: {{level}}\n";
    expect(renderFor(t, "s1/p1", { "*": { level: "info" }, "s1/p1": { port: 502 } })).toBe("site: s1\npod: p1\nport: 502\nlevel: info\n");
    expect(() => renderFor(t, "s1/p2", { "*": {} })).toThrow("s1/p2: no value for {{port}}, {{level}} (--vars)");
  });

  it("chooses pods by name or pattern, and stages them: the canary alone, then batches", () => {
    const known = ["a/p1", "a/p2", "b/p1", "a/q1"];
    expect(selectPods(["a/p*"], known)).toEqual(["a/p1", "a/p2"]);
    expect(selectPods(["*/p1", "c/x", "a/p1"], known)).toEqual(["a/p1", "b/p1", "c/x"]);
    expect(stages(["a", "b", "c", "d", "e"], undefined, 2)).toEqual([["a"], ["b", "c"], ["d", "e"]]);
    expect(stages(["a", "b", "c"], "c", 5)).toEqual([["c"], ["a", "b"]]);
    expect(() => stages(["a"], "z", 1)).toThrow("the canary z is not among the pods chosen");
  });
});

interface Pod {
  name: string;
  id: string;
  sim: TestSim;
  dir: string;
  config: string;
  data: Record<string, unknown>;
  daemon: Daemon | null;
}

describe("a config pushed to real pods, staged, kept or put back", () => {
  let broker: Mosquitto;
  let watch: FleetWatch;
  const pods: Pod[] = [];
  const root = tempDir("podwarden-push-");
  const site = "cpush";
  // the wall clock in ms, as the CLI's pusher numbers its requests with the same key
  let seq = 0;
  const signer: CommandSigner = { keyId: "eng", privateKey: parsePrivateKey(KEYS.engineer.privatePem), nextSeq: () => (seq = Math.max(seq + 1, Date.now())) };
  const keyFile = join(root, "eng.key");
  let template = "";
  const vars: Record<string, Record<string, string | number>> = {};

  const start = async (p: Pod): Promise<Daemon> => {
    p.daemon = startDaemon(p.config);
    await untilRunning(p.daemon, 60_000);
    return p.daemon;
  };
  const stop = async (p: Pod): Promise<void> => {
    if (p.daemon !== null) await stopProcess(p.daemon.child);
    p.daemon = null;
  };
  const status = async (p: Pod): Promise<{ running: string; hash: string; last: { id: string; state: string; why: string[] } | null }> => {
    const [a] = await watch.command([p.id], "config", { action: "status" }, signer, 10_000);
    expect(a?.response?.status, JSON.stringify(a?.response)).toBe("ok");
    return a.response!.data as never;
  };
  const logged = (p: Pod, msg: string): boolean => p.daemon!.lines.some((l) => l.msg === msg);

  beforeAll(async () => {
    broker = await Mosquitto.start();
    writeFileSync(keyFile, KEYS.engineer.privatePem);
    for (const k of [1, 2, 3]) {
      const sim = await startTestSim();
      const name = `${TEST_POD}-cp${k}`;
      const dir = join(root, name);
      mkdirSync(dir, { recursive: true });
      const data = demoConfigFor(sim.sim, (c) => {
        c.site = site;
        c.pod = name;
        c.stateDir = join(dir, "state");
        c.hmi = { ...(c.hmi as object | undefined), enabled: false };
        c.metrics = { ...(c.metrics as object | undefined), enabled: false };
        c.uplink = { url: broker.url, protocolVersion: 5, keepaliveS: 2, commands: { keys: [{ id: "eng", publicKey: KEYS.engineer.publicRaw, roles: ["engineer"] }] } };
        c.configPush = { enabled: true, healthWindowS: 3 };
      }) as Record<string, unknown>;
      const config = join(dir, "agent.yaml");
      writeFileSync(config, stringify(data));
      pods.push({ name, id: `${site}/${name}`, sim, dir, config, data, daemon: null });
      const devices = (data.modbus as { devices: { name: string; tcp: { port: number } }[] }).devices;
      vars[`${site}/${name}`] = { stateDir: join(dir, "state"), broker: broker.url, ...Object.fromEntries(devices.map((d) => [`port_${d.name}`, d.tcp.port])) };
    }
    // the template: the first pod's config with its own values as placeholders, and one change
    // every pod can take in place (the recorder's pre-trigger window)
    const t = structuredClone(pods[0].data);
    t.pod = "{{pod}}";
    t.stateDir = "{{stateDir}}";
    for (const d of (t.modbus as { devices: { name: string; tcp: { port: number | string } }[] }).devices) d.tcp.port = `{{port_${d.name}}}`;
    t.uplink = { ...(t.uplink as object), url: "{{broker}}" };
    t.supervisor = { ...(t.supervisor as object | undefined), alarmChatter: { ...((t.supervisor as { alarmChatter?: object } | undefined)?.alarmChatter ?? {}), windowMs: 120_000 } };
    // a number's placeholder goes unquoted: it is text until the pod reads it as YAML
    template = stringify(t).replace(/"(\{\{port_[^}]+\}\})"/g, "$1");
    // the second pod's inventory points its uplink at a port no broker answers on: a config that
    // would strand it (a device that stops answering fails the same window: test/release-window.test.ts
    // holds the window's checks; here the pod would wait out its 30 s Starting first)
    vars[pods[1].id] = { ...vars[pods[1].id], broker: "mqtt://127.0.0.1:9" };
    watch = await FleetWatch.start({ urls: [broker.url], protocolVersion: 5, persistent: false, clientId: `push-watch-${process.pid}` });
    await Promise.all(pods.map(start));
    await waitFor(() => pods.every((p) => watch.states.get(p.id)?.state === "online"), "every pod online at the watch", 30_000);
  }, 180_000);

  afterAll(async () => {
    for (const p of pods) await stop(p);
    await watch?.stop();
    await broker?.stop();
    for (const p of pods) await p.sim.stop();
  });

  it("pushes canary first, stops at the pod that puts it back (why told), and never sends the rest", async () => {
    const file = join(root, "pushed.yaml");
    writeFileSync(file, template);
    const varsFile = join(root, "vars.json");
    writeFileSync(varsFile, JSON.stringify(vars));
    const before = await Promise.all(pods.map(status));
    const r = await run("node", ["dist/cli/podwarden.js", "fleet", "config", "push", file, "--url", broker.url, "--pods", pods.map((p) => p.id).join(","), "--key", keyFile, "--key-id", "eng", "--batch", "1", "--vars", varsFile, "--timeout", "3"], 150_000);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toContain(`canary ${pods[0].id}: applied`);
    expect(r.stdout).toContain(`batch 1 ${pods[1].id}: reverted (the uplink to mission control was connected before the push and is not now)`);
    expect(r.stdout).not.toContain(pods[2].id + ":");
    expect(r.stdout).toContain("1 of 3 pods run the pushed config; 1 put it back, 0 refused it, 0 silent, 1 not pushed");

    // the verdict is recorded before the config from before is taken back (a crash between the
    // two still puts it back at the start): the pod runs it again moments later
    await waitFor(async () => (await status(pods[1])).hash === before[1].hash, "the second pod on its config from before", 30_000, 500);
    const [good, bad, untouched] = await Promise.all(pods.map(status));
    expect(good.running).toBe("pushed");
    expect(good.hash).not.toBe(before[0].hash);
    expect(good.last?.state).toBe("applied");
    expect(bad.running).toBe("local");
    expect(bad.hash).toBe(before[1].hash);
    expect(bad.last?.state).toBe("reverted");
    expect(raisedAlarms(pods[1].daemon!)).toContain("config:push-reverted");
    expect(untouched.last).toBeNull();
    expect(untouched.hash).toBe(before[2].hash);
    // mission control's watch saw each pod's news on its events
    await waitFor(() => watch.pushes.get(pods[0].id)?.state === "applied" && watch.pushes.get(pods[1].id)?.state === "reverted", "the pushes at the watch", 15_000, 100);
    expect(watch.pushes.has(pods[2].id)).toBe(false);
    expect(watch.stats().configPushes).toEqual({ trial: 0, applied: 1, reverted: 1, refused: 0 });
  }, 180_000);

  it("keeps a kept config across a restart, and gives the pod back to its own file once an operator edits it", async () => {
    const p = pods[0];
    const kept = (await status(p)).hash;
    await stop(p);
    await start(p);
    expect(logged(p, "running the config pushed by mission control over the config file (docs/fleet.md)")).toBe(true);
    expect(await status(p)).toMatchObject({ running: "pushed", hash: kept });
    // the operator at the pod has the last word: an edit of the -c file runs at the next reload
    writeFileSync(p.config, stringify({ ...p.data, supervisor: { ...(p.data.supervisor as object | undefined), alarmChatter: { windowMs: 90_000 } } }));
    p.daemon!.child.kill("SIGHUP");
    await waitFor(() => logged(p, "the config file given with -c changed since the pushed config was taken over it: the file runs"), "the file taken back", 30_000);
    await waitFor(async () => (await status(p)).running === "local", "running the file", 30_000, 500);
  }, 120_000);

  it("puts back the config from before a push whose trial a restart cut short", async () => {
    const p = pods[2];
    const before = (await status(p)).hash;
    const yaml = renderFor(template, p.id, vars);
    const [a] = await watch.command([p.id], "config", { action: "apply", yaml, windowS: 600 }, signer, 10_000);
    expect(a?.response).toMatchObject({ status: "ok", data: { state: "trial", windowS: 600 } });
    await waitFor(async () => (await status(p)).hash !== before, "the pushed config taken", 30_000, 500);
    await stop(p);
    const d = await start(p);
    await waitFor(() => raisedAlarms(d).includes("config:push-reverted"), "the revert told", 30_000);
    const s = await status(p);
    expect(s).toMatchObject({ running: "local", hash: before, last: { id: a.transaction, state: "reverted" } });
    expect(s.last?.why).toEqual(["the daemon stopped before the push's health window ended (it may have died on the pushed config)"]);
  }, 120_000);

  it("refuses a config that is invalid or names another pod, and every push to a pod that takes none", async () => {
    const p = pods[2];
    const send = async (params: Record<string, unknown>): Promise<Record<string, unknown> | null> => (await watch.command([p.id], "config", params, signer, 10_000))[0]?.response ?? null;
    const hash = (await status(p)).hash;
    const invalid = await send({ action: "apply", yaml: "site: x\npod: [\n" });
    expect(invalid).toMatchObject({ status: "rejected", error: { code: "invalid-params" } });
    const other = await send({ action: "apply", yaml: renderFor(template, `${site}/someone-else`, { [`${site}/someone-else`]: vars[p.id] }) });
    expect(other).toMatchObject({ status: "rejected", error: { code: "refused" } });
    expect(String((other?.error as { message: string }).message)).toContain("a push cannot change the pod's identity");
    // a pushed config that turns pushes off is taken (and kept): after it, pushes are refused
    const off = parse(renderFor(template, p.id, vars)) as Record<string, unknown>;
    off.configPush = { enabled: false };
    const taken = await send({ action: "apply", yaml: stringify(off), windowS: 2 });
    expect(taken).toMatchObject({ status: "ok", data: { state: "trial" } });
    await waitFor(async () => (await status(p)).last?.state === "applied", "kept", 60_000, 500);
    const refused = await send({ action: "apply", yaml: readFileSync(p.config, "utf8") });
    expect(refused).toMatchObject({ status: "rejected", error: { code: "refused", message: "this pod takes no pushed config (configPush.enabled is false)" } });
    expect((await status(p)).hash).not.toBe(hash);
  }, 120_000);
});
