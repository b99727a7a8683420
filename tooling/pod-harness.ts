// The demo pod's agent with its uplink, pointed at a running simulator and a broker: what the
// uplink tests and benchmarks drive. Not used by the daemon.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DestinationStream } from "pino";
import { Agent } from "../agent/agent.js";
import { validateAgentConfig, type AgentConfig } from "../agent/config/load.js";
import { demoConfigData } from "../cli/demo-config.js";
import { Logs } from "../agent/log.js";
import { topicBase, Uplink } from "../agent/uplink/uplink.js";

export interface PodHarnessOptions {
  brokerUrl: string;
  protocolVersion: 4 | 5;
  /** the simulator's Modbus port of each device */
  portOf: (device: string) => number | undefined;
  /** reuse a state directory (a restart); else a fresh temporary one */
  stateDir?: string;
  /** uplink keys over the harness defaults */
  uplink?: Record<string, unknown>;
  /** last word on the config data */
  patch?: (data: Record<string, unknown>) => void;
  logTo?: DestinationStream;
}

export interface PodHarness {
  config: AgentConfig;
  agent: Agent;
  uplink: Uplink;
  stateDir: string;
  base: string;
  stop(opts?: { keepState?: boolean }): Promise<void>;
}

export async function startPodHarness(o: PodHarnessOptions): Promise<PodHarness> {
  const stateDir = o.stateDir ?? mkdtempSync(join(tmpdir(), "pw-pod-"));
  const data = demoConfigData(o.portOf);
  data.stateDir = stateDir;
  data.log = { level: "info", modules: {} };
  data.control = { ...(data.control as object), schedFifo: false, warmupTicks: 2000 };
  // a list of brokers in the test's uplink keys replaces the one URL (the config takes one or the other)
  const brokers = (o.uplink as { brokers?: unknown } | undefined)?.brokers;
  data.uplink = { ...(brokers === undefined ? { url: o.brokerUrl } : {}), protocolVersion: o.protocolVersion, telemetryMs: 200, keepaliveS: 2, connectTimeoutMs: 1000, reconnect: { baseMs: 50, maxMs: 400 }, ...o.uplink };
  o.patch?.(data);
  const config = validateAgentConfig(data, "pod harness");
  const agent = new Agent({ config, hash: "harness", path: "harness" }, new Logs(config.log, { site: config.site, pod: config.pod }, o.logTo));
  await agent.start();
  const uplink = new Uplink(agent, config.uplink!, agent.logs.module("uplink"));
  await uplink.start();
  return {
    config,
    agent,
    uplink,
    stateDir,
    base: topicBase(config.site, config.pod),
    stop: async (s = {}) => {
      await agent.stop({ driveSafe: false, reason: "harness stop" });
      await uplink.stop();
      if (s.keepState !== true) rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
