// The demo pod as `podwarden run` against the simulator in a process of its own, with the HMI and
// Redfish served and a users file, and the service-plane attacks of issue #49 on it: bursts of
// wrong logins and wrong Basic credentials, a slowloris, a SIGHUP with an alias-heavy config, its
// main thread held. The attack tests (test/service-attacks.test.ts) judge what each did to
// control; the attack benchmark (bench/attacks.ts) measures it beside a quiet window of the same
// run. Both read the pod over its admin socket, which no attack here reaches. With `mqtt`, the pod
// also has an uplink taking signed commands and an MQTT sensor on a mosquitto of its own, for the
// forged-command flood and the oversized sensor payload.
import { connect, type Socket } from "node:net";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Agent as UndiciAgent, fetch as undiciFetch } from "undici";
import { stringify } from "yaml";
import mqtt from "mqtt";
import { signedCommand } from "../agent/commands/client.js";
import type { KeyObject } from "node:crypto";
import { generateCommandKey, parsePrivateKey } from "../agent/commands/signing.js";
import { setUser } from "../agent/hmi/users.js";
import { adminRequest } from "../agent/ops/admin-socket.js";
import type { PodStatus } from "../agent/pod-api.js";
import { demoConfigData } from "../cli/demo-config.js";
import { inFailsafe } from "../pod/status-words.js";
import { startDaemon, untilRunning, type Daemon } from "./daemon-process.js";
import { stopProcess, waitFor } from "./processes.js";
import { Mosquitto } from "./mosquitto-process.js";
import { metricValue } from "./prometheus-text.js";
import { startSimProcess, type SimProcess } from "./sim-process.js";

/** GET /status over the daemon's admin socket. */
export async function adminStatus(sock: string): Promise<PodStatus> {
  const r = await adminRequest(sock, "GET", "/status", 10_000);
  if (r.status !== 200) throw new Error(`the admin socket answered /status with ${r.status}`);
  return r.body as unknown as PodStatus;
}

/** Every loop in live control: a status word, and no fail-safe. */
export function allLive(s: PodStatus): boolean {
  return [...s.racks.map((r) => r.loopStatus), s.pump.loopStatus].every((st) => st !== 0 && !inFailsafe(st));
}

/**
 * Alarms an attack may leave: `control:overrun` judges the machine (how late the 1 kHz ticks ran
 * while the attacker made 16k connections on the same two cores), not the service plane; the
 * benchmark measures it beside a quiet window. The tests count every other alarm as harm.
 */
export const MACHINE_TIMING = new Set(["control:overrun"]);

/** Where an attack starts: the fail-safe count, and how far the daemon's log has got. */
export interface Mark {
  failsafeEntries: number;
  line: number;
}

/** What an attack did to control, from its mark on. */
export interface Harm {
  /** loops that left live control for fail-safe during it */
  failsafeEntries: number;
  allLive: boolean;
  mode: PodStatus["mode"];
  /** alarms raised during it, the machine's own timing (MACHINE_TIMING) included */
  alarms: string[];
  status: PodStatus;
}

export interface AttackPod {
  daemon: Daemon;
  sim: SimProcess;
  hmi: string;
  redfish: string;
  admin: string;
  configFile: string;
  /** with `mqtt`: the broker of the pod's uplink and its MQTT sensor, the key mission control signs with, and the topics */
  mqtt?: { url: string; key: KeyObject; keyId: string; site: string; pod: string; requestTopic: (command: string) => string; responseTopic: string; sensorTopic: string };
  /** a counter or gauge from the daemon's /metrics, summed over the series that carry `labels` */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  /** a client bound to one loopback address: the daemon sees each as its own source */
  client(address: string): UndiciAgent;
  mark(): Promise<Mark>;
  harm(since: Mark): Promise<Harm>;
  stop(): Promise<void>;
}

