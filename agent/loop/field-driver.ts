// The one face of every field driver to the pod loop: Modbus, the Redfish client, MQTT ingest and
// the leak path. The pod loop starts and stops them in order, routes each actuator write to the
// driver that owns the output, and merges their output states and device health (field-io.ts).
// The drivers themselves (drivers/) know nothing of racks; the adapters here say only what each
// one owns and how healthy its devices are.
import type { MqttIngest } from "../../drivers/mqtt-ingest.js";
import type { ModbusDriver, OutputState } from "../../drivers/modbus/driver.js";
import type { RedfishDriver } from "../../drivers/redfish/driver.js";
import type { RedfishClientConfig } from "../../drivers/redfish/config.js";

export type { OutputState };

/** One device's health, for the supervisor's device alarms. */
export interface DeviceHealth {
  name: string;
  ok: boolean;
  why: string;
}

/** An output whose last value its device has not confirmed: an alarm while it lasts. */
export interface OutputProblem {
  device: string;
  why: string;
}

export interface FieldDriver {
  readonly name: string;
  start(): void | Promise<void>;
  stop(): Promise<void>;
  ownsOutput(id: string): boolean;
  /**
   * Asks for `value` on an output it owns. False when the output's writer is not this thread (the
   * leak thread writes its outputs from the shared frames): nothing was sent from here.
   */
  setOutput(id: string, value: number): boolean;
  outputState(id: string): OutputState | undefined;
  /** each of its devices' health */
  health(): DeviceHealth[];
  /** every output it owns, with its problem, or null when it is confirmed (nowMs: monotonic) */
  outputProblems?(nowMs: number): Map<string, OutputProblem | null>;
}

/** Modbus devices' health from the driver's counters (the main driver's and the leak thread's alike). */
export function modbusHealth(stats: ReturnType<ModbusDriver["stats"]>): DeviceHealth[] {
  return stats.devices.map((x) => ({
    name: x.name,
    ok: x.connected && x.breaker === "closed" && x.leaseProblem === null,
    why: !x.connected ? "disconnected" : x.breaker !== "closed" ? `not answering (circuit breaker ${x.breaker})` : `lease not as configured: ${x.leaseProblem ?? ""}`,
  }));
}

/** BMCs' health from the Redfish driver's counters. */
export function redfishHealth(stats: readonly ReturnType<RedfishDriver["stats"]>[number][]): DeviceHealth[] {
  return stats.map((x) => ({ name: x.name, ok: x.connected && x.breaker === "closed", why: `${x.breaker === "closed" ? "" : `(circuit breaker ${x.breaker}) `}${x.why}` }));
}

export function modbusField(d: ModbusDriver): FieldDriver {
  return {
    name: "modbus",
    start: () => d.start(),
    stop: () => d.stop(),
    ownsOutput: (id) => d.outputState(id) !== undefined,
    setOutput: (id, v) => {
      d.setOutput(id, v);
      return true;
    },
    outputState: (id) => d.outputState(id),
    health: () => modbusHealth(d.stats()),
  };
}

export function ingestField(i: MqttIngest): FieldDriver {
  return {
    name: "mqtt-ingest",
    start: () => i.start(),
    stop: () => i.stop(),
    ownsOutput: () => false,
    setOutput: (id) => {
      throw new Error(`MQTT ingest has no outputs (${id})`);
    },
    outputState: () => undefined,
    // the broker's silence makes every point it carries stale: the points' quality says it
    health: () => [],
  };
}

/**
 * How long a Redfish Control may stay unverified before it is an alarm, ms: a PATCH and its
 * read-back take two round trips (a few ms on a healthy BMC; the client's timeout bounds each).
 */
export const UNVERIFIED_GRACE_MS = 5000;

export function redfishField(d: RedfishDriver, c: RedfishClientConfig): FieldDriver {
  const ids = c.devices.flatMap((dev) => dev.outputs.map((o) => `${dev.name}.${o.name}`));
  return {
    name: "redfish",
    start: () => d.start(),
    stop: () => d.stop(),
    ownsOutput: (id) => d.ownsOutput(id),
    setOutput: (id, v) => {
      d.setOutput(id, v);
      return true;
    },
    outputState: (id) => d.outputState(id),
    health: () => redfishHealth(d.stats()),
    // a Control written that the BMC has not confirmed on read-back (refused, a mismatch, no
    // answer) is an alarm while it lasts: a cap the pod counts on must never be silently absent
    outputProblems: (nowMs) => {
      const late = new Map(d.unverified(nowMs, UNVERIFIED_GRACE_MS).map((u) => [u.id, u]));
      return new Map(ids.map((id) => [id, late.get(id) ?? null]));
    },
  };
}
