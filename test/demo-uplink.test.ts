// The demo as a new user runs it (`npm start` = podwarden demo): embedded broker, simulator and
// agent; telemetry on the broker, a board that renders, a leak that gets isolated and alarmed;
// and the uplink's topics as mission control sees them; with --sparkplug, the Sparkplug B edge node
// as the board's `sparkplug-watch` line shows it.
import { spawn } from "node:child_process";
import { createServer, type AddressInfo, type Server } from "node:net";
import mqtt, { type MqttClient } from "mqtt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDemo, type RunningDemo } from "../cli/demo.js";
import { topicBase } from "../agent/uplink/uplink.js";
import { encodePayload } from "../agent/uplink/sparkplug/payload.js";
import { run, waitFor } from "./helpers/processes.js";

describe("the demo pod (npm start)", () => {
  let demo: RunningDemo;
  let sub: MqttClient;
  const messages: { topic: string; body: Record<string, unknown>; retain: boolean }[] = [];
  const base = topicBase("demo", "pod-a");

  beforeAll(async () => {
    demo = await startDemo({ simConfig: "configs/sim-pod.yaml", agentConfig: "configs/demo-pod.yaml", brokerPort: 0, boardMs: 0, out: process.stdout, interactive: false, sparkplug: true });
    sub = await mqtt.connectAsync(demo.brokerUrl, { clientId: "test-mission-control" });
    sub.on("message", (topic, payload, packet) => messages.push({ topic, body: JSON.parse(payload.toString()) as Record<string, unknown>, retain: packet.retain }));
    await sub.subscribeAsync(`${base}#`, { qos: 1 });
  }, 60_000);
  afterAll(async () => {
    await sub?.endAsync(true);
    await demo?.stop();
  });

  const last = (name: string): Record<string, unknown> | undefined => [...messages].reverse().find((m) => m.topic === base + name)?.body;

  it("publishes retained state and info, and telemetry with increasing sequence numbers", async () => {
    await waitFor(() => last("state")?.state === "online", "retained state online");
    expect(messages.find((m) => m.topic === `${base}state`)?.retain).toBe(true);
    // retained messages come back in the broker's order, not the order they were published in
    await waitFor(() => last("info") !== undefined, "retained info");
    expect(last("info")).toMatchObject({ site: "demo", pod: "pod-a" });
    expect((last("info")!.racks as unknown[]).length).toBe(8);
    await waitFor(() => messages.filter((m) => m.topic === `${base}telemetry` && m.body.kind === "periodic").length >= 3, "telemetry", 10_000);
    const seqs = messages.filter((m) => m.topic === `${base}telemetry`).map((m) => m.body.seq as number);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBe(seqs[i - 1] + 1);
    const periodic = messages.filter((m) => m.topic === `${base}telemetry` && m.body.kind === "periodic").map((m) => m.body);
    const t = periodic[periodic.length - 1];
    expect((t.racks as { name: string }[])[0].name).toBe("rack-1");
    expect(typeof t.timestamp).toBe("string");
    expect(t.historical).toBe(false);
    // every point with value, unit, source time and quality
    const points = t.points as Record<string, { value: number | null; unit?: string; quality: string; sourceTime: string | null }>;
    expect(points["rack-1.returnTempC"]).toMatchObject({ unit: "°C", quality: "good" });
    expect(Date.parse(points["rack-1.returnTempC"].sourceTime ?? "")).toBeGreaterThan(Date.now() - 60_000);
    // between snapshots, report-by-exception carries only the points that moved
    await waitFor(() => messages.some((m) => m.topic === `${base}telemetry` && m.body.kind === "exception"), "an exception report", 10_000);
    const ex = messages.find((m) => m.topic === `${base}telemetry` && m.body.kind === "exception")!.body;
    expect(Object.keys(ex.points as object).length).toBeGreaterThan(0);
  });

  it("with --sparkplug, is a Sparkplug B edge node too, and the line its board prints shows it decoded", async () => {
    const line = demo.help().split("\n").find((l) => l.includes("sparkplug-watch"));
    expect(line).toBeDefined();
    const args = line!.slice(line!.indexOf("sparkplug-watch")).split(" ");
    const watch = spawn("node", ["dist/cli/podwarden.js", ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    watch.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const host = await mqtt.connectAsync(demo.brokerUrl, { protocolVersion: 4 });
    try {
      // a host that joins late asks for the births (any host may: it moves nothing)
      const rebirth = Buffer.from(encodePayload({ timestamp: Date.now(), metrics: [{ name: "Node Control/Rebirth", type: "Boolean", value: true }] }));
      await waitFor(async () => {
        if (!out.includes("NBIRTH")) await host.publishAsync("spBv1.0/podwarden/NCMD/pod-a", rebirth);
        return /DBIRTH pod-a\/rack-1 seq \d+: .*Return Temperature=\d/.test(out) && /DDATA pod-a\/\S+ seq \d+: \S/.test(out);
      }, "births and data, decoded", 15_000, 300);
      expect(out).toMatch(/NBIRTH pod-a seq 0: bdSeq=\d+, Node Control\/Rebirth=false/);
      // DATA names its metrics by alias; the watcher names them from the births
      expect(out.slice(out.indexOf("NBIRTH"))).not.toMatch(/DDATA \S+ seq \d+: alias/);
    } finally {
      await host.endAsync();
      watch.kill("SIGTERM");
    }
  });

  it("serves the pod as a Redfish cooling unit, at the URL its board prints", async () => {
    const line = demo.help().split("\n").find((l) => l.includes("as a Redfish cooling unit"));
    const url = /curl -s (\S+)/.exec(line ?? "")?.[1];
    expect(url).toMatch(/\/redfish\/v1\/ThermalEquipment\/CDUs\/pod-a$/);
    const cdu = (await (await fetch(url!)).json()) as { EquipmentType: string; Status: { State: string } };
    expect(cdu.EquipmentType).toBe("CDU");
    expect(cdu.Status.State).toMatch(/^(Enabled|Starting)$/);
  });

  it("renders the status board", async () => {
    await waitFor(() => demo.agent.mode() !== "Starting", "out of Starting", 30_000);
    const board = demo.board();
    for (const want of ["mode", "rack-1", "rack-8", "pump", "tick lateness", "active alarms", "return", "cap"]) expect(board).toContain(want);
    expect(board).toMatch(/power \d+ kW drawn of a 680 kW budget/);
  });

  it("runs a varied workload, not eight identical racks, and serves its HMI with a login for the run", async () => {
    const demand = demo.sim.truth().racks.map((r) => r.demandPct);
    expect(new Set(demand.map((d) => Math.round(d))).size).toBeGreaterThanOrEqual(4);
    expect(Math.max(...demand) - Math.min(...demand)).toBeGreaterThan(30); // busy racks and idling ones
    expect(demo.hmiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const login = await fetch(`${demo.hmiUrl!}api/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(demo.hmiLogin) });
    expect(login.status).toBe(200);
    expect(((await login.json()) as { roles: string[] }).roles).toEqual(["engineer"]);
  });

  it("shows a newcomer the safety response to a leak: isolation, alarm, event", async () => {
    demo.sim.inject({ leak: "rack-3" });
    await waitFor(() => /rack-3 .*CLOSED/.test(demo.board()), "board shows rack-3 isolated", 10_000);
    await waitFor(() => demo.board().includes("leak at rack-3"), "board shows the alarm", 10_000);
    await waitFor(() => ((last("alarms")?.alarms as { id: string }[] | undefined) ?? []).some((a) => a.id === "leak:rack-3"), "retained alarm set", 10_000);
    await waitFor(() => messages.some((m) => m.topic === `${base}events` && m.body.type === "alarm.raised" && (m.body.alarm as { id: string }).id === "leak:rack-3"), "alarm event", 10_000);
    // the valve strokes in the plant's time: the event can reach mission control before the
    // simulator's next step has moved it (a CI run read 100 at that moment)
    await waitFor(() => demo.sim.truth().racks[2].supplyIsolationPct < 100, "rack-3's supply isolation valve closing", 10_000);
  });

  it("takes a signed command sent with `podwarden command`, as the board's help shows", async () => {
    const r = await run("node", ["dist/cli/podwarden.js", "command", "setpoint", "--url", demo.brokerUrl, "--site", "demo", "--pod", "pod-a", "--key", demo.commandKeyFile, "--key-id", "demo", "--mqtt-version", "4", "--params", '{"loop":"rack-2.valve","value":43,"leaseS":60}'], 30_000);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "ok", command: "setpoint" });
    await waitFor(() => messages.some((m) => m.topic === `${base}events` && m.body.type === "command.audit" && m.body.action === "setpoint" && m.body.result === "accepted"), "the setpoint's audit event", 10_000);
    // isolating a rack that still carries its load is refused, with what to do, and exits 1
    const loaded = await run("node", ["dist/cli/podwarden.js", "command", "isolate-rack", "--url", demo.brokerUrl, "--site", "demo", "--pod", "pod-a", "--key", demo.commandKeyFile, "--key-id", "demo", "--mqtt-version", "4", "--params", '{"rack":"rack-2"}'], 30_000);
    expect(loaded.code).toBe(1);
    expect(JSON.parse(loaded.stdout)).toMatchObject({ status: "rejected", error: { code: "refused", message: expect.stringContaining("move its load off first") as unknown } });
    expect(demo.sim.truth().racks[1].supplyIsolationPct).toBe(100);
    // a command the key may not send, or with bad params, exits 1 with the reason
    const bad = await run("node", ["dist/cli/podwarden.js", "command", "setpoint", "--url", demo.brokerUrl, "--site", "demo", "--pod", "pod-a", "--key", demo.commandKeyFile, "--key-id", "demo", "--mqtt-version", "4", "--params", '{"loop":"rack-1.valve","value":99,"leaseS":60}'], 30_000);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({ status: "rejected", error: { code: "out-of-envelope" } });
  }, 60_000);

  it("shows maintenance beside the mode, and suppresses only the Warnings work causes, never the leak", async () => {
    const send = (params: object): Promise<{ code: number | null; stdout: string; stderr: string }> =>
      run("node", ["dist/cli/podwarden.js", "command", "mode", "--url", demo.brokerUrl, "--site", "demo", "--pod", "pod-a", "--key", demo.commandKeyFile, "--key-id", "demo", "--mqtt-version", "4", "--params", JSON.stringify(params)], 30_000);
    type Listed = { id: string; suppressed: boolean };
    const listed = (): Listed[] => (last("alarms")?.alarms as Listed[] | undefined) ?? [];
    expect((await send({ maintenance: true })).code).toBe(0);
    await waitFor(() => last("state")?.maintenance === true, "retained state says maintenance", 10_000);
    // the work unplugs a device: its Warnings are listed, and flagged as suppressed
    demo.sim.inject({ device: "rack-5", offline: true });
    await waitFor(() => listed().some((a) => a.id === "device:rack-5" && a.suppressed), "device alarm listed, suppressed", 30_000);
    // the mode keeps telling the truth, and the leak from before is never suppressed
    expect(last("state")).toMatchObject({ state: "online", mode: "Degraded", maintenance: true });
    expect(listed().find((a) => a.id === "leak:rack-3")).toMatchObject({ suppressed: false });
    expect(messages.some((m) => m.topic === `${base}events` && m.body.type === "maintenance.changed" && m.body.on === true)).toBe(true);
    expect((await send({ maintenance: false })).code).toBe(0);
    await waitFor(() => last("state")?.maintenance === false, "maintenance over", 10_000);
    await waitFor(() => listed().length > 0 && listed().every((a) => !a.suppressed), "no alarm suppressed", 10_000);
    demo.sim.inject({ device: "rack-5", offline: false });
  }, 90_000);

  it("publishes offline as its last word when it stops", async () => {
    const d = demo;
    demo = undefined as unknown as RunningDemo;
    const watcher = await mqtt.connectAsync(d.brokerUrl, { clientId: "test-watcher" });
    const states: string[] = [];
    watcher.on("message", (topic, payload) => {
      if (topic === `${base}state`) states.push(String((JSON.parse(payload.toString()) as { state: string }).state));
    });
    await watcher.subscribeAsync(`${base}state`, { qos: 1 });
    await waitFor(() => states.includes("online"), "retained online");
    const stopping = d.stop();
    await waitFor(() => states.includes("offline"), "offline", 10_000);
    await watcher.endAsync(true);
    await stopping;
  });
});

describe("the demo beside a broker that already has its port", () => {
  it("takes a free port for its embedded broker instead of failing", async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", () => r()));
    const port = (taken.address() as AddressInfo).port;
    try {
      const demo = await startDemo({ simConfig: "configs/sim-pod.yaml", agentConfig: "configs/demo-pod.yaml", brokerPort: port, boardMs: 0, out: process.stdout, interactive: false });
      try {
        expect(new URL(demo.brokerUrl).port).not.toBe(String(port));
      } finally {
        await demo.stop();
      }
    } finally {
      await new Promise<void>((r) => taken.close(() => r()));
    }
  }, 60_000);
});

describe("the demo beside programs that have its ports", () => {
  it("serves metrics, its HMI, the simulator's devices and fault API on free ports instead, and the pod reads its racks there (a daemon's are never moved)", async () => {
    // the demo config's ports (the schema's defaults): held here, or already held by a daemon on
    // this host, which is the case the fallback is for
    const held: Server[] = [];
    // the ports this test holds: one another lane's process held as the test began may be free
    // again by the demo's start, and is not judged (a fresh-clone CI run, 2026-12-06: 9464)
    const mine = new Set<number>();
    // and one simulated rack's Modbus port and the fault API's (configs/sim-pod.yaml): a raw
    // EADDRINUSE stack trace ended the demo there (issue #51)
    for (const port of [9464, 8470, 15023, 8502]) {
      const s = createServer();
      const ok = await new Promise<boolean>((r) => {
        s.once("error", () => r(false));
        s.listen(port, "127.0.0.1", () => r(true));
      });
      if (ok) {
        held.push(s);
        mine.add(port);
      }
    }
    try {
      const demo = await startDemo({ simConfig: "configs/sim-pod.yaml", agentConfig: "configs/demo-pod.yaml", brokerPort: 0, boardMs: 0, out: process.stdout, interactive: false });
      try {
        expect(demo.urls.metrics).toBeDefined();
        const moved = (port: number, got: string | number | undefined): void => {
          if (mine.has(port)) expect(String(got), `port ${port} is held`).not.toBe(String(port));
        };
        moved(9464, new URL(demo.urls.metrics!).port);
        moved(8470, new URL(demo.hmiUrl!).port);
        const health = await fetch(new URL("/healthz", demo.urls.metrics));
        expect([200, 503]).toContain(health.status);
        expect((await fetch(demo.hmiUrl!)).status).toBe(200);
        moved(8502, new URL(demo.controlUrl).port);
        moved(15023, demo.sim.portOf("rack-3"));
        await waitFor(() => demo.agent.status().racks[2].returnTempC !== null, "rack-3 read on its free port", 30_000);
      } finally {
        await demo.stop();
      }
    } finally {
      for (const s of held) await new Promise<void>((r) => s.close(() => r()));
    }
  }, 60_000);
});

describe("the demo's ports set by flags (issue #51 item 5)", () => {
  /** a port free now: bound on 0 by the system and let go */
  const freePort = async (): Promise<number> => {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
    const port = (s.address() as AddressInfo).port;
    await new Promise<void>((r) => s.close(() => r()));
    return port;
  };

  it("listens on the ports the flags set and prints every port it got on one line", async () => {
    const [hmi, faults, metrics] = [await freePort(), await freePort(), await freePort()];
    const demo = await startDemo({ simConfig: "configs/sim-pod.yaml", agentConfig: "configs/demo-pod.yaml", brokerPort: 0, boardMs: 0, out: process.stdout, interactive: false, ports: { hmi, faults, metrics, devices: 0, redfish: 0 } });
    try {
      expect(new URL(demo.hmiUrl!).port).toBe(String(hmi));
      expect(new URL(demo.controlUrl).port).toBe(String(faults));
      expect(new URL(demo.urls.metrics!).port).toBe(String(metrics));
      expect((await fetch(demo.hmiUrl!)).status).toBe(200);
      const line = demo.portsLine;
      expect(line).toMatch(/^ports: broker \d+, devices [\d,-]+, (BMCs [\d,-]+, )?fault API \d+, HMI \d+, metrics \d+, Redfish \d+$/);
      expect(line).toContain(`HMI ${hmi}`);
      expect(line).toContain(`fault API ${faults}`);
      expect(line).toContain(`devices `);
      // devices: 0 took free ones, not the config's 15020-15028, and the line names the ones it got
      for (const d of ["cdu", "rack-1", "rack-8"]) expect(line).toContain(String(demo.sim.portOf(d)));
      expect(demo.help().split("\n")[0]).toBe(line);
    } finally {
      await demo.stop();
    }
  }, 60_000);

  it("a port set by a flag that another program holds stops the demo with one line naming it and its flag, and leaves nothing running", async () => {
    const held = createServer();
    await new Promise<void>((r) => held.listen(0, "127.0.0.1", () => r()));
    const port = (held.address() as AddressInfo).port;
    try {
      for (const flag of ["--hmi-port", "--fault-port", "--device-port"]) {
        const r = await run("node", ["dist/cli/podwarden.js", "demo", "--free-ports", flag, String(port)], 30_000);
        expect(r.code, r.stderr).toBe(2);
        const lines = r.stderr.trim().split("\n");
        expect(lines, r.stderr).toHaveLength(1);
        expect(lines[0]).toContain(`port ${port}`);
        expect(lines[0]).toContain(`set by ${flag} is in use`);
        expect(lines[0]).not.toMatch(/EADDRINUSE|at .*\.js/);
      }
      const bad = await run("node", ["dist/cli/podwarden.js", "demo", "--hmi-port", "70000"], 30_000);
      expect(bad.code).toBe(2);
      expect(bad.stderr.trim()).toBe("podwarden: --hmi-port: 70000 is not a port (0-65535; 0 takes a free one)");
    } finally {
      await new Promise<void>((r) => held.close(() => r()));
    }
  }, 90_000);
});
