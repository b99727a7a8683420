// An in-process agent wired to a test simulator over real Modbus TCP.
import { Writable } from "node:stream";
import { Agent } from "../../agent/agent.js";
import { validateAgentConfig, type AgentConfig, type LoadedConfig } from "../../agent/config/load.js";
import { Logs } from "../../agent/log.js";
import { demoConfigData } from "../../cli/demo-config.js";
import type { PodSim } from "../../sim/pod-sim.js";

/**
 * The pod a test's daemon process claims: its own, never the demo's, so that a demo or a daemon
 * already running on the host (whose instance lock is host-wide) cannot make a test fail.
 */
export const TEST_POD = `test-${process.pid}`;

/** The demo config as plain data, with every device pointed at the test simulator's ports. */
export function demoConfigFor(sim: PodSim, patch: (c: Record<string, unknown>) => void = () => undefined): unknown {
  const data = demoConfigData((name) => sim.portOf(name));
  patch(data);
  return data;
}

export function agentConfig(data: unknown): AgentConfig {
  return validateAgentConfig(structuredClone(data), "test agent config");
}

export class LogCapture extends Writable {
  readonly lines: Record<string, unknown>[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    for (const line of chunk.toString("utf8").split("\n")) if (line.trim() !== "") this.lines.push(JSON.parse(line) as Record<string, unknown>);
    done();
  }
}

export function testAgent(config: AgentConfig): { agent: Agent; logs: LogCapture } {
  const capture = new LogCapture();
  const loaded: LoadedConfig = { config, hash: "test", path: "test" };
  return { agent: new Agent(loaded, new Logs(config.log, { site: config.site, pod: config.pod }, capture)), logs: capture };
}
