// `podwarden hil run <scenario.yaml…> [-c <config.yaml>] [--sim <sim.yaml> | --rig <rig.yaml>]
// [--junit <file>] [--html <file>]`: HIL scenarios with their expectations, run in virtual time
// against the simulator's plant through the pod's real wiring and hot path, against a flight
// recording replayed into it, or (--rig) in real time: this program's daemon (`podwarden run`) in
// a process of its own against a rig (docs/hil.md). Prints a line per expectation, writes the
// JUnit XML and the HTML report, and exits non-zero when anything fails.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { adminRequest } from "../agent/ops/admin-socket.js";
import { ConfigError } from "../lib/config-file.js";
import { cpuQuotaGroup, realTimeThreads, type CpuQuota } from "../hil/cpu-quota.js";
import { fakeClockEnv, setFakeClock } from "../hil/faketime.js";
import { stallMainThread, type MainThreadStall } from "../hil/main-thread-stall.js";
import { mergePatch } from "../lib/merge-patch.js";
import { sensorIngestConfig, sensorPointId } from "../hil/sensor-gateway.js";
import { runRealTime, realTimePlan, type DaemonEvent, type PodView, type RealTimeDeps, type RunningDaemon } from "../hil/realtime-runner.js";
import { loadRig, type RigAdapter } from "../hil/rig.js";
import { agentConfigFromData, loadAgentConfig, type AgentConfig } from "../agent/config/load.js";
import { replayRecording } from "../agent/recorder/flight-replay.js";
import { readRecording } from "../agent/recorder/recording-file.js";
import { runReplay } from "../hil/replay-runner.js";
import { readTelemetryLog, telemetryReplaySource } from "../hil/telemetry-replay.js";
import { podBankSpec } from "../pod/bank.js";
import { podLayout } from "../pod/layout.js";
import { isFlightRecording, loadHilScenario, scenarioPod, type DaemonAction, type HilScenario } from "../hil/scenario.js";
import { campaignRun, campaignTable, PHASE_SPAN_MS, MAX_REPEAT, summariseCampaign } from "../hil/campaign.js";
import { htmlReport, junitXml } from "../hil/report.js";
import { checkScenario, runVirtual, type ScenarioRun } from "../hil/virtual-runner.js";
import { loadSimConfig } from "../sim/config.js";
import { DEMO_AGENT_CONFIG, demoAgentConfig, readReturnTempsThroughTransmitters } from "./demo-config.js";
import { virtualLoopPod } from "../pod/virtual-loop.js";
import { configDataWithProfiles } from "../agent/config/device-profiles.js";

export interface HilArgs {
  scenarios: string[];
  /** the daemon's config (default: the demo pod's) */
  config: string | undefined;
  /** the simulator's config (default: configs/sim-pod.yaml) */
  sim: string | undefined;
  /** a rig adapter: run in real time against that rig */
  rig?: string | undefined;
  junit: string | undefined;
  html: string | undefined;
  /** run each scenario this many times, as a campaign (hil/campaign.ts); default 1 */
  repeat?: number;
  log: (line: string) => void;
}

/**
 * Rewires a config's data so that the scenario's `transmitters` racks read their return
 * temperature through their 4–20 mA transmitter (readReturnTempsThroughTransmitters: the
 * simulator's register map, on the Modbus device named after the rack).
 */
function wireTransmitters(data: Record<string, unknown>, s: Pick<HilScenario, "transmitters" | "file">): void {
  const racks = s.transmitters;
  if (racks === undefined) return;
  const devices = ((data.modbus as { devices?: { name?: unknown }[] } | undefined)?.devices ?? []).map((d) => d.name);
  const missing = racks.filter((r) => !devices.includes(r));
  if (missing.length > 0) throw new ConfigError(s.file, missing.map((r) => `transmitters: ${r}: the config has no Modbus device named after the rack, whose input register 11 is its transmitter's loop current`));
  readReturnTempsThroughTransmitters(data, (name) => racks.includes(name));
}

