// `podwarden run -c <config.yaml>`: the daemon. Starts the control plane (the agent, on a thread
// of its own: agent/plane/) and, on this thread, the service plane around it, then:
//   SIGTERM/SIGINT  drive actuators safe, stop, exit 0 within 5 s
//   SIGHUP          reload: the new file is read and validated first, in a worker thread, bounded
//                   in time and memory (agent/config/load-off-thread.ts); a bad one is rejected (the alarm
//                   config:rejected) and the running config stays; tuning changes apply in place, structural ones restart
//                   the agent's internals (device leases hold the actuators meanwhile)
// A config pushed by mission control (the signed command `config`, agent/config-push/) is taken
// the same way, one reload at a time with SIGHUP's, and runs over the -c file while it rides on it.
import { ConfigError, problemsInBrief } from "../lib/config-file.js";
import { identityChange, sameStructure, stateDirOf } from "../agent/lifecycle.js";
import { ControlPlane } from "../agent/plane/control-plane.js";
import { InProcessPlane } from "../agent/plane/in-process-plane.js";
import { ownThreadPossible, type PodPlane } from "../agent/plane/pod-plane.js";
import { loadAgentConfig, type LoadedConfig } from "../agent/config/load.js";
import { configWarnings } from "../agent/config/warnings.js";
import { loadAgentConfigOffThread } from "../agent/config/load-off-thread.js";
import { Logs } from "../agent/log.js";
import { resolve } from "node:path";
import { openStateDirectory } from "../lib/state-manifest.js";
import { ServicePlane } from "./service-plane.js";
import { daemonClaims, InstanceLock } from "../agent/ops/instance-lock.js";
import { SystemdNotifier } from "../agent/ops/systemd.js";
import { ConfigPush } from "../agent/config-push/config-push.js";
import type { ConfigPushConfig } from "../agent/config-push/schema.js";

/** The alarm a rejected reload raises (docs/agent.md, Alarms). */
const CONFIG_REJECTED = "config:rejected";
import { packageVersion } from "../agent/version.js";

export interface DaemonHooks {
  /** called once the control plane runs (systemd READY=1, the uplink, ...) */
  started?(plane: PodPlane): void | Promise<void>;
  /** called before the control plane stops (publish offline, ...) */
  stopping?(plane: PodPlane): void | Promise<void>;
  /** called after a reload restarted the agent's internals */
  replaced?(plane: PodPlane): void | Promise<void>;
}

export interface DaemonOptions {
  /** `--first-start`: the state directory's missing files are not losses; its manifest is made from what is there */
  firstStart?: boolean;
}

/** The alarm a state directory without its manifest raises (docs/reliability.md, State files). */
const STATE_MANIFEST = "state:manifest";

