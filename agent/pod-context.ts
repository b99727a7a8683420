// The pod context: what a pod feature (the operator's decisions, the flight recorder, autotune,
// the valve watch, the partial-stroke tests) may reach of the running pod, and the shape every
// feature has. A feature is a folder under agent/ with its own config section; it is given this
// context and never the Agent, so adding one touches no other file but the list that registers it
// (agent/agent.ts) and, for its commands, the executor (docs/architecture.md, "Pod features").
import type { ControlOutputs, ControlThread } from "./control/control-thread.js";
import type { AgentConfig } from "./config/load.js";
import type { Logger } from "./log.js";
import type { AgentEvent, ProblemReporter } from "./pod-api.js";
import type { Reading, Supervisor } from "./supervisor/supervisor.js";
import type { PointStore } from "../lib/points.js";
import type { PodLayout } from "../pod/layout.js";

export type { ControlOutputs } from "./control/control-thread.js";
export type { AgentConfig } from "./config/load.js";
export type { Logger } from "./log.js";
export type { AgentEvent, ProblemReport } from "./pod-api.js";
export type { CarriedState } from "./lifecycle.js";
export { packageVersion } from "./version.js";

export interface PodContext extends ProblemReporter {
  /** the config in force (a tuning reload replaces its tuning sections in place) */
  readonly config: AgentConfig;
  readonly configHash: string;
  readonly layout: PodLayout;
  /** where state that must survive a restart lives, if anywhere */
  readonly stateDir: string | undefined;
  /** every field point, from every driver */
  readonly points: PointStore;
  readonly supervisor: Supervisor;
  /** the control worker's handle (created at the start, after the features that feed its bank) */
  control(): ControlThread;
  /** the control worker's outputs read now, or the last read when none is new */
  outputs(): ControlOutputs | undefined;
  /** the control worker's outputs as the last actuator pass wrote them: the commands in force */
  commanded(): ControlOutputs | undefined;
  /** a point's reading as the supervisor judges it: the hot path's verdict, and what its driver saw */
  reading(bankIndex: number, pointId: string): Reading;
  /** an event to every listener, the uplink's first, and the log */
  emit(e: AgentEvent): void;
  /** every event the pod emits; returns a function that stops it */
  onEvent(l: (e: AgentEvent) => void): () => void;
  /** the log of one module (its name in every line) */
  log(module: string): Logger;
  /**
   * Holds (bits) or releases (0) the close of a rack's isolation valves, through the pod wiring
   * and the leak thread, and writes the actuators at once; each writer ends a hold by itself after
   * maxMs (the partial-stroke tests).
   */
  holdIsolation(rack: number, bits: number, maxMs: number): void;
  /** the output's writer ends a hold at its deadline by itself (the leak thread's outputs) */
  holdBounded(outputId: string): boolean;
}

/**
 * One pod feature. The Agent calls these in its start and stop order: `start` once the control
 * worker runs, `supervise` on each supervisor pass (after the actuators are written with the
 * outputs read for it, which `commanded()` then gives, and before the supervisor evaluates), `release`
 * when the pod starts to stop (before the safe writes: what a feature holds is let go), `settle`
 * after them (what it is saving lands before the process may exit).
 */
export interface PodFeature {
  readonly name: string;
  start?(): void | Promise<void>;
  supervise?(nowMs: number): void;
  /** an interlock changed (a leak, a latch): called before the actuators are written at once */
  interlockChanged?(): void;
  release?(reason: string): void;
  settle?(): Promise<void>;
}
