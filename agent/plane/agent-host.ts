// What either host of the Agent does the same way: take a reload's validated config. The control
// plane's thread (control-plane-worker.ts) and, on a pod with RS-485 buses, the main thread
// (in-process-plane.ts) both host one Agent and replace it on a structural reload.
import { Agent } from "../agent.js";
import type { LoadedConfig } from "../config/load.js";
import { sameStructure } from "../lifecycle.js";
import type { Logger, Logs } from "../log.js";

export interface Hosted {
  agent: Agent;
  /** the config the running agent was built from */
  running: LoadedConfig;
}

/**
 * Starts the agent whole or not at all (issue #54 item 2): a part that cannot start (the control
 * worker, the leak thread, a feature) stops what had started before it, its actuators driven
 * safe, and the error is thrown, said as which start failed, for the daemon to exit 1 on.
 */
export async function startAgent(agent: Agent): Promise<void> {
  try {
    await agent.start();
  } catch (err) {
    await agent.stop({ driveSafe: true, reason: "start failed" }).catch(() => undefined);
    throw new Error(`the pod's control did not start: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Takes `next`: in place when only tuning changed, else a new agent carrying the old one's state.
 * A new agent that does not start is stopped, the old config's agent started again with what it
 * carried, and the error thrown: the reload is refused, the pod runs on. `follow` is called with
 * each agent made, before it starts (its events must not be missed).
 */
export async function reloadAgent(h: Hosted, next: LoadedConfig, logs: Logs, log: Logger, follow: (a: Agent) => void): Promise<"tuning" | "restarted"> {
  if (sameStructure(h.agent.config, next.config)) {
    h.agent.applyTuning(next.config);
    h.running = next;
    return "tuning";
  }
  log.warn({ hash: next.hash }, "reload: devices or wiring changed, restarting the agent's internals");
  await h.agent.stop({ driveSafe: false, reason: "reload" });
  // latches, operator decisions and the budget go over to the new agent as they were
  const carried = h.agent.carryOver();
  try {
    h.agent = new Agent(next, logs, carried);
    follow(h.agent);
    await h.agent.start();
    h.running = next;
    return "restarted";
  } catch (err) {
    log.error({ err }, "reload: the new agent did not start; restarting on the running config");
    await h.agent.stop({ driveSafe: false, reason: "reload refused" }).catch(() => undefined);
    h.agent = new Agent(h.running, logs, carried);
    follow(h.agent);
    await h.agent.start();
    throw err;
  }
}