/** The attack pod under the pod identity `pod`, in a directory of its own under `dir`, once every loop is in live control. */
export async function startAttackPod(dir: string, pod: string, o: { nodeFlags?: string[]; mqtt?: boolean } = {}): Promise<AttackPod> {
  mkdirSync(join(dir, "state"), { recursive: true });
  const sim = await startSimProcess(dir, 1500);
  const broker = o.mqtt === true ? await Mosquitto.start() : null;
  const key = generateCommandKey();
  const users = join(dir, "users.yaml");
  await setUser(users, "alice", ["operator"], "alice-password");
  await setUser(users, "carol", ["operator"], "carol-password");
  const data = demoConfigData((device) => sim.ports[device]) as unknown as Record<string, unknown>;
  data.pod = pod;
  data.stateDir = join(dir, "state");
  data.hmi = { enabled: true, port: 0, usersFile: users };
  data.redfish = { enabled: true, port: 0, usersFile: users, maxRequestsPerS: 10_000 };
  data.metrics = { enabled: true, port: 0 };
  const site = String(data.site);
  const sensorTopic = `attack/${pod}/ambient`;
  if (broker !== null) {
    data.uplink = { url: broker.url, protocolVersion: 5, commands: { keys: [{ id: "mc", publicKey: key.publicRaw, roles: ["engineer"] }] } };
    // MQTT 3.1.1: the broker delivers whatever size it is sent, so the pod's own bound on a
    // packet (maxPacketBytes, checked on its header before the body) is what meets a huge one
    data.mqttIngest = { url: broker.url, protocolVersion: 4, points: [{ id: "ambient.tempC", topic: sensorTopic, staleMs: 60_000 }] };
  }
  const configFile = join(dir, "agent.yaml");
  writeFileSync(configFile, stringify(data));
  const daemon = startDaemon(configFile, o);
  const agents: UndiciAgent[] = [];
  const admin = join(dir, "state", "admin.sock");
  const stop = async (): Promise<void> => {
    await Promise.all(agents.map((a) => a.close()));
    await stopProcess(daemon.child, "SIGKILL");
    await stopProcess(sim.child, "SIGKILL");
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await untilRunning(daemon, 60_000);
    await waitFor(async () => {
      const s = await adminStatus(admin);
      return s.mode === "Running" && allLive(s);
    }, "every loop in live control, the pod Running", 60_000, 200);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    daemon,
    sim,
    hmi: (daemon.lines.find((l) => l.msg === "hmi served") as { url: string }).url,
    redfish: (daemon.lines.find((l) => l.msg === "redfish served") as { url: string }).url,
    admin,
    configFile,
    ...(broker === null
      ? {}
      : {
          mqtt: {
            url: broker.url,
            key: parsePrivateKey(key.privatePem),
            keyId: "mc",
            site,
            pod,
            requestTopic: (command: string) => `podwarden/${site}/${pod}/request/${command}`,
            responseTopic: `podwarden/${site}/${pod}/response/#`,
            sensorTopic,
          },
        }),
    metric: async (name, labels = {}) => {
      const port = (daemon.lines.find((l) => l.msg === "metrics and health on /metrics, /healthz, /readyz") as { port: number }).port;
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return metricValue(text, name, labels);
    },
    client: (address) => {
      const a = new UndiciAgent({ localAddress: address, connections: 64, pipelining: 0 });
      agents.push(a);
      return a;
    },
    mark: async () => ({ failsafeEntries: (await adminStatus(admin)).control.failsafeEntries, line: daemon.lines.length }),
    harm: async (since) => {
      const s = await adminStatus(admin);
      const alarms = daemon.lines
        .slice(since.line)
        .map((l) => l.event as { type?: string; alarm?: { id: string } } | undefined)
        .filter((e) => e?.type === "alarm.raised")
        .map((e) => e!.alarm!.id);
      return { failsafeEntries: s.control.failsafeEntries - since.failsafeEntries, allLive: allLive(s), mode: s.mode, alarms, status: s };
    },
    stop,
  };
}

