// Sparkplug B conformance: `podwarden run` as a real process against the simulator and a real
// mosquitto, watched by an independent host application (tooling/sparkplug-host.ts: Eclipse
// Tahu's decoder, state tracked as a primary host would). Each rule the host checks is listed
// with its section in docs/sparkplug.md, beside the test here that exercises it.
import { rmSync, writeFileSync } from "node:fs";
import { Writable } from "node:stream";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../tooling/free-port.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { SparkplugHost } from "../tooling/sparkplug-host.js";
import { sparkplugWatch } from "../cli/sparkplug-watch.js";
import { demoConfigFor, TEST_POD } from "./helpers/agent.js";
import { startDaemon, type Daemon, untilRunning } from "./helpers/daemon.js";
import { stopProcess, waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

const DEVICES = 9; // the CDU and 8 racks
/**
 * A later session's bdSeq: one more per connection attempt, wrapping at 256, so a few more
 * where attempts failed while a broker came back (each CONNECT may have reached it), and
 * never back to where a restart would start from scratch.
 */
const ahead = (later: number, earlier: number): boolean => {
  const d = (later - earlier + 256) % 256;
  return d >= 1 && d <= 8;
};

describe("Sparkplug B edge node (daemon, mosquitto, Tahu host)", () => {
  let t: TestSim;
  let broker: Mosquitto;
  let dir: string;
  const daemons: Daemon[] = [];
  const hosts: SparkplugHost[] = [];

  const configFile = (pod: string, sparkplug: Record<string, unknown>, metricsPort = 0): string => {
    const f = join(dir, `${pod}.yaml`);
    const data = demoConfigFor(t.sim, (c) => {
      c.pod = pod;
      c.metrics = { port: metricsPort };
      c.stateDir = join(dir, pod);
      c.uplink = {
        url: broker.url,
        protocolVersion: 5,
        keepaliveS: 2,
        connectTimeoutMs: 1000,
        reconnect: { baseMs: 50, maxMs: 400 },
        // a small deadband and a fast check: traffic enough to wrap seq within seconds
        exception: { checkMs: 50, defaultDeadband: 0.001 },
        sparkplug: { enabled: true, groupId: `g-${process.pid}`, ...sparkplug },
      };
    });
    writeFileSync(f, stringify(data));
    return f;
  };
  const launch = async (file: string): Promise<Daemon> => {
    const d = startDaemon(file);
    daemons.push(d);
    await untilRunning(d);
    return d;
  };
  const host = async (pod: string, hostId?: string, online?: boolean): Promise<SparkplugHost> => {
    const h = new SparkplugHost(broker.url, `g-${process.pid}`, pod, hostId);
    hosts.push(h);
    await h.connect({ online });
    return h;
  };
  const audits = (d: Daemon): { action: string; result: string; reason?: string; by: string }[] =>
    d.lines.map((l) => l.event as { type?: string; action: string; result: string; reason?: string; by: string } | undefined).filter((e) => e?.type === "command.audit" && e.by === "sparkplug") as never;

  beforeAll(async () => {
    t = await startTestSim({ devices: { leaseMs: 3000 } });
    broker = await Mosquitto.start();
    dir = tempDir("pw-spb-");
  }, 30_000);
  afterEach(async () => {
    await Promise.all(daemons.splice(0).map((d) => stopProcess(d.child, "SIGKILL")));
    await Promise.all(hosts.splice(0).map((h) => h.close()));
    t.sim.inject({ clear: "all" });
  });
  afterAll(async () => {
    await broker?.stop();
    await t?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("births, seq with wrap, aliases, rebirth, refused commands, device death and rebirth, bdSeq across a broker restart, SIGKILL and SIGTERM", async () => {
    const pod = `${TEST_POD}-spb`;
    const h = await host(pod);
    const metricsPort = await freePort();
    const file = configFile(pod, { writableSetpoints: ["rack-2.valve"], writeLeaseS: 60, refreshMs: 1000 }, metricsPort);
    let d = await launch(file);
    await waitFor(() => h.count("NBIRTH") === 1 && h.count("DBIRTH") === DEVICES, "NBIRTH and a DBIRTH per device", 15_000);
    const first = h.births[0];
    // identity and units ride the births
    const nbirth = h.messages.find((m) => m.verb === "NBIRTH")!.payload.metrics!;
    expect(nbirth.find((m) => m.name === "Properties/Config Hash")?.value).toMatch(/^[0-9a-f]{64}$/);
    const rackBirth = h.messages.find((m) => m.verb === "DBIRTH" && m.device === "rack-1")!.payload.metrics!;
    const ret = rackBirth.find((m) => m.name === "Return Temperature")!;
    expect(ret.type).toBe("Double");
    expect(ret.properties?.engUnit?.value).toBe("°C");
    expect(ret.properties?.Quality?.value).toBeDefined();
    // the range and the write a host may offer: only the loop opted in takes one, within its envelope
    const prop = (device: string, name: string, key: string): unknown =>
      (h.messages.find((m) => m.verb === "DBIRTH" && m.device === device)!.payload.metrics!.find((m) => m.name === name)!.properties as Record<string, { value?: unknown }>)[key]?.value;
    expect([prop("rack-2", "Return Temperature Setpoint", "readOnly"), prop("rack-2", "Return Temperature Setpoint", "engLow"), prop("rack-2", "Return Temperature Setpoint", "engHigh")]).toEqual([false, 35, 55]);
    expect([prop("rack-1", "Return Temperature Setpoint", "readOnly"), prop("rack-1", "Return Temperature", "readOnly"), prop("rack-1", "Return Temperature", "engHigh")]).toEqual([true, true, 95]);
    // every point the pod reads, each at its source's resolution (an f32 at 7 significant digits)
    const cduBirth = h.messages.find((m) => m.verb === "DBIRTH" && m.device === "CDU")!.payload.metrics!;
    expect(cduBirth.map((m) => m.name)).toEqual(expect.arrayContaining(["Field/returnTempC", "Field/totalFlowLpm", "Field/reservoirPct"]));
    for (const name of ["Loop/dP", "Field/returnTempC", "Field/totalFlowLpm"]) {
      // read as the host has it (a birth at the start may carry a point not read yet: null)
      await waitFor(() => typeof h.value("CDU", name)?.value === "number", `${name} read`, 10_000);
      const v = h.value("CDU", name)!.value as number;
      expect(Number(v.toPrecision(7)), name).toBe(v);
    }

    // refreshMs: a metric that never changes comes again in DATA, with every other
    await waitFor(() => h.updates.some((u) => u.verb === "DDATA" && u.device === "rack-1" && u.name === "Isolation/By Operator"), "a full refresh", 5000);

    // seq runs through 255 and wraps, every message one more than the last
    await waitFor(() => h.wraps >= 1, "seq wrapped", 60_000, 100).catch((e: unknown) => {
      throw new Error(`${String(e)}: ${h.messages.length} messages, ${JSON.stringify(h.violations.slice(0, 5))}, ${JSON.stringify(h.messages.slice(-3).map((m) => [m.topic, m.payload.seq]))}`);
    });

    // NCMD Node Control/Rebirth: the whole birth set again, same bdSeq, seq from 0
    const dbirths = h.count("DBIRTH");
    await h.rebirth();
    await waitFor(() => h.count("NBIRTH") === 2 && h.count("DBIRTH") >= dbirths + DEVICES, "rebirth", 10_000);
    expect(h.births[1]).toBe(first);
    // a flood of requests: one rebirth per rebirthMinMs (2 s), the rest folded into the next
    // (maxCommandsPerS, 10, takes about half of them; the rest are dropped unread)
    const metric = async (re: RegExp): Promise<number> => Number(re.exec(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text())?.[1] ?? NaN);
    const taken = /^podwarden_sparkplug_commands_total\{result="rebirths"\} (\d+)$/m;
    const takenBefore = await metric(taken);
    for (let i = 0; i < 20; i++) await h.rebirth();
    await waitFor(async () => (await metric(/^podwarden_sparkplug_rebirths_folded_total (\d+)$/m)) >= 5, "the requests folded", 10_000, 200);
    await waitFor(() => h.count("NBIRTH") >= 3, "the folded rebirth", 10_000);
    expect((await metric(taken)) - takenBefore).toBeGreaterThanOrEqual(6);
    expect(h.count("NBIRTH")).toBeLessThanOrEqual(4);

    // writes are refused (unsigned) and audited; garbage is refused, never decoded into anything
    await h.command("rack-1", [{ name: "Return Temperature Setpoint", type: "Double", value: 40 }]);
    await h.command(null, [{ name: "Pod/Mode", type: "String", value: "Safe" }]);
    await h.raw(`spBv1.0/${h.group}/NCMD/${pod}`, Buffer.from("not a protobuf at all \u0000\u00ff"));
    await waitFor(() => audits(d).filter((a) => a.result === "refused").length >= 3, "three refusals audited");
    expect(audits(d).some((a) => a.action === "sparkplug-dcmd" && /not writable/.test(a.reason ?? ""))).toBe(true);
    expect(h.value("rack-1", "Return Temperature Setpoint")?.value).toBe(45);
    // a loop opted in: its setpoint may be written, inside the envelope, for the lease
    await h.command("rack-2", [{ name: "Return Temperature Setpoint", type: "Double", value: 44 }]);
    await waitFor(() => h.value("rack-2", "Return Temperature Setpoint")?.value === 44, "rack-2's setpoint written");
    await h.command("rack-2", [{ name: "Return Temperature Setpoint", type: "Double", value: 90 }]);
    await waitFor(() => audits(d).some((a) => a.action === "setpoint" && a.result === "out-of-envelope"), "the write outside the envelope refused");
    expect(audits(d).filter((a) => a.action === "setpoint" && a.result === "accepted")).toHaveLength(1);
    expect(h.value("rack-2", "Return Temperature Setpoint")?.value).toBe(44);
    // a flood: beyond maxCommandsPerS (10) dropped unread, counted, audited as one summary
    for (let i = 0; i < 40; i++) await h.raw(`spBv1.0/${h.group}/NCMD/${pod}`, Buffer.from([0xff, i]));
    await waitFor(() => audits(d).some((a) => a.result === "dropped" && (a as { suppressed?: number }).suppressed! >= 20), "the flood dropped and summarised");

    // a rack's device stops answering: DDEATH; it answers again: DBIRTH
    t.sim.inject({ device: "rack-3", offline: true });
    await waitFor(() => h.devices.get("rack-3") === false, "DDEATH rack-3", 15_000);
    const r3 = h.count("DBIRTH", "rack-3");
    t.sim.inject({ device: "rack-3", offline: false });
    await waitFor(() => h.count("DBIRTH", "rack-3") > r3 && h.devices.get("rack-3") === true, "DBIRTH rack-3", 15_000);

    // the broker restarts: a new session, the next bdSeq
    // (a rebirth folded from the flood above may still come: an NBIRTH of the same bdSeq, so the
    // new session's is the first birth with another)
    const k = h.births.length; // the births of the session so far
    await broker.restart();
    await waitFor(() => h.births.slice(k).some((b) => b !== first), "NBIRTH of a new session after the broker's restart", 20_000);
    const restarted = h.births.slice(k).find((b) => b !== first)!;
    expect(ahead(restarted, first)).toBe(true);

    // SIGKILL: the broker sends the Will, whose bdSeq is the session's; a restart goes on from it
    // (a Will may also have come as the broker went down: the host checks every NDEATH's bdSeq
    // names a session that was born)
    // the births counted at the kill, not assumed: a rebirth the host asked for in the meantime is
    // an NBIRTH of the same session (same bdSeq), and would be taken for the restart's
    const session = h.births.at(-1)!;
    expect(session).toBe(restarted);
    const birthsAtKill = h.births.length;
    d.child.kill("SIGKILL");
    const deathsBefore = h.deaths.length;
    await waitFor(() => h.deaths.length > deathsBefore, "NDEATH (the Will)", 10_000);
    expect(h.deaths.at(-1)).toBe(session);
    expect(h.online).toBe(false);
    d = await launch(file);
    await waitFor(() => h.births.length > birthsAtKill, "NBIRTH after the restart", 20_000);
    expect(ahead(h.births[birthsAtKill], session)).toBe(true);

    // the edge node's figures on /metrics
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(text).toMatch(/^podwarden_sparkplug_session 1$/m);
    expect(text).toMatch(/^podwarden_sparkplug_messages_total [1-9]/m);

    // SIGTERM: the node publishes its own NDEATH before it disconnects
    d.child.kill("SIGTERM");
    expect(await d.exit).toBe(0);
    await waitFor(() => h.deaths.length >= 2, "NDEATH on stop", 5000);
    expect(h.deaths.at(-1)).toBe(h.births[birthsAtKill]);
    expect(h.violations).toEqual([]);
  }, 180_000);

  it("sparkplug-watch started mid-session asks the node for a rebirth, and then names what it shows", async () => {
    const pod = `${TEST_POD}-spw`;
    const h = await host(pod);
    await launch(configFile(pod, {}));
    await waitFor(() => h.count("NBIRTH") === 1 && h.count("DBIRTH") === DEVICES, "births", 15_000);
    let text = "";
    const out = new Writable({
      write(chunk: Buffer, _enc, done) {
        text += chunk.toString();
        done();
      },
    });
    // the watch has seen no birth: the first DATA it meets carries aliases it cannot name
    const stop = new AbortController();
    const watching = sparkplugWatch({ url: broker.url, group: h.group, node: pod, out, signal: stop.signal });
    await waitFor(() => h.count("NBIRTH") === 2, "the rebirth the watch asked for", 15_000);
    await waitFor(() => /^DDATA [^ ]+\/rack-\d .*(Return Temperature|Flow|Valve\/Command)=/m.test(text), "DATA named by the births", 15_000);
    expect(text).toMatch(new RegExp(`aliases not seen born: asked ${pod} for a rebirth`));
    expect(text).toMatch(/^NBIRTH /m);
    stop.abort();
    expect(await watching).toBeGreaterThan(DEVICES);
    expect(h.violations).toEqual([]);
  }, 60_000);

  it("with a primary host: births wait for its STATE; offline ends the session; data is stored and replayed historical on its return", async () => {
    const pod = `${TEST_POD}-sph`;
    const h = await host(pod, `scada-${process.pid}`, false);
    const d = await launch(configFile(pod, { primaryHostId: `scada-${process.pid}` }));
    await waitFor(() => d.lines.some((l) => l.msg === "sparkplug: waiting for the primary host to be online before the births"), "waiting for the host");
    await new Promise((r) => setTimeout(r, 500));
    expect(h.count("NBIRTH")).toBe(0);

    await h.setOnline(true);
    await waitFor(() => h.count("NBIRTH") === 1 && h.count("DBIRTH") === DEVICES, "births once the host is online", 10_000);
    expect(h.value("rack-2", "Leak/State")?.value).toBe("OK");

    // the host goes offline: NDEATH, and nothing more until it is back
    await h.setOnline(false);
    await waitFor(() => h.deaths.length === 1, "NDEATH when the host goes offline", 10_000);
    expect(h.deaths[0]).toBe(h.births[0]);
    const offlineAt = Date.now();
    const before = h.messages.length;
    // meanwhile a leak: the rack isolates while nobody watches
    t.sim.inject({ leak: "rack-2" });
    await waitFor(() => d.lines.some((l) => (l.event as { type?: string; rack?: string } | undefined)?.type === "isolation.proven"), "rack-2's isolation proven", 20_000);
    await new Promise((r) => setTimeout(r, 300)); // a few exception checks: the proof is stored too
    expect(h.messages.length).toBe(before);
    const onlineAt = Date.now();

    await h.setOnline(true);
    await waitFor(() => h.births.length === 2, "births on the host's return", 10_000);
    expect(ahead(h.births[1], h.births[0])).toBe(true);
    // the stored data comes after the births, each metric historical, with the time it was seen
    await waitFor(() => h.updates.some((u) => u.historical && u.device === "rack-2" && u.name === "Leak/State" && u.value === "Critical"), "the leak, replayed historical", 10_000);
    const hist = h.updates.filter((u) => u.historical);
    expect(hist.every((u) => u.verb === "DDATA" || u.verb === "NDATA")).toBe(true);
    const leak = hist.find((u) => u.device === "rack-2" && u.name === "Leak/State" && u.value === "Critical")!;
    expect(leak.timestamp).toBeGreaterThanOrEqual(offlineAt - 100);
    expect(leak.timestamp).toBeLessThanOrEqual(onlineAt);
    // nothing lost: the isolation's course is there in order, and the births say where it ended
    const iso = hist.filter((u) => u.device === "rack-2" && u.name === "Isolation/State").map((u) => u.value);
    expect(iso, JSON.stringify([h.messages.filter((m) => m.device === "rack-2").map((m) => [m.verb, m.payload.seq, m.receivedAt, m.payload.metrics?.length]), d.lines.filter((l) => String(l.msg).includes("sparkplug") || (l.event as {type?: string})?.type === "isolation.proven")])).toContain("Isolated");
    expect(h.updates.filter((u) => u.verb === "DBIRTH" && u.device === "rack-2" && u.name === "Isolation/State").at(-1)?.value).toBe("Isolated");
    await waitFor(() => h.value(null, "Sparkplug/Stored Messages")?.value === 0, "store emptied", 10_000);
    expect(h.violations).toEqual([]);
  }, 120_000);
});