export async function runDaemon(configPath: string, hooks: DaemonHooks = {}, o: DaemonOptions = {}): Promise<number> {
  const local = loadAgentConfig(configPath); // throws ConfigError: the CLI exits 2
  const logs = new Logs(local.config.log, { site: local.config.site, pod: local.config.pod });
  const log = logs.module("daemon");
  log.info({ version: packageVersion(), config: configPath, hash: local.hash }, "podwarden starting");
  // before anything touches a device or a state file: a second daemon for this pod refuses to
  // start (throws InstanceLockError: the CLI exits 3)
  const { site, pod } = local.config;
  const lock = await InstanceLock.acquire(daemonClaims(site, pod, stateDirOf(local.config)), { pid: process.pid, pod: `${site}/${pod}`, config: resolve(configPath) });
  if (lock.unguarded.length > 0) log.warn({ problems: lock.unguarded }, "cannot claim this pod on the host: running without the guard against a second daemon");
  // before anything reads a state file: the manifest says which ones were written, so that one
  // missing is a loss, not a first start (lib/state-manifest.ts)
  const stateDir = stateDirOf(local.config);
  let opening: ReturnType<typeof openStateDirectory> | null;
  try {
    opening = stateDir === undefined ? null : openStateDirectory(stateDir, { firstStart: o.firstStart === true });
  } catch (err) {
    // before any device is touched: without its state directory the pod cannot keep a leak
    // latch or an operator's decision across a restart, so it does not start (issue #54 item 2)
    log.error({ stateDir, err: (err as Error).message }, "cannot open the state directory: podwarden does not start without it (leak latches and operator decisions live there)");
    await lock.release();
    return 1;
  }
  if (opening?.how === "adopted") log.warn({ stateDir, present: opening.present }, "first start stated: the state directory's manifest is made from the files present");
  if (opening?.how === "lost") log.error({ stateDir, present: opening.present }, opening.problem);
  // a config pushed by mission control runs over the -c file while it rides on that file
  // (agent/config-push/); the plane and the services it reads are made below
  let agent: PodPlane | null = null;
  let services: ServicePlane | null = null;
  let busy: Promise<unknown> = Promise.resolve();
  /** one reload at a time, whoever asks (SIGHUP, a push, a push put back) */
  const serial = <T>(f: () => Promise<T>): Promise<T> => {
    const p = busy.then(f, f);
    busy = p.catch(() => undefined);
    return p;
  };
  const push = new ConfigPush({
    stateDir,
    localPath: configPath,
    plane: () => agent!,
    settings: (): ConfigPushConfig => current.config.configPush,
    uplinkConnected: () => (services?.uplink === null || services?.uplink === undefined ? null : services.uplink.stats().connected),
    load: (path) => loadAgentConfigOffThread(path),
    take: (next) => serial(async () => {
      const refused = await take(next);
      return refused === null ? null : `${refused.why}: ${refused.problems.join("; ")}`;
    }),
    log: logs.module("config-push"),
  });
  const loaded: LoadedConfig = await push.choose(local, true, (path: string) => loadAgentConfig(path));
  /** the config taken last (the plane's own keeps the sections a tuning reload does not take) */
  let current: LoadedConfig = loaded;
  if (loaded !== local) log.warn({ hash: loaded.hash, local: local.hash }, "running the config pushed by mission control over the config file (docs/fleet.md)");
  for (const w of configWarnings(loaded.config)) log.warn({ warning: w }, "config warning");
  // the agent runs on the control plane's thread; everything below on this one talks to it by
  // bounded messages and reads the view it sends
  const own = ownThreadPossible(loaded.config);
  if (!own.ok) log.warn({ why: own.why }, "the control plane runs on the main thread, with the service plane: a service input that holds it holds control too (docs/architecture.md, Threads)");
  try {
    agent = own.ok ? await ControlPlane.start(loaded, logs) : await InProcessPlane.start(loaded, logs);
  } catch (err) {
    // what had started was stopped, its actuators driven safe (agent/plane/agent-host.ts
    // startAgent); the devices' leases hold them from here
    log.error({ err: (err as Error).message }, "podwarden could not start: stopping; the devices' leases keep what it had not driven safe");
    await lock.release();
    return 1;
  }
  // health and metrics answer before the uplink's first connection attempt (which may wait for an
  // unreachable broker)
  try {
    services = await ServicePlane.start(agent, loaded.config, { logs, localCommands: { config: (body, by) => push.command(body, by) } });
  } catch (err) {
    // A start cannot half-happen (issue #54): with a service that cannot start for a reason other
    // than its port or its page (those run without it, logged), the control plane drives its
    // actuators safe and stops, and the process exits 1 for systemd to see and restart
    log.error({ err }, "podwarden could not start its services: actuators driven safe, stopping");
    await agent.stop({ driveSafe: true, reason: "start failed", timeoutMs: 2500 });
    await lock.release();
    logs.flush();
    return 1;
  }
  const plane: PodPlane = agent;
  const svc: ServicePlane = services;
  push.tell();
  if (opening?.problem !== undefined) plane.reportProblem(STATE_MANIFEST, { severity: "Critical", source: "daemon", message: opening.problem, untilAcknowledged: true });
  await hooks.started?.(plane);
  // the control worker has ticked with valid (fail-safe until inputs arrive) outputs
  const systemd = new SystemdNotifier();
  systemd.notify("READY=1", `STATUS=running, mode ${plane.mode()}`);
  systemd.startWatchdog(() => plane.healthy());
  log.info({ mode: plane.mode(), systemd: systemd.enabled }, "podwarden running");

  // A rejected reload is an operator's decision refused: it raises CONFIG_REJECTED (Warning) with
  // why, so that the HMI and mission control show that the file on disk is not what runs; the
  // next reload that is taken (or finds the file unchanged, back to what runs) clears it.
  const rejected = (problems: readonly string[], why: string): void => {
    log.error({ problems }, `reload rejected: ${why}; the running config stays`);
    plane.reportProblem(CONFIG_REJECTED, { severity: "Warning", source: "daemon", message: `the config file's reload was rejected (${why}): ${problemsInBrief(problems, 200)}; the running config stays` });
  };
  const reload = async (): Promise<void> => {
    let next: LoadedConfig;
    try {
      // read and checked in a worker: the thread that serves control waits for a message, not
      // for the parse of whatever the file now holds; a pushed config riding on it goes on running
      next = await push.choose(await loadAgentConfigOffThread(configPath), false, (path: string) => loadAgentConfigOffThread(path));
    } catch (err) {
      rejected(err instanceof ConfigError ? err.problems : [(err as Error).message], "the new config is invalid");
      return;
    }
    push.tell();
    const refused = await take(next);
    if (refused !== null) rejected(refused.problems, refused.why);
  };
  /** Takes a checked config (a reload's or a push's); null when taken or unchanged, else why not. */
  async function take(next: LoadedConfig): Promise<{ problems: string[]; why: string } | null> {
    if (next.hash === plane.configHash) {
      plane.resolveProblem(CONFIG_REJECTED);
      log.info("reload: config unchanged");
      return null;
    }
    // a pod whose control plane has a thread of its own cannot take an RS-485 bus with RTS
    // direction control by a reload: its binding works on the main thread only (agent/plane/pod-plane.ts)
    const own = ownThreadPossible(next.config);
    if (plane instanceof ControlPlane && !own.ok) return { problems: [own.why], why: "an RS-485 bus with RTS direction control is added only with a restart" };
    const fixed = identityChange(plane.config, next.config);
    if (fixed !== null) return { problems: [fixed], why: "site, pod and stateDir change only with a restart" };
    plane.resolveProblem(CONFIG_REJECTED);
    // the HMI is not restarted by a reload (its pages stay connected): its own settings apply at
    // the next start, and the log says so rather than leave an operator to wonder
    if (JSON.stringify(next.config.redfish) !== JSON.stringify(loaded.config.redfish)) log.warn({ running: loaded.config.redfish }, "reload: the redfish settings changed; they apply at the next start");
    if (JSON.stringify(next.config.hmi) !== JSON.stringify(loaded.config.hmi)) log.warn({ running: loaded.config.hmi }, "reload: the hmi settings changed; they apply at the next start (the users file itself is read at every login)");
    systemd.notify("RELOADING=1");
    // a structural reload stops the uplink and Sparkplug around the agent's restart, as before:
    // they are started again on the new config once the control plane has taken it
    const structural = !sameStructure(plane.config, next.config);
    const s = svc;
    if (structural) await s.stopUplinks();
    let how: "tuning" | "restarted";
    try {
      how = await plane.reload(next);
    } catch (err) {
      if (structural) await s.startUplinks(plane.config.uplink);
      return { problems: [(err as Error).message], why: "the control plane could not take it" };
    }
    current = next;
    if (how === "tuning") {
      systemd.notify("READY=1", "STATUS=config reloaded");
      log.info({ hash: next.hash }, "reload: tuning applied in place");
      return null;
    }
    await s.startUplinks(next.config.uplink);
    s.replaced(plane);
    await hooks.replaced?.(plane);
    systemd.notify("READY=1", "STATUS=config reloaded, agent restarted");
    return null;
  }

  return await new Promise<number>((resolve) => {
    const onHup = (): void => {
      void serial(reload);
    };
    const onStop = (signal: string) => (): void => {
      process.off("SIGHUP", onHup);
      process.off("SIGTERM", onTerm);
      process.off("SIGINT", onInt);
      log.info({ signal }, "stopping");
      systemd.notify("STOPPING=1");
      systemd.stop();
      // exit within 5 s whatever happens: devices hold their leases and then fail safe alone
      const hard = setTimeout(() => {
        log.error("stop took too long; exiting");
        logs.flush();
        resolve(1);
      }, 4500);
      hard.unref();
      void busy
        .then(async () => {
          push.stop();
          await hooks.stopping?.(plane);
          await svc.stop({ driveSafe: true, reason: signal, timeoutMs: 2500 });
          await lock.release();
        })
        .then(
          () => {
            clearTimeout(hard);
            log.info("stopped");
            logs.flush();
            resolve(0);
          },
          (err: unknown) => {
            clearTimeout(hard);
            log.error({ err }, "error while stopping");
            logs.flush();
            resolve(1);
          },
        );
    };
    const onTerm = onStop("SIGTERM");
    const onInt = onStop("SIGINT");
    process.on("SIGHUP", onHup);
    process.on("SIGTERM", onTerm);
    process.on("SIGINT", onInt);
  });
}