/** Rewires `racks` to read their return temperature from the sensor gateway's MQTT topics, through the daemon's MQTT ingest. */
function wireMqttSensors(data: Record<string, unknown>, url: string, racks: readonly string[], file: string): void {
  const all = (data.racks as { name: string; points: Record<string, unknown> }[] | undefined) ?? [];
  const missing = racks.filter((r) => !all.some((x) => x.name === r));
  if (missing.length > 0) throw new ConfigError(file, missing.map((r) => `mqttSensors: no rack "${r}" in the config`));
  data.mqttIngest = sensorIngestConfig(url, racks);
  for (const rack of all) if (racks.includes(rack.name)) rack.points = { ...rack.points, returnTempC: sensorPointId(rack.name) };
}

/**
 * The config a scenario runs on: the config under test (`configPath`, or the demo pod's), as
 * `base` when the scenario asks for no rewiring, else read again and rewired (`transmitters`).
 */
export function scenarioConfig(s: Pick<HilScenario, "transmitters" | "file">, configPath: string | undefined, base: AgentConfig): AgentConfig {
  if (s.transmitters === undefined) return base;
  const path = configPath ?? DEMO_AGENT_CONFIG;
  const data = configDataWithProfiles(path);
  wireTransmitters(data, s);
  return agentConfigFromData(data, path);
}

/**
 * A replay scenario: its recording replayed into the virtual pod with this config's wiring and
 * tuning and this build (what is under test), the expectations judged on it.
 */
async function replayScenario(s: HilScenario, pod: AgentConfig, log: (line: string) => void): Promise<ScenarioRun> {
  const file = s.replay as string;
  // a flight recording by its extension; anything else is read as a captured telemetry log
  if (!isFlightRecording(file)) {
    const tl = readTelemetryLog(file);
    const r = runReplay(s, pod, telemetryReplaySource(tl, pod));
    log(`  ${file}: a telemetry log, ${tl.messages} messages, ${tl.readings.length} readings, replayed with this config and build (nothing recorded to compare its outputs with)`);
    return r;
  }
  const rec = await readRecording(file);
  const spec = podBankSpec(pod.control, podLayout(pod), pod.racks);
  const r = runReplay(s, pod, {
    ticks: rec.header.count,
    run: (onTick) => replayRecording(rec, { spec, pod: virtualLoopPod(pod), onTick }),
  });
  log(`  ${s.replay as string}: replayed with this config and build; the hot path's outputs ${r.identical ? "identical to the recording's" : "differ from the recording's (a changed config or build)"}`);
  return r;
}

/**
 * The daemon's uplink to mission control's broker for a scenario with `uplink: true`: the
 * runner's own broker on loopback (MQTT 3.1.1: aedes), given up on and reconnected to within a
 * second or two, so an outage and its end show within a short scenario. Signed commands are
 * taken from the runner's key alone, as an engineer's; the rest of the command settings are the
 * product's defaults (the rates a flood meets among them). The spool is the scenario's, where it
 * sets one, or the product's.
 */
function rigUplink(url: string, key: DaemonOptions["commandKey"], spool: DaemonOptions["spool"]): Record<string, unknown> {
  return { url, ...(spool === undefined ? {} : { spool }), protocolVersion: 4, keepaliveS: 2, connectTimeoutMs: 1000, reconnect: { baseMs: 100, maxMs: 1000 }, commands: key === undefined ? { enabled: false } : { enabled: true, keys: [{ id: key.id, publicKey: key.publicKey, roles: ["engineer"] }] } };
}

/** What a scenario asks of the daemon it runs on (RealTimeDeps.startDaemon). */
type DaemonOptions = Parameters<RealTimeDeps["startDaemon"]>[0];

