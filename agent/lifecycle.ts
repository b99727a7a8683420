// What a running pod's lifecycle decides by its config alone: the state a structural reload
// carries from one agent to the next, whether a reload is structural, what a reload may not
// change, and where the state directory is. Apart from the Agent class, so that the service
// plane (cli/daemon.ts, agent/plane/control-plane.ts) decides these without loading it.
import type { AgentConfig } from "./config/load.js";
import type { OperatorState } from "./operator/operator-state.js";

/**
 * What a structural reload hands from the old agent to the new one: the state that must survive
 * it. With a state directory the files hold the same (each change is saved before it applies);
 * without one, this is the only copy.
 */
export interface CarriedState {
  latchedRacks: string[];
  operator: OperatorState;
  powerBudgetKw: number | null;
  /** the pumps' lead (cdu.pumps): the new agent keeps it, rather than handing over to its slot's pump */
  pumpLead?: string;
}

/** Same devices, points, racks and wiring: a reload can patch tuning in place. */
export function sameStructure(a: AgentConfig, b: AgentConfig): boolean {
  const shape = (c: AgentConfig): string => JSON.stringify([c.site, c.pod, c.racks, c.cdu, c.modbus, c.mqttIngest ?? null, c.redfishClient, c.uplink ?? null, c.control.periodMs, c.control.isolation.leakThread, c.recorder, c.valveHealth.enabled]);
  return shape(a) === shape(b);
}

/** The state directory a config gives: its own `stateDir`, else systemd's StateDirectory. */
export function stateDirOf(c: AgentConfig): string | undefined {
  return c.stateDir ?? process.env.STATE_DIRECTORY;
}

/**
 * What a reload may not change, because it is the daemon's identity: the pod it claims on this
 * host and in MQTT, and the directory its latches, spool and replay guard live in (moving that
 * live would leave a latched leak behind in the old one). Returns why, or null.
 */
export function identityChange(a: AgentConfig, b: AgentConfig): string | null {
  if (a.site !== b.site || a.pod !== b.pod) return `the pod changed (${a.site}/${a.pod} -> ${b.site}/${b.pod})`;
  if (stateDirOf(a) !== stateDirOf(b)) return `the state directory changed (${stateDirOf(a) ?? "none"} -> ${stateDirOf(b) ?? "none"})`;
  return null;
}

