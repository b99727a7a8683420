// `podwarden fleet watch | command | config push | record | emulate`: the fleet subcommands' arguments checked
// and handed to their code (fleet-command.ts, fleet-emulate.ts, fleet/session.ts), each imported
// when it runs.
import { writeFileSync } from "node:fs";
import { UsageError } from "./usage-error.js";

/** What the fleet subcommands read of the command line. */
export interface FleetArgs {
  url?: string;
  "mqtt-version"?: string;
  username?: string;
  share?: string;
  consumers?: string;
  site?: string;
  every?: string;
  json?: boolean;
  pods?: string;
  key?: string;
  "key-id"?: string;
  params?: string;
  timeout?: string;
  out?: string;
  seconds?: string;
  session?: string;
  count?: string;
  first?: string;
  "telemetry-every"?: string;
  "alarm-every"?: string;
  keepalive?: string;
  "public-key"?: string;
  canary?: string;
  batch?: string;
  window?: string;
  vars?: string;
  ack?: boolean;
}

export async function fleetCli(sub: string | undefined, name: string | undefined, values: FleetArgs, log: (line: string) => void, file?: string): Promise<number> {
  if (values.url === undefined) throw new UsageError("fleet needs --url <broker>[,<broker>...]");
  const whole = (v: string | undefined, what: string, def: number, min = 1): number => {
    if (v === undefined) return def;
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`${what}: ${v} is not a whole number of at least ${min}`);
    return n;
  };
  const version = whole(values["mqtt-version"], "--mqtt-version", 5);
  if (version !== 4 && version !== 5) throw new UsageError("--mqtt-version: 4 or 5");
  const list = (v: string | undefined): string[] | undefined => v?.split(",").map((x) => x.trim()).filter((x) => x !== "");
  const common = { urls: list(values.url) ?? [], protocolVersion: version === 4 ? (4 as const) : (5 as const), username: values.username, password: process.env.PODWARDEN_MQTT_PASSWORD, out: process.stdout };
  const { fleetWatch, fleetCommand } = await import("./fleet-command.js");
  if (sub === "watch") {
    const stop = new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    await fleetWatch({ ...common, share: values.share, consumers: whole(values.consumers, "--consumers", 1), sites: list(values.site), ack: values.ack === true, everyS: whole(values.every, "--every", 5), json: values.json === true, stop });
    return 0;
  }
  if (sub === "command") {
      const pods = list(values.pods);
    if (name === undefined || pods === undefined || values.key === undefined || values["key-id"] === undefined) throw new UsageError("fleet command needs <name> --pods <site/pod>[,...] --key <file> --key-id <id>");
    const ok = await fleetCommand({ ...common, pods, command: name, params: values.params ?? "{}", keyFile: values.key, keyId: values["key-id"], timeoutMs: whole(values.timeout, "--timeout", 10) * 1000 });
    return ok === pods.length ? 0 : 1;
  }
  if (sub === "config") {
    const selectors = list(values.pods);
    if (name !== "push" || file === undefined || selectors === undefined || values.key === undefined || values["key-id"] === undefined) {
      throw new UsageError("fleet config push <file> --pods <site/pod or pattern>[,...] --key <file> --key-id <id> [--canary <site/pod>] [--batch <n>] [--window <s>] [--vars <file.json>]");
    }
    const { fleetConfigPush } = await import("./fleet-command.js");
    const outcomes = await fleetConfigPush({
      ...common,
      file,
      selectors,
      varsFile: values.vars,
      keyFile: values.key,
      keyId: values["key-id"],
      canary: values.canary,
      batchSize: whole(values.batch, "--batch", 5),
      windowS: values.window === undefined ? undefined : whole(values.window, "--window", 1),
      timeoutMs: whole(values.timeout, "--timeout", 10) * 1000,
    });
    const n = { applied: 0, unchanged: 0, reverted: 0, refused: 0, "no answer": 0, "not pushed": 0 };
    for (const o of outcomes) n[o.result]++;
    const kept = n.applied + n.unchanged;
    log(`${kept} of ${outcomes.length} pods run the pushed config; ${n.reverted} put it back, ${n.refused} refused it, ${n["no answer"]} silent, ${n["not pushed"]} not pushed`);
    return kept === outcomes.length ? 0 : 1;
  }
  if (sub === "record") {
    const pod = values.pods;
    if (pod === undefined || values.out === undefined) throw new UsageError("fleet record needs --pods <site/pod> --out <file> [--seconds <n>]");
    const { recordSession } = await import("../fleet/session.js");
    const session = await recordSession({ url: common.urls[0] ?? "", protocolVersion: common.protocolVersion, pod, durationMs: whole(values.seconds, "--seconds", 60) * 1000, username: common.username, password: common.password });
    writeFileSync(values.out, `${JSON.stringify(session)}\n`);
    log(`${values.out}: ${session.messages.length} messages over ${session.durationMs / 1000} s from ${pod}`);
    return 0;
  }
  if (sub === "emulate") {
    if (values.site === undefined || !/^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(values.site)) throw new UsageError("fleet emulate needs --site <s> (letters, digits, _ and -)");
    if ((values["key-id"] === undefined) !== (values["public-key"] === undefined)) throw new UsageError("fleet emulate: --key-id and --public-key go together");
    const stop = new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    const { fleetEmulate } = await import("./fleet-emulate.js");
    await fleetEmulate({
      ...common,
      sessionFile: values.session ?? "configs/fleet/demo-pod-session.json",
      site: values.site,
      count: whole(values.count, "--count", 100),
      first: whole(values.first, "--first", 0, 0),
      telemetryEvery: whole(values["telemetry-every"], "--telemetry-every", 1),
      alarmEveryS: values["alarm-every"] === undefined ? null : whole(values["alarm-every"], "--alarm-every", 1),
      keepaliveS: whole(values.keepalive, "--keepalive", 10),
      key: values["key-id"] === undefined || values["public-key"] === undefined ? null : { id: values["key-id"], publicKeyFile: values["public-key"] },
      everyS: whole(values.every, "--every", 5),
      json: values.json === true,
      stop,
    });
    return 0;
  }
  throw new UsageError("fleet watch | fleet command <name> | fleet config push <file> | fleet record | fleet emulate");
}
