// `npm start` / `podwarden demo`: a whole pod on one machine with no setup — an embedded MQTT
// broker, the simulator and the agent — with a live status board in the terminal.
//   keys: l = leak on the next rack, u = unplug / replug rack-5's device, r = reset leaks,
//         c = clear every fault, q or Ctrl-C = stop everything
import { startEmbeddedBroker, type EmbeddedBroker } from "../lib/embedded-broker.js";
import { loadSimConfig } from "../sim/config.js";
import { SimControlApi } from "../sim/control-api.js";
import { PodSim } from "../sim/pod-sim.js";
import { loopModeWord } from "../pod/status-words.js";
import { podDrawKw } from "../pod/status-view.js";
import { redactUrl } from "../lib/mqtt-connection.js";
import { ControlPlane } from "../agent/plane/control-plane.js";
import { ServicePlane } from "./service-plane.js";
import type { PodPlane } from "../agent/plane/pod-plane.js";
import type { PodReader } from "../agent/pod-api.js";
import { DEMO_BMC_PASSWORD_ENV, demoConfigData, readRacksThroughBmcs } from "./demo-config.js";
import { validateAgentConfig } from "../agent/config/load.js";
import { Logs } from "../agent/log.js";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { generateCommandKey } from "../agent/commands/signing.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { topicBase } from "../agent/uplink/uplink.js";
import { setUser } from "../agent/hmi/users.js";
import { randomBytes } from "node:crypto";
import { checkSetPorts, portsLine, type DemoPorts } from "./demo-ports.js";

export interface DemoOptions {
  simConfig: string;
  agentConfig: string;
  /** external broker URL instead of the embedded one */
  broker?: string;
  /** the embedded broker's port when no flag sets one: a free one where it is taken */
  brokerPort: number;
  /** ports set by flags (0: a free one): never moved, and one taken stops the demo at once (cli/demo-ports.ts) */
  ports?: DemoPorts;
  /** render the board this often, ms; 0 = never (tests read the board through renderBoard) */
  boardMs: number;
  out: NodeJS.WritableStream;
  interactive: boolean;
  /** also publish the pod as a Sparkplug B edge node (group "podwarden") */
  sparkplug?: boolean;
  /** each rack's power, leak detector and cap through its simulated BMC over Redfish */
  redfishRacks?: boolean;
}

export interface RunningDemo {
  sim: PodSim;
  /** the pod, its control plane on a thread of its own as in `podwarden run` */
  agent: PodPlane;
  broker: EmbeddedBroker | null;
  brokerUrl: string;
  controlUrl: string;
  /** the private key the demo's pod accepts commands from (key id "demo", role engineer) */
  commandKeyFile: string;
  /** where the pod's HMI is served (null with hmi.enabled false in the agent config) */
  hmiUrl: string | null;
  /** the HMI login this run made: user "demo", role engineer */
  hmiLogin: { name: string; password: string };
  /** where metrics and health, the HMI and Redfish answer (each on a free port where its configured one was taken) */
  urls: { metrics?: string; hmi?: string; redfish?: string };
  /** every port the demo listens on, as it got them, on one line (printed at the start and under the board) */
  portsLine: string;
  board(): string;
  /** the lines the board prints under itself: how to watch and command the pod */
  help(): string;
  stop(): Promise<void>;
}

/** The demo pod's power budget, kW (see startDemo). */
export const DEMO_BUDGET_KW = 680;

const pad = (s: string, n: number): string => (s.length >= n ? s.slice(0, n) : s + " ".repeat(n - s.length));
const num = (x: number | null, d = 1): string => (x !== null && Number.isFinite(x) ? x.toFixed(d) : "  -");

