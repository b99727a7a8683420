// What the daemon's service plane holds of the pod, wherever its control plane runs: on a thread
// of its own (ControlPlane, control-plane.ts) or, on a pod with an RS-485 bus whose direction
// podwarden toggles by RTS, on the main thread (InProcessPlane, in-process-plane.ts).
import type { AgentConfig, LoadedConfig } from "../config/load.js";
import type { PodCommands, PodDiagnostics, PodReader, ProblemReporter } from "../pod-api.js";
import type { AdminPod } from "../ops/admin-socket.js";
import type { PlaneCounts } from "./control-plane.js";

export interface PodPlane extends PodReader, PodDiagnostics, PodCommands, ProblemReporter, Pick<AdminPod, "resetLeak" | "recordNow" | "scanBus"> {
  readonly config: AgentConfig;
  readonly configHash: string;
  readonly stateDir: string | undefined;
  readonly recordingsDir: string | undefined;
  /** a validated config: in place when only tuning changed, else by restarting the agent's internals */
  reload(next: LoadedConfig): Promise<"tuning" | "restarted">;
  stop(opts: { driveSafe: boolean; reason: string; timeoutMs?: number }): Promise<void>;
  /** what the queues between the planes refused and dropped (only where there are two) */
  planeCounts?(): PlaneCounts;
}

/**
 * Whether the config's pod can run its control plane on a thread of its own: not with an RS-485
 * bus whose direction podwarden toggles by RTS, which takes serialport's binding, and that
 * delivers a port's bytes on the main thread's event loop only (drivers/modbus/serial-link.ts).
 * Every other serial bus is read on the loop of the thread that owns it.
 */
export function ownThreadPossible(c: AgentConfig): { ok: true } | { ok: false; why: string } {
  const rts = c.modbus.buses.filter((b) => b.rs485 === "rts");
  if (rts.length === 0) return { ok: true };
  return { ok: false, why: `RS-485 buses with RTS direction control (${rts.map((b) => b.name).join(", ")}): RTS is toggled through serialport's binding, which delivers a port's bytes on the main thread only` };
}
