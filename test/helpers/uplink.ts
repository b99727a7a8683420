// A pod with its uplink (simulator over real Modbus TCP, agent, uplink) and a mission-control
// client, for tests against a real broker (aedes in-process or mosquitto).
import { rmSync } from "node:fs";
import mqtt, { type MqttClient } from "mqtt";
import { signedCommand, type CommandSpec } from "../../agent/commands/client.js";
import type { CommandName } from "../../agent/commands/schema.js";
import { generateCommandKey, parsePrivateKey } from "../../agent/commands/signing.js";
import { startPodHarness, type PodHarness } from "../../tooling/pod-harness.js";
import { LogCapture } from "./agent.js";
import { waitFor } from "./processes.js";
import { startTestSim, type TestSim } from "./sim.js";
import { afterAll, beforeAll, expect } from "vitest";

export const KEYS = { operator: generateCommandKey(), engineer: generateCommandKey(), observer: generateCommandKey() };

export interface UplinkPod extends PodHarness {
  sim: TestSim;
  logs: LogCapture;
}

export interface UplinkPodOptions {
  brokerUrl: string;
  protocolVersion: 4 | 5;
  stateDir?: string;
  sim?: TestSim;
  uplink?: Record<string, unknown>;
  /** the pod's id (default the demo's pod-a) */
  pod?: string;
}

/** The harness pod with the test keys (ops: operator, eng: engineer, view: observer), logs captured. */
export async function startUplinkPod(o: UplinkPodOptions): Promise<UplinkPod> {
  const ownSim = o.sim === undefined;
  const sim = o.sim ?? (await startTestSim());
  const logs = new LogCapture();
  const h = await startPodHarness({
    brokerUrl: o.brokerUrl,
    protocolVersion: o.protocolVersion,
    portOf: (name) => sim.sim.portOf(name),
    stateDir: o.stateDir,
    logTo: logs,
    uplink: {
      commands: {
        // the request rate limit has its own test (uplink-commands "drops requests beyond
        // maxPerS…"); the others send faster than a pod's 50 a second on purpose
        maxPerS: 10_000,
        keys: [
          { id: "ops", publicKey: KEYS.operator.publicRaw, roles: ["operator"] },
          { id: "eng", publicKey: KEYS.engineer.publicRaw, roles: ["engineer"] },
          { id: "view", publicKey: KEYS.observer.publicRaw, roles: ["observer"] },
        ],
      },
      ...o.uplink,
    },
    patch: (c) => {
      for (const r of c.racks as { minPowerKw?: number }[]) r.minPowerKw = 10;
      if (o.pod !== undefined) c.pod = o.pod;
    },
  });
  return {
    ...h,
    sim,
    logs,
    stop: async (s = {}) => {
      await h.stop(s);
      if (ownSim) await sim.stop();
    },
  };
}

export interface Received {
  topic: string;
  body: Record<string, unknown>;
  retain: boolean;
  correlationData?: Buffer;
}

/** Mission control: subscribes to the pod's tree and sends signed commands. */
export class MissionControl {
  readonly messages: Received[] = [];
  private seq = Date.now();

  private constructor(
    readonly client: MqttClient,
    readonly base: string,
  ) {
    client.on("message", (topic, payload, packet) => {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(payload.toString()) as Record<string, unknown>;
      } catch {
        return;
      }
      this.messages.push({ topic, body, retain: packet.retain, ...(packet.properties?.correlationData === undefined ? {} : { correlationData: packet.properties.correlationData }) });
    });
  }

  static async connect(url: string, base: string, protocolVersion: 4 | 5, opts: mqtt.IClientOptions = {}): Promise<MissionControl> {
    const client = await mqtt.connectAsync(url, { protocolVersion, clientId: `mc-${process.pid}-${Math.random().toString(16).slice(2)}`, reconnectPeriod: 200, ...opts });
    const mc = new MissionControl(client, base);
    await client.subscribeAsync(`${base}#`, { qos: 1 });
    return mc;
  }

  of(topic: string): Record<string, unknown>[] {
    return this.messages.filter((m) => m.topic === this.base + topic).map((m) => m.body);
  }

  spec(command: CommandName, params: Record<string, unknown>, role: keyof typeof KEYS = "operator", over: Partial<CommandSpec> = {}): CommandSpec {
    const keyId = role === "operator" ? "ops" : role === "engineer" ? "eng" : "view";
    return { site: "demo", pod: "pod-a", command, params, seq: ++this.seq, keyId, privateKey: parsePrivateKey(KEYS[role].privatePem), ...over };
  }

  async publishRaw(command: string, payload: string | Buffer, opts: mqtt.IClientPublishOptions = {}): Promise<void> {
    await this.client.publishAsync(`${this.base}request/${command}`, payload, { qos: 1, ...opts });
  }

  /** Sends a signed command and waits for the response carrying its transaction. */
  async send(command: CommandName, params: Record<string, unknown>, role: keyof typeof KEYS = "operator", over: Partial<CommandSpec> = {}): Promise<Record<string, unknown>> {
    const spec = this.spec(command, params, role, over);
    const transaction = spec.transaction ?? `tx-${spec.seq}`;
    await this.publishRaw(command, signedCommand({ ...spec, transaction }));
    let found: Record<string, unknown> | undefined;
    await waitFor(() => (found = this.of(`response/${command}`).find((r) => r.transaction === transaction)) !== undefined, `response to ${command} ${transaction}`, 10_000);
    return found as Record<string, unknown>;
  }

  async close(): Promise<void> {
    await this.client.endAsync(true);
  }
}

/** Removes a state directory a test kept across restarts. */
export function removeState(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** The sequence numbers from `from` to `upTo` that never arrived (duplicates allowed: delivery is at least once). */
export function gaps(seqs: Iterable<number>, upTo: number, from = 1): number[] {
  const have = new Set(seqs);
  const missing: number[] = [];
  for (let s = from; s <= upTo; s++) if (!have.has(s)) missing.push(s);
  return missing;
}

/** One simulator for every pod of a test file: started before its tests, stopped after them. */
export function sharedSim(): () => TestSim {
  let sim: TestSim | undefined;
  beforeAll(async () => {
    sim = await startTestSim();
  }, 30_000);
  afterAll(async () => {
    await sim?.stop();
  });
  return () => {
    if (sim === undefined) throw new Error("the shared simulator has not started");
    return sim;
  };
}

/**
 * Once the pod's spool has drained, every event it ever gave a seq number is among `events()`
 * (mission control's view, over however many brokers): on a miss, the missing numbers are the
 * failure message.
 */
export async function expectEveryEvent(pod: UplinkPod, events: () => Record<string, unknown>[]): Promise<void> {
  await waitFor(() => pod.uplink.stats().spoolDepth.critical === 0, "spool drained", 30_000);
  const last = pod.uplink.stats().lastSeq.critical;
  const seqs = (): number[] => events().map((e) => e.seq as number);
  await waitFor(() => gaps(seqs(), last).length === 0, "every event at mission control", 30_000).catch(() => undefined);
  expect(gaps(seqs(), last)).toEqual([]);
}