/** A login at the HMI: its status, 0 when the connection was refused or dropped. */
export async function login(base: string, agent: UndiciAgent, name: string, password: string): Promise<number> {
  try {
    const r = await undiciFetch(`${base}api/login`, { method: "POST", dispatcher: agent, headers: { "content-type": "application/json" }, body: JSON.stringify({ name, password }) });
    await r.arrayBuffer();
    return r.status;
  } catch {
    return 0;
  }
}

/** A Redfish GET with Basic credentials: its status, 0 when the connection was refused or dropped. */
export async function redfishGet(url: string, agent: UndiciAgent, name: string, password: string): Promise<number> {
  try {
    const r = await undiciFetch(url, { dispatcher: agent, headers: { authorization: `Basic ${Buffer.from(`${name}:${password}`).toString("base64")}` } });
    await r.arrayBuffer();
    return r.status;
  } catch {
    return 0;
  }
}

/** Eight loopback addresses in `net` (.1 to .8). */
export const eight = (net: string): string[] => Array.from({ length: 8 }, (_, i) => `${net}.${i + 1}`);

/**
 * `n` wrong attempts at once, spread over `addresses` in turn. Each is looked at (401), refused
 * (429 limited, 503 busy) or dropped (0): `looked` counts the first, `unexpected` lists any
 * other answer.
 */
export async function burst(pod: AttackPod, addresses: string[], n: number, attempt: (client: UndiciAgent, i: number) => Promise<number>): Promise<{ looked: number; unexpected: number[] }> {
  const clients = addresses.map((a) => pod.client(a));
  const answers = await Promise.all(Array.from({ length: n }, (_, i) => attempt(clients[i % clients.length], i)));
  return { looked: answers.filter((s) => s === 401).length, unexpected: answers.filter((s) => ![401, 429, 503, 0].includes(s)) };
}

/**
 * A slowloris from `address`: `n` connections, each with a request whose headers never end, and
 * a header line every 2 s on whatever is still open for `holdMs`. Returns how many the daemon
 * refused or closed, and how many were still open at the end (all are closed after).
 */
export async function slowloris(base: string, address: string, n: number, holdMs: number): Promise<{ refused: number; open: number }> {
  const { hostname, port } = new URL(base);
  const open = new Set<Socket>();
  let refused = 0;
  const dial = (): Promise<void> =>
    new Promise((resolve) => {
      const s = connect({ host: hostname, port: Number(port), localAddress: address });
      s.once("connect", () => {
        open.add(s);
        s.write("GET / HTTP/1.1\r\nHost: x\r\n"); // and never the end of the headers
        resolve();
      });
      s.once("error", () => {
        refused++;
        resolve();
      });
      s.once("close", () => open.delete(s));
    });
  for (let i = 0; i < n; i += 500) await Promise.all(Array.from({ length: Math.min(500, n - i) }, dial));
  const t0 = Date.now();
  while (Date.now() - t0 < holdMs) {
    for (const s of open) s.write("X-a: b\r\n");
    await new Promise((r) => setTimeout(r, 2000));
  }
  const still = open.size;
  for (const s of open) s.destroy();
  return { refused, open: still };
}

/**
 * A config of about 700 KB that YAML takes seconds to read: anchors, each merged into the next
 * and aliased four times over. Its aliases are beyond the parser's limit, so it is rejected, but
 * only after the parse.
 */
export function aliasHeavyConfig(): string {
  let s = `base: &a0 {${Array.from({ length: 20 }, (_, i) => `k${i}: ${i}`).join(", ")}}\n`;
  for (let i = 1; s.length < 700 * 1024; i++) s += `n${i}: &a${i}\n  <<: *a${i - 1}\n  x${i}: [${Array.from({ length: 4 }, () => `*a${i - 1}`).join(", ")}]\n`;
  return s;
}

