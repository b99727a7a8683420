// The pod's field drivers built from its config: the leak path's points and outputs split off to
// the leak thread (those of Modbus TCP devices, and every serial bus that carries any of them,
// whole), the rest to the main Modbus driver, MQTT ingest and the Redfish client, all publishing
// into one point store. What the leak thread cannot take (a bus with RTS direction control,
// BMCs) is said, because the control plane's thread then serves it.
import { ModbusDriver } from "../../drivers/modbus/driver.js";
import type { ScanOptions, ScanRow } from "../../drivers/modbus/bus-scan.js";
import type { ModbusConfig } from "../../drivers/modbus/config.js";
import { splitModbus } from "../../drivers/modbus/split.js";
import { MqttIngest } from "../../drivers/mqtt-ingest.js";
import { RedfishDriver } from "../../drivers/redfish/driver.js";
import type { PointStore } from "../../lib/points.js";
import { ACTUATOR_PASS_MS, type PodWiring } from "../../pod/wiring.js";
import type { AgentConfig } from "../config/load.js";
import type { Frames } from "../control/frames.js";
import type { Logs } from "../log.js";
import type { ProblemReporter } from "../pod-api.js";
import { ingestField, modbusField, redfishField, type FieldDriver } from "./field-driver.js";
import { FieldIo } from "./field-io.js";
import { LeakPath } from "./leak-path.js";

/**
 * How often the leak thread reports its points, output states and counters to the control plane,
 * ms: status and telemetry see a leak input at most this late (the isolation does not wait).
 */
const LEAK_REPORT_MS = 50;

export interface PodField {
  io: FieldIo;
  modbus: ModbusDriver;
  ingest: MqttIngest | null;
  redfish: RedfishDriver | null;
  /** the leak thread (null: off, or no TCP device on the leak path) */
  leak: LeakPath | null;
  /** leak inputs and isolation outputs the leak thread could not take (a bus with RTS direction control, BMCs) */
  leakLeft: string[];
  /** scans a serial bus, on whichever driver owns it (`podwarden scan --bus`) */
  scanBus(bus: string, o: ScanOptions): Promise<ScanRow[]>;
  /** the gate for every device lease: the main driver's, and the leak thread's buses' */
  setHealthGate(gate: () => boolean): void;
}

/**
 * The Modbus config with the leak path's outputs (isolation valves, power-off, cap) written first
 * in their bus's queue, whatever their configured priority: on a serial bus a control valve's
 * command goes out at every change, and a close queued behind a backlog of them waited 100-300 ms
 * at 19,200 baud (`npm run bench -- --only leak-rtu`, BENCHMARKS.md).
 */
function safetyWritesFirst(modbus: ModbusConfig, outputs: ReadonlySet<string>): ModbusConfig {
  return { ...modbus, devices: modbus.devices.map((d) => ({ ...d, outputs: d.outputs.map((o) => (outputs.has(`${d.name}.${o.name}`) ? { ...o, priority: 0 } : o)) })) };
}

export function podField(c: AgentConfig, wiring: PodWiring, points: PointStore, logs: Logs, problems: ProblemReporter, frames: () => Frames): PodField {
  const path = wiring.leakPath();
  const leakPathIds = new Set([...path.inputs, ...path.outputs]);
  const modbusConfig = safetyWritesFirst(c.modbus, new Set(path.outputs));
  const split = c.control.isolation.leakThread ? splitModbus(modbusConfig, leakPathIds) : null;
  const onModbus = new Set(c.modbus.devices.flatMap((d) => [...d.points, ...d.outputs].map((x) => `${d.name}.${x.name}`)));
  const leakLeft = split === null ? [] : [...split.left, ...[...leakPathIds].filter((id) => !onModbus.has(id))];
  const modbus = new ModbusDriver(split?.kept ?? modbusConfig, { points });
  const leak =
    split === null || split.taken.devices.length === 0
      ? null
      : new LeakPath(
          {
            modbus: split.taken,
            decides: path.outputs,
            leases: split.leases,
            pod: { racks: c.racks, cdu: c.cdu },
            decisions: wiring.initialDecisions(),
            writeCaps: c.supervisor.powerBudget.writeCaps,
            reportMs: LEAK_REPORT_MS,
            passMs: ACTUATOR_PASS_MS,
            // one below the control thread: a tick (tens of µs) may preempt a poll's handling,
            // never the other way round
            fifoPriority: c.control.schedFifo ? Math.max(1, c.control.schedPriority - 1) : null,
            onPoint: (p) => points.publish(p),
            onLog: (level, message) => logs.module("leak-thread")[level](message),
          },
          frames,
          problems,
          logs.module("agent"),
        );
  const ingestLog = logs.module("ingest");
  const ingest =
    c.mqttIngest === undefined
      ? null
      : new MqttIngest(
          { ...c.mqttIngest, clientId: c.mqttIngest.clientId ?? `podwarden-${c.site}-${c.pod}-ingest` },
          (silentMs) => ingestLog.warn({ silentMs: Math.round(silentMs), keepaliveS: c.mqttIngest?.keepaliveS }, "sensor broker silent: giving up the connection"),
          points,
          (message) => ingestLog.warn({ err: message }, "sensor broker sent a packet that breaks the protocol: connection ended"),
        );
  const redfish = c.redfishClient.devices.length === 0 ? null : new RedfishDriver(c.redfishClient, { points, onLog: (level, message) => logs.module("redfish-client")[level](message) });
  // the leak path first: its thread is serving isolation before anything else polls
  const drivers: FieldDriver[] = [...(leak === null ? [] : [leak]), modbusField(modbus), ...(ingest === null ? [] : [ingestField(ingest)]), ...(redfish === null ? [] : [redfishField(redfish, c.redfishClient)])];
  const scanBus = (bus: string, o: ScanOptions): Promise<ScanRow[]> => {
    if (leak?.ownsBus(bus) === true) return leak.scan(bus, o);
    // named against the whole config: the main driver's own list lacks the leak thread's buses
    if (!c.modbus.buses.some((b) => b.name === bus)) return Promise.reject(new Error(`no serial bus "${bus}" (modbus.buses: ${c.modbus.buses.map((b) => b.name).join(", ") || "none"})`));
    return modbus.scan(bus, o);
  };
  const setHealthGate = (gate: () => boolean): void => {
    modbus.setHealthGate(gate);
    leak?.setHealthGate(gate);
  };
  return { io: new FieldIo(drivers, problems), modbus, ingest, redfish, leak, leakLeft, scanBus, setHealthGate };
}