/** The daemon's config for one real-time run: the rig's device addresses, a fresh state directory, ephemeral listeners, the runner's uplink or none. */
function rigDaemonConfig(configPath: string, rig: RigAdapter, stateDir: string, o: DaemonOptions = {}): Record<string, unknown> {
  const data = configDataWithProfiles(configPath);
  const modbusData = (data.modbus ?? {}) as { devices?: { name: string; unitId?: number; tcp?: { host?: string; port?: number }; bus?: string }[]; buses?: { name: string; path: string; baudRate: number }[] };
  const modbus = modbusData.devices ?? [];
  const redfish = ((data.redfishClient as { devices?: { name: string; url: string }[] } | undefined)?.devices ?? []);
  const problems: string[] = [];
  for (const [name, d] of Object.entries(rig.devices)) {
    const m = modbus.find((x) => x.name === name);
    const b = redfish.find((x) => x.name === name);
    if (m !== undefined && (d.serial !== undefined || d.url === undefined)) {
      if (d.serial !== undefined) {
        if (d.host !== undefined || d.port !== undefined || d.url !== undefined) problems.push(`devices.${name}: a serial line, or a TCP address or URL, not both`);
        else if (m.tcp === undefined) problems.push(`devices.${name}: the config reaches it over RTU already: its bus is the config's`);
        else {
          // one bus per port: devices on one line share it, as on a real multi-drop bus
          const buses = (modbusData.buses ??= []);
          let bus = buses.find((b) => b.path === d.serial?.path);
          if (bus === undefined) {
            bus = { name: `rig-serial-${buses.length + 1}`, path: d.serial.path, baudRate: d.serial.baudRate };
            buses.push(bus);
          }
          delete m.tcp;
          m.bus = bus.name;
        }
      } else if (m.tcp === undefined) problems.push(`devices.${name}: the config reaches it over RTU, not TCP`);
      else {
        if (d.host !== undefined) m.tcp.host = d.host;
        if (d.port !== undefined) m.tcp.port = d.port;
      }
      if (d.unitId !== undefined) m.unitId = d.unitId;
    } else if (b !== undefined && d.url !== undefined) b.url = d.url;
    else problems.push(`devices.${name}: ${configPath} has no ${d.url === undefined ? "Modbus" : "Redfish"} device "${name}"`);
  }
  if (problems.length > 0) throw new ConfigError(rig.file, problems);
  // its own state (no latch from an earlier scenario), and no listener that a running demo holds
  data.stateDir = stateDir;
  // the events (alarm.raised, …) are logged at info, from the agent module: the runner reads them
  const log = (data.log ?? {}) as { level?: string; modules?: Record<string, string> };
  data.log = { ...log, level: log.level === "debug" || log.level === "trace" ? log.level : "info", modules: { ...log.modules, agent: "info" } };
  for (const k of ["metrics", "hmi", "redfish"]) data[k] = { ...(data[k] as object | undefined), port: 0 };
  // an uplink in the config would reach a broker the scenario does not own: its own, or none
  if (o.uplinkUrl !== undefined) data.uplink = rigUplink(o.uplinkUrl, o.commandKey, o.spool);
  else delete data.uplink;
  if (o.transmitters !== undefined) wireTransmitters(data, { transmitters: o.transmitters, file: rig.file });
  // the scenario's MQTT sensors, from the runner's broker (over any ingest the config has: the scenario owns its sensors' broker)
  if (o.mqttSensors !== undefined && o.uplinkUrl !== undefined) wireMqttSensors(data, o.uplinkUrl, o.mqttSensors, rig.file);
  // the scenario's own tuning over the config's (checked before the run: scenarioPod)
  if (o.control !== undefined) data.control = mergePatch(data.control ?? {}, o.control);
  return data;
}

/** An event line is read up to this size, and a run keeps at most this many events. */
const MAX_EVENT_LINE = 64 * 1024;
const MAX_EVENTS = 100_000;

/** A daemon step's signal (the rest start a process: a new one once the last has exited, or a second). */
const DAEMON_SIGNALS: Record<Exclude<DaemonAction, "restart" | "restart-refused" | "second" | "stall-main" | "resume-main" | "end-leak-thread">, NodeJS.Signals> = { kill: "SIGKILL", terminate: "SIGTERM", stop: "SIGSTOP", continue: "SIGCONT", reload: "SIGHUP" };