/** Writes the alias-heavy config over the pod's and sends SIGHUP; resolves once the daemon says it rejected it. */
export async function hugeReload(pod: AttackPod): Promise<void> {
  writeFileSync(pod.configFile, aliasHeavyConfig());
  const seen = pod.daemon.lines.length;
  pod.daemon.child.kill("SIGHUP");
  await waitFor(() => pod.daemon.lines.slice(seen).some((l) => typeof l.msg === "string" && l.msg.startsWith("reload rejected")), "the reload rejected", 60_000);
}

/**
 * `count` forged commands at up to `perS` a second: each a well-formed envelope of a setpoint,
 * signed by a key the pod does not know (an attacker's own). All `count` are sent, however long
 * a loaded machine takes to sign them (a run beside other work signed 19,157 in the 3 s meant
 * for 30,000, and a test that counted them measured the machine). Returns how many were sent and
 * over how long, for the rate reached.
 */
export async function commandFlood(pod: AttackPod, perS: number, count: number): Promise<{ sent: number; ms: number }> {
  const m = pod.mqtt!;
  const forger = parsePrivateKey(generateCommandKey().privatePem);
  const client = await mqtt.connectAsync(m.url, { protocolVersion: 5, clientId: `forger-${process.pid}`, reconnectPeriod: 0 });
  let sent = 0;
  const t0 = performance.now();
  try {
    // in slices of 10 ms, each its share of the rate; QoS 0, as commands are sent
    while (sent < count) {
      const due = Math.min(count, Math.floor(((performance.now() - t0) / 1000) * perS));
      for (; sent < due; sent++) {
        const payload = signedCommand({ site: m.site, pod: m.pod, command: "setpoint", params: { loop: "rack-1.valve", value: 40, leaseS: 60 }, seq: sent + 1, keyId: m.keyId, privateKey: forger, transaction: `forged-${sent}` });
        client.publish(m.requestTopic("setpoint"), payload, { qos: 0 });
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    await client.endAsync();
  }
  return { sent, ms: performance.now() - t0 };
}

/** A genuine signed command from mission control; resolves with the pod's answer, or null after `timeoutMs`. */
export async function genuineCommand(pod: AttackPod, seq: number, timeoutMs = 10_000): Promise<Record<string, unknown> | null> {
  const m = pod.mqtt!;
  const client = await mqtt.connectAsync(m.url, { protocolVersion: 5, clientId: `mc-${process.pid}-${seq}`, reconnectPeriod: 0 });
  try {
    const transaction = `genuine-${seq}`;
    const answer = new Promise<Record<string, unknown> | null>((resolve) => {
      const t = setTimeout(() => resolve(null), timeoutMs);
      client.on("message", (_topic, body) => {
        const r = JSON.parse(body.toString()) as Record<string, unknown>;
        if (r.transaction === transaction) {
          clearTimeout(t);
          resolve(r);
        }
      });
    });
    await client.subscribeAsync(m.responseTopic, { qos: 1 });
    await client.publishAsync(m.requestTopic("setpoint"), signedCommand({ site: m.site, pod: m.pod, command: "setpoint", params: { loop: "rack-1.valve", value: 44, leaseS: 60 }, seq, keyId: m.keyId, privateKey: m.key, transaction }), { qos: 0 });
    return await answer;
  } finally {
    await client.endAsync();
  }
}

/** One `bytes`-long payload published on `topic` (QoS 0), the broker's own handling awaited. */
export async function hugePayload(pod: AttackPod, topic: string, bytes: number): Promise<void> {
  const client = await mqtt.connectAsync(pod.mqtt!.url, { protocolVersion: 4, clientId: `huge-${process.pid}-${bytes}`, reconnectPeriod: 0 });
  try {
    await client.publishAsync(topic, Buffer.alloc(bytes, 0x31), { qos: 1 });
  } finally {
    await client.endAsync();
  }
}
