#!/usr/bin/env -S node --max-semi-space-size=1 --optimize-for-size --v8-pool-size=1
// The V8 flags keep the daemon small on a pod controller (docs/agent.md): 1 MB young-
// generation semi-spaces instead of 16 (the agent's garbage is short-lived and cheap to
// scavenge), size-over-speed heuristics for JavaScript, and one V8 background thread instead
// of four (a 2-core controller gains nothing from four, and each costs memory). The hot path is
// WebAssembly and the control worker allocates nothing per tick, so none costs control timing.
// This line is the one place the flags are written: the systemd unit and the benchmarks are
// checked against it (test/systemd.test.ts).
// podwarden command line. Exit codes: 0 ok, 1 runtime failure, 2 usage or invalid config,
// 3 another daemon already runs this pod or this state directory (docs/operations.md).
//
// Each subcommand's code is imported when that subcommand runs: `podwarden run` then never
// loads the simulator, the embedded broker or the command signer, which would only cost the
// daemon resident memory on the pod controller.
import { parseArgs } from "node:util";
import { ConfigError } from "../lib/config-file.js";
import { configWarnings } from "../agent/config/warnings.js";
import { loadAgentConfig } from "../agent/config/load.js";
import { join } from "node:path";
import { InstanceLockError } from "../agent/ops/instance-lock.js";
import { versionLine } from "../agent/version.js";
import { nodeVersionProblem } from "../lib/node-version.js";
import { readPassword } from "./read-password.js";
import { UsageError } from "./usage-error.js";
import { failSafeTable } from "../pod/fail-safe.js";
import { HELP } from "./help.js";