export function renderBoard(pod: Pick<PodReader, "identity" | "status" | "activeAlarms" | "snapshot" | "powerBudgetKw">, sim: PodSim): string {
  const snap = pod.snapshot();
  const s = snap.status as ReturnType<PodReader["status"]>;
  const t = sim.truth();
  const lines: string[] = [];
  lines.push(`podwarden demo  site ${pod.identity.site} / pod ${pod.identity.pod}   mode ${s.mode}   plant time ${t.timeS.toFixed(0)} s`);
  lines.push(
    `control tick lateness p50 ${num(s.control.p50Us, 0)} µs  p99 ${num(s.control.p99Us, 0)} µs  max ${num(s.control.maxUs, 0)} µs  overruns ${s.control.overruns}  SCHED_FIFO ${s.control.schedFifo}`,
  );
  lines.push(`power ${num(podDrawKw(s.racks), 0)} kW drawn of a ${num(pod.powerBudgetKw(), 0)} kW budget`);
  lines.push(`pump  speed ${num(s.pump.speedCmdPct)} %   dp ${num(s.pump.dpKpa)} kPa (sp ${num(s.pump.setpointKpa, 0)})   ${s.pump.enabled ? "running" : "STOPPED"}   reservoir ${num((100 * t.cdu.reservoirL) / sim.config.plant.reservoir.volumeL, 1)} %`);
  lines.push("");
  lines.push(`${pad("rack", 8)}${pad("supply", 8)}${pad("return", 8)}${pad("flow", 8)}${pad("valve", 8)}${pad("iso", 8)}${pad("power", 8)}${pad("cap", 8)}${pad("leak", 10)}${pad("loop", 10)}isolation`);
  for (const r of s.racks) {
    lines.push(
      `${pad(r.name, 8)}${pad(num(r.supplyTempC), 8)}${pad(num(r.returnTempC), 8)}${pad(num(r.flowLpm), 8)}${pad(num(r.valvePct), 8)}${pad(r.supplyIsolationOpen && r.returnIsolationOpen ? "open" : "CLOSED", 8)}${pad(num(r.powerKw), 8)}${pad(num(r.powerCapKw, 0), 8)}${pad(r.leak, 10)}${pad(loopModeWord(r.loopStatus), 10)}${r.isolation}`,
    );
  }
  lines.push("");
  const alarms = pod.activeAlarms();
  lines.push(`active alarms (${alarms.length})`);
  for (const a of alarms.slice(0, 10)) lines.push(`  ${pad(a.severity, 9)}${a.acknowledged ? "ack " : "    "}${a.message}`);
  return lines.join("\n");
}

/** The simulator on its configured ports, or on free ones where one is taken. */
async function startSim(config: ReturnType<typeof loadSimConfig>, out: NodeJS.WritableStream, set: DemoPorts): Promise<PodSim> {
  const sim = new PodSim(config);
  try {
    await sim.start();
    return sim;
  } catch (err) {
    await sim.stop();
    if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE" || config.devices.basePort === 0 || set.devices !== undefined || set.bmcs !== undefined) throw err;
    out.write(`demo: a simulated device's port is taken (${(err as Error).message}): the simulator's devices on free ports instead\n`);
    const free = new PodSim({ ...config, devices: { ...config.devices, basePort: 0 } });
    await free.start();
    return free;
  }
}