/** One `podwarden run` process (this very program, with its shebang's flags), its events appended to `events`; `env` over this process's. */
function spawnDaemon(file: string, events: DaemonEvent[], env: Record<string, string>): { child: ChildProcess; exited: Promise<number | null>; running: Promise<void>; errText: () => string } {
  const child = spawn(fileURLToPath(new URL("./podwarden.js", import.meta.url)), ["run", "-c", file], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  let errText = "";
  child.stderr.on("data", (d: Buffer) => (errText = (errText + d.toString()).slice(-4000)));
  const running = new Promise<void>((resolve) => {
    const lines = createInterface({ input: child.stdout });
    lines.on("line", (line) => {
      const atMs = performance.now();
      if (line.includes('"msg":"podwarden running"')) resolve();
      // an event line is a few hundred bytes; the runner keeps a run's worth of them
      if (line.length > MAX_EVENT_LINE || events.length >= MAX_EVENTS || !line.includes('"event":')) return;
      try {
        const e = (JSON.parse(line) as { event?: { type?: unknown; alarm?: { id?: unknown; severity?: unknown } } }).event;
        if (typeof e?.type !== "string") return;
        const a = e.alarm;
        events.push({ atMs, type: e.type, ...(typeof a?.id === "string" && typeof a.severity === "string" ? { alarm: { id: a.id, severity: a.severity } } : {}) });
      } catch {
        // not a JSON line: the daemon's own output, not an event
      }
    });
  });
  return { child, exited, running, errText: () => errText };
}

/** A daemon process ends after SIGTERM within this long, or is killed. */
const STOP_GRACE_MS = 20_000;
/** An `end-leak-thread` step fails unless the daemon raises its `leak-thread` alarm this soon. */
const LEAK_THREAD_ALARM_MS = 5000;
/** A daemon that is to refuse to start has this long to exit (it refuses before it opens a device). */
const REFUSAL_MS = 30_000;
/** The exit codes of `podwarden run`'s refusals (cli/podwarden.ts): a bad config, another daemon. */
const EXIT_BAD_CONFIG = 2;
const EXIT_ANOTHER_DAEMON = 3;

/** What a started daemon did first: said it runs, exited (with its code), or neither within `ms`. */
function firstOf(p: ReturnType<typeof spawnDaemon>, ms: number): Promise<"running" | "late" | { c: number | null }> {
  return Promise.race([p.running.then(() => "running" as const), p.exited.then((c) => ({ c })), new Promise<"late">((r) => setTimeout(() => r("late"), ms).unref())]);
}

/** How a start that must be refused ended: the refusal in words, or an Error saying why it was none. */
async function refusal(p: ReturnType<typeof spawnDaemon>, code: number, what: string): Promise<string> {
  const first = await firstOf(p, REFUSAL_MS);
  // what it said, on one line: a config's problems are a line each
  const said = p.errText().trim().replace(/\s+/g, " ").slice(0, 400) || "(no output)";
  if (first === "running") throw new Error(`${what}: it was not refused, it runs`);
  if (first === "late") throw new Error(`${what}: neither refused nor running after ${REFUSAL_MS / 1000} s`);
  if (first.c !== code) throw new Error(`${what}: exited ${String(first.c)}, not ${code}: ${said}`);
  return `refused, exit ${code}: ${said}`;
}

/**
 * `podwarden run` on the rig, until it says it runs. A restart step starts it again on the same
 * config and state directory (its latches and decisions carry over, as after a real restart).
 */
async function startRigDaemon(configPath: string, rig: RigAdapter, o: DaemonOptions): Promise<RunningDaemon> {
  const stateDir = mkdtempSync(join(tmpdir(), "podwarden-hil-"));
  const file = join(stateDir, "agent.yaml");
  const good = stringify(rigDaemonConfig(configPath, rig, stateDir, o));
  writeFileSync(file, good);
  const events: DaemonEvent[] = [];
  // a scenario that moves the wall clock runs the daemon under libfaketime, the clock's offset in a file
  const clockFile = join(stateDir, "clock");
  const env: Record<string, string> = o.fakeClock === true ? fakeClockEnv(clockFile) : {};
  // the runner's hook in the daemon's process, before its own modules: what ends its leak thread
  if (o.hooks === true) env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ""} --import=${new URL("../hil/daemon-hooks.js", import.meta.url).href}`.trim();
  let proc = spawnDaemon(file, events, env);
  // a terminate asks it to exit: a restart then waits for that
  let terminating = false;
  // a `cpu` step's cgroup, made at the first
  let quota: CpuQuota | undefined;
  let cpuShare: number | null = null;
  // a `daemon: stall-main` step's hold on its main thread
  let mainStall: MainThreadStall | undefined;
  const alive = (): boolean => proc.child.exitCode === null && proc.child.signalCode === null;
  const untilRunning = async (): Promise<void> => {
    const first = await firstOf(proc, 60_000);
    if (first !== "running") throw new Error(`podwarden run on the rig ${first === "late" ? "did not start in 60 s" : `exited ${String(first.c)}`}: ${proc.errText().trim() || "(no output)"}`);
  };
  const stop = async (): Promise<void> => {
    // a starved daemon is given its CPU back, and a held main thread let go, to stop as it would
    quota?.set(null);
    await mainStall?.release();
    mainStall = undefined;
    if (alive()) {
      // a stopped process takes no SIGTERM until it is continued
      proc.child.kill("SIGCONT");
      proc.child.kill("SIGTERM");
      const t = setTimeout(() => proc.child.kill("SIGKILL"), STOP_GRACE_MS);
      await proc.exited;
      clearTimeout(t);
    }
    try {
      quota?.remove();
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  };
  try {
    await untilRunning();
  } catch (err) {
    await stop();
    throw err;
  }
  const sock = join(stateDir, "admin.sock");
  return {
    status: async (timeoutMs) => {
      if (!alive()) return undefined;
      try {
        const r = await adminRequest(sock, "GET", "/status", timeoutMs);
        return r.status === 200 ? (r.body as unknown as PodView) : undefined;
      } catch {
        return undefined;
      }
    },
    act: async (action) => {
      if (action === "stall-main") {
        if (!alive()) throw new Error("daemon stall-main: it is not running");
        if (mainStall !== undefined) throw new Error("daemon stall-main: its main thread is held already");
        mainStall = await stallMainThread(proc.child.pid as number);
        return;
      }
      if (action === "resume-main") {
        if (mainStall === undefined) throw new Error("daemon resume-main: its main thread is not held (stall-main first)");
        const held = mainStall;
        mainStall = undefined;
        return held.release();
      }
      if (action === "end-leak-thread") {
        if (!alive()) throw new Error("daemon end-leak-thread: it is not running");
        if (o.hooks !== true) throw new Error("daemon end-leak-thread: the daemon was started without the runner's hook");
        // the proof that it ended: the agent's own alarm for a leak thread it did not stop
        const seen = events.length;
        const t0 = performance.now();
        proc.child.kill("SIGUSR2");
        while (!events.slice(seen).some((e) => e.type === "alarm.raised" && e.alarm?.id === "leak-thread")) {
          if (performance.now() - t0 > LEAK_THREAD_ALARM_MS) throw new Error(`daemon end-leak-thread: no leak-thread alarm ${LEAK_THREAD_ALARM_MS / 1000} s after SIGUSR2: ${proc.errText().trim().slice(-300) || "(no output)"}`);
          await new Promise((r) => setTimeout(r, 10));
        }
        return `the leak thread ended: its alarm raised ${Math.round(performance.now() - t0)} ms after`;
      }
      if (action === "second") {
        if (!alive()) throw new Error("daemon second: the first is not running (restart it first)");
        // its events are not the pod's: a refused daemon logs none, and one that ran is a failure
        const second = spawnDaemon(file, [], env);
        try {
          return await refusal(second, EXIT_ANOTHER_DAEMON, "daemon second: a second podwarden run for the same pod and state directory");
        } finally {
          if (second.child.exitCode === null && second.child.signalCode === null) {
            second.child.kill("SIGKILL");
            await second.exited;
          }
        }
      }
      if (action !== "restart" && action !== "restart-refused") {
        if (!alive()) throw new Error(`daemon ${action}: it is not running (restart it first)`);
        proc.child.kill(DAEMON_SIGNALS[action]);
        if (action === "terminate") terminating = true;
        return;
      }
      if (alive() && !terminating) throw new Error(`daemon ${action}: it still runs (kill or terminate it first)`);
      if (alive()) {
        // after a terminate, the daemon drives its actuators safe and exits by itself
        const t = setTimeout(() => proc.child.kill("SIGKILL"), STOP_GRACE_MS);
        await proc.exited;
        clearTimeout(t);
      }
      terminating = false;
      // a hold on the dead daemon's main thread ended with it
      await mainStall?.release();
      mainStall = undefined;
      proc = spawnDaemon(file, events, env);
      // a restarted daemon is a new process on the same starved host: a quota in force holds it too
      if (quota !== undefined && cpuShare !== null) quota.add(proc.child.pid as number);
      if (action === "restart-refused") return refusal(proc, EXIT_BAD_CONFIG, "daemon restart-refused: podwarden run on a bad config");
      await untilRunning();
    },
    setCpu: (share) => {
      if (!alive()) throw new Error(`cpu ${share ?? "full"}: the daemon is not running`);
      const fifo = realTimeThreads(proc.child.pid as number);
      if (share !== null && fifo.length > 0) throw new Error(`cpu ${share}: ${fifo.length} of the daemon's threads run SCHED_FIFO, which no CPU quota binds; a scenario that starves the daemon sets control: { schedFifo: false }`);
      // a group per run, named after this runner and its state directory: two runs never share one
      quota ??= cpuQuotaGroup(`podwarden-hil-${basename(stateDir)}`);
      quota.set(share);
      cpuShare = share;
      quota.add(proc.child.pid as number);
      if (share !== null) return;
      // the proof that the limit bit: how often the kernel held the daemon back under it
      const t = quota.throttled();
      return `lifted; the daemon was held back in ${t.periods} periods of 100 ms, ${(t.ms / 1000).toFixed(2)} s in all`;
    },
    editConfig: (action) => {
      // a bad edit: valid YAML, but a config it is not (an unknown key)
      writeFileSync(file, action === "restore" ? good : `${good}surprise: true\n`);
    },
    damageState: (name, damage) => {
      const f = join(stateDir, `${name}.json`);
      if (damage === "delete") rmSync(f, { force: true });
      // not JSON at all: what a torn write or a bad sector leaves
      else writeFileSync(f, "\u0000\u0000{\"latch\u0000 garbage");
    },
    setClock: (offset) => {
      if (o.fakeClock !== true) throw new Error(`clock ${offset}: the daemon was not started on a fake clock`);
      setFakeClock(clockFile, offset);
    },
    events: () => events,
    stop,
  };
}