async function main(argv: string[]): Promise<number> {
  const tooOld = nodeVersionProblem(process.versions.node);
  if (tooOld !== null) {
    process.stderr.write(`podwarden: ${tooOld}\n`);
    return 1;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: "string", short: "c" },
        scenario: { type: "string" },
        rtu: { type: "string" },
        broker: { type: "string" },
        rack: { type: "string" },
        "state-dir": { type: "string" },
        "broker-port": { type: "string" },
        "device-port": { type: "string" },
        "bmc-port": { type: "string" },
        "fault-port": { type: "string" },
        "hmi-port": { type: "string" },
        "metrics-port": { type: "string" },
        "redfish-port": { type: "string" },
        "free-ports": { type: "boolean" },
        migrate: { type: "boolean" },
        "key-id": { type: "string" },
        out: { type: "string" },
        url: { type: "string" },
        site: { type: "string" },
        pod: { type: "string" },
        key: { type: "string" },
        params: { type: "string" },
        seq: { type: "string" },
        ttl: { type: "string" },
        "mqtt-version": { type: "string" },
        username: { type: "string" },
        "fail-safe": { type: "boolean" },
        "first-start": { type: "boolean" },
        csv: { type: "boolean" },
        "with-config": { type: "string" },
        wasm: { type: "string" },
        sparkplug: { type: "boolean" },
        "redfish-racks": { type: "boolean" },
        group: { type: "string" },
        node: { type: "string" },
        users: { type: "string" },
        name: { type: "string" },
        role: { type: "string" },
        status: { type: "boolean" },
        abort: { type: "boolean" },
        rule: { type: "string" },
        kp: { type: "string" },
        ki: { type: "string" },
        kd: { type: "string" },
        revert: { type: "boolean" },
        lease: { type: "string" },
        by: { type: "string" },
        bus: { type: "string" },
        from: { type: "string" },
        to: { type: "string" },
        "timeout-ms": { type: "string" },
        release: { type: "boolean" },
        valve: { type: "string" },
        sim: { type: "string" },
        rig: { type: "string" },
        junit: { type: "string" },
        repeat: { type: "string" },
        share: { type: "string" },
        consumers: { type: "string" },
        every: { type: "string" },
        json: { type: "boolean" },
        pods: { type: "string" },
        timeout: { type: "string" },
        seconds: { type: "string" },
        session: { type: "string" },
        count: { type: "string" },
        first: { type: "string" },
        "alarm-every": { type: "string" },
        "telemetry-every": { type: "string" },
        keepalive: { type: "string" },
        "public-key": { type: "string" },
        canary: { type: "string" },
        batch: { type: "string" },
        window: { type: "string" },
        vars: { type: "string" },
        ack: { type: "boolean" },
        html: { type: "string" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "v" },
      },
    });
  } catch (err) {
    process.stderr.write(`podwarden: ${(err as Error).message}\n\n${HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.version === true) {
    process.stdout.write(`${versionLine()}\n`);
    return 0;
  }
  const command = positionals[0];
  if (values.help === true || command === undefined) {
    process.stdout.write(HELP);
    return command === undefined && values.help !== true ? 2 : 0;
  }
  const log = (line: string): void => void process.stdout.write(`${line}\n`);
  /** the daemon's state directory: --state-dir, the config's stateDir, $STATE_DIRECTORY, or the systemd unit's */
  // --state-dir, else the config's (unless told not to read it), else systemd's, else the package's
  const stateDir = (fromConfig = true): string =>
    values["state-dir"] ?? (fromConfig && values.config !== undefined ? loadAgentConfig(values.config).config.stateDir : undefined) ?? process.env.STATE_DIRECTORY ?? "/var/lib/podwarden";
  try {
    switch (command) {
      case "demo": {
        const { demoPortsFromFlags } = await import("./demo-ports.js");
        const { demoCommand } = await import("./demo.js");
        return await demoCommand({
          simConfig: "configs/sim-pod.yaml",
          agentConfig: "configs/demo-pod.yaml",
          broker: values.broker,
          brokerPort: 1883,
          ports: demoPortsFromFlags(values),
          boardMs: process.stdout.isTTY ? 1000 : 5000,
          out: process.stdout,
          interactive: true,
          sparkplug: values.sparkplug === true,
          redfishRacks: values["redfish-racks"] === true,
        });
      }
      case "sparkplug-watch": {
        if (values.url === undefined) throw new UsageError("sparkplug-watch needs --url <broker>");
        const { sparkplugWatch } = await import("./sparkplug-watch.js");
        await sparkplugWatch({ url: values.url, group: values.group ?? "podwarden", node: values.node, out: process.stdout });
        return 0;
      }
      case "run":
        if (values.config === undefined) throw new UsageError("run needs -c <config.yaml>");
        return await (await import("./daemon.js")).runDaemon(values.config, {}, { firstStart: values["first-start"] === true });
      case "rollback": {
        const { rollbackCommand } = await import("./rollback-command.js");
        // the state directory is not read from the config: the config in place may be the one that fails
        // not from the config: a rollback must work when the config in place no longer loads
        return rollbackCommand({ stateDir: stateDir(false), statusOnly: values.status === true, configFile: values.config, log });
      }
      case "check-config": {
        if (values.config === undefined) throw new UsageError("check-config needs -c <config.yaml>");
        if (values.migrate === true) {
          const { migrateCommand } = await import("./migrate-command.js");
          return migrateCommand({ config: values.config, out: values.out, stdout: (t) => void process.stdout.write(t), stderr: (l) => void process.stderr.write(`${l}\n`) });
        }
        const l = loadAgentConfig(values.config);
        for (const w of configWarnings(l.config)) log(`warning: ${w}`);
        log(`${values.config}: valid (site ${l.config.site}, pod ${l.config.pod}, ${l.config.racks.length} racks, ${l.config.modbus.devices.length} Modbus devices, sha256 ${l.hash.slice(0, 12)})`);
        if (values["fail-safe"] === true) process.stdout.write(`\n${failSafeTable(l.config, l.config.supervisor.escalation)}\n`);
        return 0;
      }
      case "recording": {
        const { recordingCommand } = await import("./recording-command.js");
        try {
          return await recordingCommand({
            sub: positionals[1],
            id: positionals[2],
            stateDir: stateDir(),
            csv: values.csv === true,
            out: values.out,
            withConfig: values["with-config"],
            wasm: values.wasm,
            config: values.config,
            log,
          });
        } catch (err) {
          if (err instanceof ConfigError) throw err;
          process.stderr.write(`podwarden: ${(err as Error).message}\n`);
          return 1;
        }
      }
      case "reset-leak": {
        if (values.rack === undefined) throw new UsageError("reset-leak needs --rack <name>");
        const dir = stateDir();
        const { adminRequest } = await import("../agent/ops/admin-socket.js");
        const r = await adminRequest(join(dir, "admin.sock"), "POST", `/reset-leak?rack=${encodeURIComponent(values.rack)}`);
        if (r.status === 200) {
          log(`${values.rack}: leak latch reset; the rack returns to service`);
          return 0;
        }
        process.stderr.write(`podwarden: ${values.rack}: ${r.body.result === "refused-wet" ? "reset refused: a leak input is still wet" : String(r.body.error ?? r.body.result)}\n`);
        return 1;
      }
      case "io": {
        const { ioCommand, ioForceCommand } = await import("./io-command.js");
        if (positionals[1] === "force") return await ioForceCommand({ stateDir: stateDir(), log, output: positionals[2], value: positionals[3], lease: values.lease, release: values.release === true });
        if (positionals[1] !== undefined) throw new UsageError(`io: unknown subcommand "${positionals[1]}" (io, or io force)`);
        return await ioCommand({ stateDir: stateDir(), json: values.json === true, log });
      }
      case "scan": {
        const { scanCommand } = await import("./io-command.js");
        return await scanCommand({ stateDir: stateDir(), log, bus: values.bus, from: values.from, to: values.to, timeoutMs: values["timeout-ms"], json: values.json === true });
      }
      case "commission": {
        const { commissionCommand } = await import("./io-command.js");
        return await commissionCommand({ stateDir: stateDir(), log, by: values.by });
      }
      case "maintenance": {
        const { maintenanceCommand } = await import("./io-command.js");
        return await maintenanceCommand({ stateDir: stateDir(), log, state: positionals[1] });
      }
      case "tune":
      case "gains": {
        const loop = positionals[1];
        if (loop === undefined) throw new UsageError(`${command} needs <loop> (rack-1.valve, ..., cdu.pump)`);
        const { tuneCommand, gainsCommand } = await import("./tune-command.js");
        const a = { loop, stateDir: stateDir(), log };
        try {
          if (command === "gains") return await gainsCommand({ ...a, rule: values.rule, kp: values.kp, ki: values.ki, kd: values.kd, revert: values.revert === true });
          if (values.status === true && values.abort === true) throw new UsageError("tune: --status or --abort, not both");
          return await tuneCommand({ ...a, action: values.abort === true ? "abort" : values.status === true ? "status" : "start" });
        } catch (err) {
          if (err instanceof UsageError) throw err;
          process.stderr.write(`podwarden: ${(err as Error).message}
`);
          return 1;
        }
      }
      case "stroke": {
        if (values.status === true && values.abort === true) throw new UsageError("stroke: --status or --abort, not both");
        const action = values.abort === true ? "abort" : values.status === true ? "status" : "start";
        const rack = positionals[1];
        if (action === "start" && (rack === undefined || (values.valve !== "supply" && values.valve !== "return"))) throw new UsageError("stroke needs <rack> --valve supply|return (or --status, --abort)");
        if (action !== "start" && rack !== undefined) throw new UsageError(`stroke --${action} takes no rack: one test runs at a time`);
        const { strokeCommand } = await import("./stroke-command.js");
        try {
          return await strokeCommand({ stateDir: stateDir(), log, action, ...(rack === undefined ? {} : { rack, valve: values.valve }) });
        } catch (err) {
          process.stderr.write(`podwarden: ${(err as Error).message}\n`);
          return 1;
        }
      }
      case "hil": {
        if (positionals[1] !== "run") throw new UsageError("hil: run <scenario.yaml>... (docs/hil.md)");
        if (values.rig !== undefined && values.sim !== undefined) throw new UsageError("hil run: --sim (virtual time) or --rig (real time), not both");
        if (values.repeat !== undefined && !/^\d{1,4}$/.test(values.repeat)) throw new UsageError(`hil run: --repeat ${values.repeat}: a whole number of runs`);
        const { hilRun } = await import("./hil-command.js");
        try {
          return await hilRun({ scenarios: positionals.slice(2), config: values.config, sim: values.sim, rig: values.rig, junit: values.junit, html: values.html, repeat: values.repeat === undefined ? undefined : Number(values.repeat), log });
        } catch (err) {
          if (err instanceof ConfigError) throw err;
          process.stderr.write(`podwarden: ${(err as Error).message}\n`);
          return 1;
        }
      }
      case "keygen": {
        if (values["key-id"] === undefined) throw new UsageError("keygen needs --key-id <id>");
        const { keygen } = await import("../agent/commands/send-command.js");
        for (const line of keygen(values.out ?? ".", values["key-id"])) log(line);
        return 0;
      }
      case "hmi-user": {
        if (values.users === undefined || values.name === undefined || values.role === undefined) throw new UsageError("hmi-user needs --users <file> --name <n> --role <r>");
        const { ROLES } = await import("../agent/commands/schema.js");
        const roles = values.role.split(",");
        const bad = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
        if (bad.length > 0) throw new UsageError(`--role: ${bad.join(", ")} is not one of ${ROLES.join(", ")}`);
        const password = await readPassword();
        if (password.length < 8) throw new UsageError("the password must have at least 8 characters");
        const { setUser } = await import("../agent/hmi/users.js");
        await setUser(values.users, values.name, roles as (typeof ROLES)[number][], password);
        log(`${values.users}: ${values.name} (${roles.join(", ")}) set; the daemon reads the file at every login`);
        return 0;
      }
      case "command": {
        const name = positionals[1];
        const need = { url: values.url, site: values.site, pod: values.pod, key: values.key, "key-id": values["key-id"] };
        const missing = Object.entries(need).filter(([, v]) => v === undefined).map(([k]) => `--${k}`);
        if (name === undefined || missing.length > 0) throw new UsageError(`command needs <name> ${missing.join(" ")}`.trim());
        const num = (v: string | undefined, what: string): number | undefined => {
          if (v === undefined) return undefined;
          const n = Number(v);
          if (!Number.isSafeInteger(n) || n < 0) throw new UsageError(`${what}: ${v} is not a whole number`);
          return n;
        };
        const version = num(values["mqtt-version"], "--mqtt-version") ?? 5;
        if (version !== 4 && version !== 5) throw new UsageError("--mqtt-version: 4 or 5");
        const { sendCommand } = await import("../agent/commands/send-command.js");
        const r = await sendCommand({
          url: need.url as string,
          site: need.site as string,
          pod: need.pod as string,
          command: name,
          params: values.params ?? "{}",
          keyFile: need.key as string,
          keyId: need["key-id"] as string,
          seq: num(values.seq, "--seq"),
          ttlS: num(values.ttl, "--ttl") ?? 60,
          protocolVersion: version,
          timeoutMs: 10_000,
          username: values.username,
          password: process.env.PODWARDEN_MQTT_PASSWORD,
        });
        log(JSON.stringify(r, null, 2));
        return r.status === "ok" ? 0 : 1;
      }
      case "fleet":
        return await (await import("./fleet-cli.js")).fleetCli(positionals[1], positionals[2], values, log, positionals[3]);
      case "sim":
        if (values.config === undefined) throw new UsageError("sim needs -c <sim.yaml>");
        await (await import("./sim-command.js")).simCommand(values.config, values.scenario, log, values.rtu);
        return 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (err) {
    if (err instanceof ConfigError || err instanceof UsageError) {
      process.stderr.write(`podwarden: ${err.message}\n`);
      return 2;
    }
    if (err instanceof InstanceLockError) {
      process.stderr.write(`podwarden: ${err.message}\n`);
      return 3;
    }
    process.stderr.write(`podwarden: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
}


main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    process.stderr.write(`podwarden: ${String(err)}\n`);
    process.exitCode = 1;
  },
);