export async function startDemo(o: DemoOptions): Promise<RunningDemo> {
  const set = o.ports ?? {};
  const simConfig = loadSimConfig(o.simConfig);
  if (o.redfishRacks === true) simConfig.devices.redfish ??= { basePort: 0, user: "admin", password: "podwarden-sim", limitRampKwPerS: 50, trays: 4 };
  if (set.devices !== undefined) simConfig.devices.basePort = set.devices;
  if (set.bmcs !== undefined && simConfig.devices.redfish !== undefined) simConfig.devices.redfish.basePort = set.bmcs;
  if (set.faults !== undefined) simConfig.control.port = set.faults;
  // a port set by a flag and taken: one line, before anything has started
  const racks = simConfig.plant.racks;
  await checkSetPorts([
    { key: "broker", port: o.broker === undefined ? set.broker : undefined, host: "127.0.0.1" },
    { key: "devices", port: set.devices, count: racks + 1, host: simConfig.devices.host },
    { key: "bmcs", port: simConfig.devices.redfish === undefined ? undefined : set.bmcs, count: racks, host: simConfig.devices.host },
    { key: "faults", port: set.faults, host: simConfig.control.host },
  ]);
  // a broker already on the port (a local mosquitto, say): take a free port instead; the board
  // prints the actual one in its mosquitto_sub lines
  const broker =
    o.broker === undefined
      ? await startEmbeddedBroker(set.broker ?? o.brokerPort).catch((err: NodeJS.ErrnoException) => {
          if (err.code === "EADDRINUSE" && set.broker === undefined) return startEmbeddedBroker(0);
          throw err;
        })
      : null;
  const brokerUrl = o.broker ?? broker!.url;
  // the simulator's devices and its fault API on their configured ports, or, where one is taken
  // (a second demo, another program), on free ones, said on the output: it ended in a raw
  // EADDRINUSE stack trace (issue #51). The agent is pointed at whichever the devices got.
  const sim = await startSim(simConfig, o.out, set);
  const api = new SimControlApi(sim);
  let agent: PodPlane | null = null;
  let services: ServicePlane | null = null;
  const stateDir = mkdtempSync(join(tmpdir(), "podwarden-demo-"));
  try {
    const controlPort = await api.listen(simConfig.control.port, simConfig.control.host).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "EADDRINUSE" || set.faults !== undefined) throw err;
      o.out.write(`demo: the simulator's fault API port ${simConfig.control.port} is taken: on a free port instead (below)\n`);
      return api.listen(0, simConfig.control.host);
    });
    const data = demoConfigData((d) => sim.portOf(d), o.agentConfig);
    const bmcs = simConfig.devices.redfish;
    if (o.redfishRacks === true && bmcs !== undefined) {
      readRacksThroughBmcs(data, (d) => sim.portOf(d));
      process.env[DEMO_BMC_PASSWORD_ENV] ??= bmcs.password;
    }
    // The demo's racks run a varied workload (configs/sim-pod.yaml: rackLoads) that peaks near
    // 750 kW; a budget below that peak makes the pod cap its lower-priority racks there, so the
    // budget is seen at work (on the board and the HMI) and not only read about.
    const supervisor = (data.supervisor ?? {}) as { powerBudget?: Record<string, unknown> };
    data.supervisor = { ...supervisor, powerBudget: { ...supervisor.powerBudget, podKw: DEMO_BUDGET_KW } };
    // aedes speaks MQTT 3.1.1 only; an external broker (mosquitto) gets MQTT 5
    data.uplink = { url: brokerUrl, telemetryMs: 1000, protocolVersion: o.broker === undefined ? 4 : 5, sparkplug: { enabled: o.sparkplug === true } };
    data.log = { level: "warn", modules: {} };
    // the demo's state (spool, latches, replay guard) lives for one run only
    data.stateDir = stateDir;
    // a signing key for this run, so a newcomer can send mission control's commands by hand
    const key = generateCommandKey();
    const keyFile = join(stateDir, "demo.key");
    writeFileSync(keyFile, key.privatePem, { mode: 0o600 });
    (data.uplink as Record<string, unknown>).commands = { keys: [{ id: "demo", publicKey: key.publicRaw, roles: ["engineer"] }] };
    // and an HMI login for this run, printed on the board
    const hmiPassword = randomBytes(9).toString("base64url");
    const usersFile = join(stateDir, "hmi-users.yaml");
    await setUser(usersFile, "demo", ["engineer"], hmiPassword);
    data.hmi = { ...(data.hmi ?? {}), usersFile, ...(set.hmi === undefined ? {} : { port: set.hmi }) };
    if (set.metrics !== undefined) data.metrics = { ...(data.metrics ?? {}), port: set.metrics };
    // the pod as a Redfish cooling unit, read-only, on a port of its own choosing (or the flag's)
    data.redfish = { ...(data.redfish ?? {}), enabled: true, port: set.redfish ?? 0 };
    const config = validateAgentConfig(data, o.agentConfig);
    await checkSetPorts([
      { key: "hmi", port: config.hmi.enabled ? set.hmi : undefined, host: config.hmi.host },
      { key: "metrics", port: config.metrics.enabled ? set.metrics : undefined, host: config.metrics.host },
      { key: "redfish", port: set.redfish, host: config.redfish.host },
    ]);
    // the demo logs to a file-less sink: the board is the interface
    const logs = new Logs(config.log, { site: config.site, pod: config.pod }, { write: () => true });
    // the agent on a thread of its own, the services here: the daemon's two planes (agent/plane/),
    // and the daemon's own service setup (cli/service-plane.ts), on free ports where the
    // configured ones are taken (a daemon or another demo on this host)
    agent = await ControlPlane.start({ config, hash: "demo", path: o.agentConfig }, logs);
    services = await ServicePlane.start(agent, config, { logs, freePortIfTaken: (service) => set[service] === undefined });
    const a = agent;
    const sv = services;
    const hmiUrl = sv.urls.hmi ?? null;
    const redfishUrl = sv.urls.redfish ?? "";
    let timer: NodeJS.Timeout | null = null;
    const ports = portsLine({
      broker: broker === null ? null : Number(new URL(broker.url).port),
      devices: ["cdu", ...config.racks.map((r) => r.name)].map((d) => sim.portOf(d)).filter((p): p is number => p !== undefined),
      bmcs: config.racks.map((r) => sim.portOf(`${r.name}.bmc`)).filter((p): p is number => p !== undefined),
      faults: controlPort,
      ...sv.urls,
    });
    o.out.write(`${ports}\n`);
    const helpText = `${ports}\n` + help(brokerUrl, config.site, config.pod, controlPort, keyFile, config.uplink?.protocolVersion ?? 5, hmiUrl === null ? null : { url: hmiUrl, password: hmiPassword }, sv.sparkplug !== null, `${redfishUrl}/ThermalEquipment/CDUs/${config.pod}`, stateDir);
    if (o.boardMs > 0) {
      timer = setInterval(() => o.out.write(`\x1b[H\x1b[2J${renderBoard(a, sim)}\n\n${helpText}\n`), o.boardMs);
    }
    return {
      sim,
      agent: a,
      broker,
      brokerUrl,
      controlUrl: `http://${simConfig.control.host}:${controlPort}`,
      commandKeyFile: keyFile,
      hmiUrl,
      hmiLogin: { name: "demo", password: hmiPassword },
      urls: sv.urls,
      portsLine: ports,
      board: () => renderBoard(a, sim),
      help: () => helpText,
      stop: async () => {
        if (timer !== null) clearInterval(timer);
        await sv.stop({ driveSafe: true, reason: "demo stopped" });
        await api.close();
        await sim.stop();
        await broker?.close();
        rmSync(stateDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    if (services !== null) await services.stop({ driveSafe: false, reason: "demo failed to start" });
    else await agent?.stop({ driveSafe: false, reason: "demo failed to start" });
    await api.close();
    await sim.stop();
    await broker?.close();
    rmSync(stateDir, { recursive: true, force: true });
    throw err;
  }
}

export function help(brokerUrl: string, site: string, pod: string, controlPort: number, keyFile: string, mqttVersion: number, hmi: { url: string; password: string } | null = null, sparkplug = false, redfishCdu: string | null = null, stateDir: string | null = null): string {
  const u = new URL(brokerUrl);
  const cmd = `node dist/cli/podwarden.js command <name> --url ${redactUrl(brokerUrl)} --site ${site} --pod ${pod} --key ${keyFile} --key-id demo --mqtt-version ${mqttVersion}`;
  return [
    ...(hmi === null ? [] : [`the pod's HMI: open ${hmi.url} in a browser; to act, log in as demo / ${hmi.password}`]),
    "watch the topics:",
    `  mosquitto_sub -h ${u.hostname} -p ${u.port || 1883} -v -t '${topicBase(site, pod)}#'`,
    `  mosquitto_sub -h ${u.hostname} -p ${u.port || 1883} -v -t '${topicBase(site, pod)}alarms'`,
    ...(redfishCdu === null ? [] : [`the pod as a Redfish cooling unit: curl -s ${redfishCdu}`]),
    ...(sparkplug ? [`watch it as a Sparkplug B edge node, decoded: node dist/cli/podwarden.js sparkplug-watch --url ${redactUrl(brokerUrl)} --group podwarden --node ${pod}`] : []),
    ...(stateDir === null
      ? []
      : [
          `a leak writes a flight recording (docs/engineering.md): node dist/cli/podwarden.js recording list --state-dir ${stateDir}`,
          `relay-autotune a loop and see the gains it proposes: node dist/cli/podwarden.js tune rack-2.valve --state-dir ${stateDir}`,
          `prove an isolation valve still moves (a partial-stroke test): node dist/cli/podwarden.js stroke rack-4 --valve supply --state-dir ${stateDir}`,
        ]),
    "keys: l leak on the next rack   u unplug/replug rack-5   r reset leaks   c clear faults   q quit",
    `or inject faults yourself: curl -s -XPOST localhost:${controlPort}/fault -d '{"leak":"rack-3"}'`,
    "send a signed command as mission control would (docs/mqtt.md), e.g.:",
    `  ${cmd.replace("<name>", "isolate-rack")} --params '{"rack":"rack-2"}'`,
  ].join("\n");
}

/** The interactive demo: keys on a TTY, Ctrl-C (or SIGTERM) stops everything cleanly. */
export async function demoCommand(o: DemoOptions): Promise<number> {
  const demo = await startDemo(o);
  let nextLeak = 0;
  let unplugged = false;
  const racks = demo.agent.config.racks.length;
  return await new Promise<number>((resolve) => {
    const stop = (): void => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      if (process.stdin.isTTY) process.stdin.setRawMode(false);
      process.stdin.pause();
      demo.stop().then(
        () => resolve(0),
        () => resolve(1),
      );
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
    if (o.interactive && process.stdin.isTTY) {
      process.stdin.setRawMode(true);
      process.stdin.resume();
      process.stdin.on("data", (d: Buffer) => {
        const k = d.toString();
        if (k === "q" || k === "\u0003") stop();
        else if (k === "l") demo.sim.inject({ leak: `rack-${(nextLeak++ % racks) + 1}` });
        else if (k === "u") demo.sim.inject({ device: "rack-5", offline: (unplugged = !unplugged) });
        else if (k === "c") demo.sim.inject({ clear: "all" });
        else if (k === "r") {
          demo.sim.inject({ clear: "all" });
          for (let r = 0; r < racks; r++) void demo.agent.resetLeak(r);
        }
      });
    }
  });
}
