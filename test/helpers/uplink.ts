// A pod with its uplink (simulator over real Modbus TCP, agent, uplink) and a mission-control
// client, for tests against a real broker (aedes in-process or mosquitto).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mqtt, { type MqttClient } from "mqtt";
import type { Agent } from "../../agent/agent.js";
import { signedCommand, type CommandSpec } from "../../agent/commands/client.js";
import type { CommandName } from "../../agent/commands/schema.js";
import { generateCommandKey, parsePrivateKey } from "../../agent/commands/signing.js";
import { topicBase, Uplink } from "../../agent/uplink/uplink.js";
import { agentConfig, demoConfigFor, testAgent, type LogCapture } from "./agent.js";
import { waitFor } from "./processes.js";
import { startTestSim, type TestSim } from "./sim.js";

export const KEYS = { operator: generateCommandKey(), engineer: generateCommandKey(), observer: generateCommandKey() };

export interface UplinkPod {
  sim: TestSim;
  agent: Agent;
  uplink: Uplink;
  logs: LogCapture;
  stateDir: string;
  base: string;
  stop(opts?: { keepState?: boolean }): Promise<void>;
}

export interface UplinkPodOptions {
  brokerUrl: string;
  protocolVersion: 4 | 5;
  stateDir?: string;
  sim?: TestSim;
  uplink?: Record<string, unknown>;
}

export async function startUplinkPod(o: UplinkPodOptions): Promise<UplinkPod> {
  const ownSim = o.sim === undefined;
  const sim = o.sim ?? (await startTestSim());
  const stateDir = o.stateDir ?? mkdtempSync(join(tmpdir(), "pw-uplink-"));
  const config = agentConfig(
    demoConfigFor(sim.sim, (c) => {
      c.stateDir = stateDir;
      for (const r of c.racks as { minPowerKw?: number }[]) r.minPowerKw = 10;
      c.log = { level: "info", modules: {} };
      c.control = { ...(c.control as object), schedFifo: false, warmupTicks: 2000 };
      c.uplink = {
        url: o.brokerUrl,
        protocolVersion: o.protocolVersion,
        telemetryMs: 200,
        keepaliveS: 2,
        connectTimeoutMs: 1000,
        reconnect: { baseMs: 50, maxMs: 400 },
        commands: {
          keys: [
            { id: "ops", publicKey: KEYS.operator.publicRaw, roles: ["operator"] },
            { id: "eng", publicKey: KEYS.engineer.publicRaw, roles: ["engineer"] },
            { id: "view", publicKey: KEYS.observer.publicRaw, roles: ["observer"] },
          ],
        },
        ...o.uplink,
      };
    }),
  );
  const { agent, logs } = testAgent(config);
  await agent.start();
  const uplink = new Uplink(agent, config.uplink!, agent.logs.module("uplink"));
  await uplink.start();
  return {
    sim,
    agent,
    uplink,
    logs,
    stateDir,
    base: topicBase(config.site, config.pod),
    stop: async (s = {}) => {
      await agent.stop({ driveSafe: false, reason: "test" });
      await uplink.stop();
      if (ownSim) await sim.stop();
      if (s.keepState !== true) rmSync(stateDir, { recursive: true, force: true });
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