/** Asks the operator at the terminal, and waits for Enter (until the run ends); refused without one. */
async function promptOperator(text: string, until?: AbortSignal): Promise<void> {
  if (!process.stdin.readable) throw new Error(`a manual step needs an operator at the terminal: ${text}`);
  if (until?.aborted === true) throw new Error(`the run ended before this manual step: ${text}`);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const onEnd = (): void => void rl.close();
  until?.addEventListener("abort", onEnd);
  try {
    await new Promise<void>((resolve, reject) => {
      rl.once("close", () => reject(new Error(`no operator answered by the end of the run: ${text}`)));
      rl.question(`${text}\n(press Enter when done) `, () => resolve());
    });
  } finally {
    until?.removeEventListener("abort", onEnd);
    rl.removeAllListeners("close");
    rl.close();
  }
}

const modeWords = (r: ScenarioRun): string =>
  r.mode === "replay" ? (isFlightRecording(r.scenario.replay ?? "") ? "a recording replayed" : "a telemetry log replayed") : r.mode === "real-time" ? `real time on the rig ${r.rig ?? ""}` : "virtual time";

/** Runs every scenario; 0 when every expectation was met, 1 otherwise. Throws on a bad file. */
export async function hilRun(a: HilArgs): Promise<number> {
  if (a.scenarios.length === 0) throw new Error("hil run needs at least one scenario file");
  const pod = a.config === undefined ? demoAgentConfig() : loadAgentConfig(a.config).config;
  const rig = a.rig === undefined ? undefined : loadRig(a.rig);
  const sim = loadSimConfig(a.sim ?? "configs/sim-pod.yaml");
  // every file is read and checked before the first runs: a typo fails at once, not after an hour
  const scenarios: HilScenario[] = a.scenarios.map((f) => loadHilScenario(f));
  // each scenario's config made once (a rewired one is read and checked again), not per run
  const configs = new Map(scenarios.map((s) => [s, scenarioConfig(s, a.config, pod)]));
  const podOf = (s: HilScenario): AgentConfig => configs.get(s) ?? pod;
  for (const s of scenarios) {
    if (rig === undefined) checkScenario(s, podOf(s));
    else realTimePlan(s, scenarioPod(s, podOf(s)), rig);
  }
  if (rig !== undefined) rigDaemonConfig(a.config ?? DEMO_AGENT_CONFIG, rig, "unused");
  const repeat = a.repeat ?? 1;
  if (!(Number.isInteger(repeat) && repeat >= 1 && repeat <= MAX_REPEAT)) throw new Error(`hil run: --repeat ${repeat}: a whole number of runs, 1 to ${MAX_REPEAT}`);
  const replays = scenarios.filter((s) => s.replay !== undefined).map((s) => s.file);
  if (repeat > 1 && replays.length > 0) throw new Error(`hil run: --repeat: a replay is the same run every time (${replays.join(", ")})`);
  const runs: ScenarioRun[] = [];
  for (const s of scenarios) {
    for (let k = 0; k < repeat; k++) {
      const variant = rig === undefined && repeat > 1 ? campaignRun(k, repeat, s.seed) : {};
      const r =
        rig !== undefined
          ? await runRealTime(s, podOf(s), rig, { startDaemon: (o) => startRigDaemon(a.config ?? DEMO_AGENT_CONFIG, rig, o), prompt: promptOperator, log: a.log })
          : s.replay === undefined
            ? runVirtual(s, sim, podOf(s), variant)
            : await replayScenario(s, scenarioPod(s, pod), a.log);
      if (repeat > 1) r.campaign = { run: k + 1, of: repeat, ...variant };
      runs.push(r);
      // real time: the wall time includes the daemon's start and the pod's settling
      const speed = r.mode === "real-time" ? "with the daemon's start and settling" : `${(r.durationMs / r.wallMs).toFixed(0)}x real time`;
      const which = repeat > 1 ? ` run ${k + 1} of ${repeat}` : "";
      a.log(`${r.passed ? "PASS" : "FAIL"} ${s.name}${which} (${(r.durationMs / 1000).toFixed(1)} s of ${modeWords(r)} in ${(r.wallMs / 1000).toFixed(2)} s, ${speed})`);
      for (const v of r.verdicts) a.log(`  ${v.skipped !== undefined ? "skip" : v.passed ? "ok  " : "FAIL"} ${v.name}: ${v.figure}`);
    }
  }
  if (repeat > 1) a.log(`\ncampaign: ${repeat} runs of each scenario${rig === undefined ? `, seeds and phases (0-${PHASE_SPAN_MS} ms) varied` : ""}; each time to safe over the runs\n\n${campaignTable(summariseCampaign(runs))}\n`);
  if (a.junit !== undefined) writeFileSync(a.junit, junitXml(runs));
  if (a.html !== undefined) writeFileSync(a.html, htmlReport(runs));
  const failed = runs.filter((r) => !r.passed).length;
  a.log(failed === 0 ? `all ${runs.length} scenarios passed` : `${failed} of ${runs.length} scenarios failed`);
  return failed === 0 ? 0 : 1;
}
