// Modbus driver config: buses, devices, their points and outputs, polling groups.
// The JSON Schema here is embedded in the agent's config schema and documented from it.
import type { SerialFraming } from "./serial-line.js";
import type { LeaseConfig } from "./lease.js";
import { validator } from "../../lib/config-file.js";
import { DATA_TYPES, WORD_ORDERS, registerCount, type DataType, type WordOrder } from "./codec.js";
import { LOOP_CURRENT_SCHEMA, type LoopCurrentConfig } from "./loop-current.js";
import { MAX_READ_BITS, MAX_READ_REGISTERS } from "./protocol.js";

export type ReadTable = "coil" | "discrete" | "holding" | "input";
export type WriteTable = "coil" | "holding";

export interface PointConfig {
  name: string;
  table: ReadTable;
  address: number;
  type: DataType;
  order: WordOrder;
  bit?: number;
  scale: number;
  offset: number;
  unit?: string;
  group: string;
  /** a raw value the device uses for "no valid reading" (e.g. -32768) */
  invalidRaw?: number;
  /** the value is a 4–20 mA loop current, converted to engineering units */
  loop4to20?: LoopCurrentConfig;
}

export interface OutputConfig {
  name: string;
  table: WriteTable;
  address: number;
  type: DataType;
  order: WordOrder;
  scale: number;
  offset: number;
  unit?: string;
  /** rewrite the last value this often even if unchanged, ms (0 = only on change) */
  refreshMs: number;
  /** read back after each write and compare */
  verify: boolean;
  /** allowed |read-back − written| in engineering units */
  tolerance: number;
  /**
   * its writes' and read-backs' place in the bus's queue, 0 first (as a polling group's): the pod
   * puts its isolation valves and power outputs at 0 whatever is configured (agent/loop/field-setup.ts)
   */
  priority: number;
}

export interface DeviceConfig {
  name: string;
  bus?: string;
  tcp?: { host: string; port: number; maxInFlight: number };
  unitId: number;
  timeoutMs: number;
  retries: number;
  retryDelayMs: number;
  maxGapRegisters: number;
  maxRequestRegisters: number;
  maxRequestBits: number;
  breaker: { failures: number; damagedAnswers: number; openMs: number; maxOpenMs: number };
  lease?: LeaseConfig;
  points: PointConfig[];
  outputs: OutputConfig[];
}

export interface BusConfig extends SerialFraming {
  name: string;
  path: string;
  baudRate: number;
  /** who drives the RS-485 transceiver's direction: the adapter or the kernel (none), or podwarden through RTS (rts) */
  rs485: "none" | "rts";
  /** the adapter's delivery latency, ms (a USB adapter's latency timer), added to t3.5 for interFrameMs's default */
  latencyMs: number;
  guardMs: number;
  /** as configured; undefined: from the baud rate, the framing and latencyMs (serial-line.ts) */
  interFrameMs?: number;
  /** fraction of wall time polling may keep the bus busy; beyond it low-priority polls are skipped */
  budget: number;
}

export interface GroupConfig {
  name: string;
  periodMs: number;
  /** 0 is served first (leak and safety), higher numbers later */
  priority: number;
}

export interface ModbusConfig {
  groups: GroupConfig[];
  buses: BusConfig[];
  devices: DeviceConfig[];
  reconnect: { baseMs: number; maxMs: number; connectTimeoutMs: number };
}

const name = { type: "string", pattern: "^[A-Za-z][A-Za-z0-9_-]*$", description: "identifier" };
const addr = { type: "integer", minimum: 0, maximum: 65535, description: "zero-based protocol address" };

const encoding = {
  type: { enum: [...DATA_TYPES], default: "u16", description: "data type" },
  order: { enum: [...WORD_ORDERS], default: "ABCD", description: "byte/word order of multi-register values (docs/drivers.md)" },
  scale: { type: "number", default: 1, not: { const: 0 }, description: "engineering = raw × scale + offset" },
  offset: { type: "number", default: 0, description: "engineering = raw × scale + offset" },
  unit: { type: "string", description: "engineering unit, for people and telemetry" },
};

export const MODBUS_SCHEMA = {
  type: "object",
  additionalProperties: false,
  description: "Modbus field devices",
  properties: {
    groups: {
      type: "array",
      description: "polling groups",
      default: [
        { name: "safety", periodMs: 100, priority: 0 },
        { name: "control", periodMs: 200, priority: 1 },
        { name: "telemetry", periodMs: 2000, priority: 2 },
      ],
      items: {
        type: "object",
        additionalProperties: false,
        required: ["name", "periodMs"],
        properties: {
          name,
          periodMs: { type: "integer", minimum: 1, maximum: 3_600_000, description: "poll period, ms" },
          priority: { type: "integer", minimum: 0, maximum: 9, default: 1, description: "0 first" },
        },
      },
    },
    buses: {
      type: "array",
      default: [],
      description: "RS-485 buses (Modbus RTU)",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["name", "path"],
        properties: {
          name,
          path: { type: "string", minLength: 1, description: "serial device, e.g. /dev/ttyUSB0" },
          baudRate: { type: "integer", minimum: 1200, maximum: 921600, default: 19200, description: "baud" },
          dataBits: { type: "integer", enum: [8], default: 8, description: "data bits: 8, as Modbus RTU carries binary bytes (7 is Modbus ASCII's, which podwarden does not speak)" },
          parity: { enum: ["none", "even", "odd"], default: "even", description: "parity: even is the Modbus serial-line specification's default, which every device must offer; many ship none (8N1 or 8N2) or odd: set what the devices' manuals say" },
          stopBits: { type: "integer", enum: [1, 2], default: 1, description: "stop bits: the specification has 2 with no parity (8N2), 1 with parity; some devices want 8N1" },
          rs485: { enum: ["none", "rts"], default: "none", description: "who switches the RS-485 transceiver between sending and receiving: none, the adapter itself (auto-direction USB adapters) or the kernel's RS-485 mode (set by the board's device tree, linux,rs485-enabled-at-boot-time); rts, podwarden raises RTS while it sends and drops it once the frame is out (for adapters that need it; software timing, so a device that answers within a millisecond may lose its first bytes: prefer either of the others)" },
          latencyMs: { type: "integer", minimum: 0, maximum: 100, default: 16, description: "how late the adapter may hand over the bytes of a frame, ms: 16 for a USB adapter (an FTDI chip's default latency timer), 0 for an on-board UART; added to t3.5 for interFrameMs's default" },
          guardMs: { type: "integer", minimum: 0, maximum: 10000, default: 100, description: "silence after a timeout before the next request, ms" },
          interFrameMs: { type: "integer", minimum: 1, maximum: 1000, description: "silence that ends a truncated frame, and that the line needs after a bad frame or stray bytes before the next request, ms; default: t3.5 of the baud rate and framing (3.5 characters, 1.75 ms above 19,200 baud), rounded up, plus latencyMs" },
          budget: { type: "number", exclusiveMinimum: 0, maximum: 1, default: 0.85, description: "share of bus time polling may use" },
        },
      },
    },
    reconnect: {
      type: "object",
      additionalProperties: false,
      default: {},
      description: "reconnect backoff (exponential with jitter, forever)",
      properties: {
        baseMs: { type: "integer", minimum: 10, maximum: 60000, default: 200, description: "first retry, ms" },
        maxMs: { type: "integer", minimum: 10, maximum: 600000, default: 10000, description: "longest wait, ms" },
        connectTimeoutMs: { type: "integer", minimum: 10, maximum: 60000, default: 2000, description: "TCP connect timeout, ms" },
      },
    },
    devices: {
      type: "array",
      default: [],
      items: {
        type: "object",
        additionalProperties: false,
        required: ["name", "unitId"],
        properties: {
          name,
          bus: { type: "string", description: "RTU bus name (or give tcp)" },
          tcp: {
            type: "object",
            additionalProperties: false,
            required: ["port"],
            properties: {
              host: { type: "string", default: "127.0.0.1", description: "device address" },
              port: { type: "integer", minimum: 1, maximum: 65535, description: "device port" },
              maxInFlight: { type: "integer", minimum: 1, maximum: 16, default: 1, description: "pipelined requests" },
            },
            description: "Modbus TCP device (or give bus)",
          },
          unitId: { type: "integer", minimum: 0, maximum: 255, description: "unit id" },
          timeoutMs: { type: "integer", minimum: 5, maximum: 60000, default: 200, description: "per request, ms" },
          retries: { type: "integer", minimum: 0, maximum: 10, default: 1, description: "retries of a failed request" },
          retryDelayMs: { type: "integer", minimum: 0, maximum: 60000, default: 20, description: "before a retry, ms" },
          maxGapRegisters: { type: "integer", minimum: 0, maximum: 125, default: 8, description: "coalesce reads across gaps up to this" },
          maxRequestRegisters: { type: "integer", minimum: 1, maximum: MAX_READ_REGISTERS, default: MAX_READ_REGISTERS, description: "per read" },
          maxRequestBits: { type: "integer", minimum: 1, maximum: MAX_READ_BITS, default: MAX_READ_BITS, description: "per read of coils or inputs" },
          breaker: {
            type: "object",
            additionalProperties: false,
            default: {},
            description: "circuit breaker",
            properties: {
              failures: { type: "integer", minimum: 1, maximum: 100, default: 3, description: "failures (timeouts, device-failure exceptions) with no good answer between that open it" },
              damagedAnswers: { type: "integer", minimum: 1, maximum: 1000, default: 10, description: "RTU answers damaged on the line (bad CRC, cut frame) in a row that open it" },
              openMs: { type: "integer", minimum: 10, maximum: 600000, default: 1000, description: "first open period, ms" },
              maxOpenMs: { type: "integer", minimum: 10, maximum: 3600000, default: 30000, description: "longest open period, ms" },
            },
          },
          lease: {
            type: "object",
            additionalProperties: false,
            required: ["address"],
            description: "the device's safety lease, renewed only while the control loop is healthy: the device puts its outputs at their safe values when it runs out (docs/safety.md, Device leases)",
            properties: {
              style: {
                enum: ["heartbeat-counter", "watchdog-register", "comms-watchdog"],
                default: "heartbeat-counter",
                description:
                  "how the device's firmware keeps its lease: heartbeat-counter, a register written with a counter that must move (podwarden's simulator, custom firmware); watchdog-register, a register written with the same value every period (a module's watchdog-reset register); comms-watchdog, the device's own timer on any traffic (a module's communication watchdog): podwarden reads `address` every period while control is healthy and sends the device nothing at all while it is not",
              },
              address: { ...addr, description: "heartbeat-counter, watchdog-register: the holding register written every period; comms-watchdog: a holding register read every period to keep traffic up" },
              periodMs: { type: "integer", minimum: 10, maximum: 60000, default: 500, description: "renewal period, ms: well inside the device's own lease time" },
              value: { type: "integer", minimum: 0, maximum: 65535, default: 1, description: "watchdog-register: the value written every period (the module's manual says which)" },
              timeout: {
                type: "object",
                additionalProperties: false,
                required: ["address", "ms"],
                description: "the device's own lease time: written at every connect (unless write: false), and read back; a device holding another is unwell (its health says so)",
                properties: {
                  address: { ...addr, description: "the holding register of the device's lease time" },
                  ms: { type: "integer", minimum: 10, maximum: 3600000, description: "the lease time, ms" },
                  unitMs: { type: "integer", minimum: 1, maximum: 60000, default: 1, description: "the register's unit, ms (100 for a module counting tenths of a second)" },
                  write: { type: "boolean", default: true, description: "write it at connect; false: only verify it (set on the module by its own tool)" },
                },
              },
              safeValues: {
                type: "array",
                default: [],
                maxItems: 64,
                description:
                  "the safe values the device itself holds for its outputs (set with the device's own tool), each read at every connect and compared: a device holding another is unwell (its health says so). Where the device's safe values cannot be read, leave this out and say so in the device's documentation; docs/safety.md, Device leases",
                items: {
                  type: "object",
                  additionalProperties: false,
                  required: ["output", "table", "address", "value"],
                  properties: {
                    output: { type: "string", minLength: 1, maxLength: 64, description: "the output it is the safe value of (one of the device's outputs)" },
                    table: { enum: ["holding", "coil"], description: "where the device keeps it" },
                    address: addr,
                    value: { type: "integer", minimum: 0, maximum: 65535, description: "the register's raw value, as the device's manual gives it (a coil: 0 or 1)" },
                  },
                },
              },
            },
          },
          points: {
            type: "array",
            default: [],
            items: {
              type: "object",
              additionalProperties: false,
              required: ["name", "table", "address"],
              properties: {
                name,
                table: { enum: ["coil", "discrete", "holding", "input"], description: "Modbus table" },
                address: addr,
                ...encoding,
                bit: { type: "integer", minimum: 0, maximum: 15, description: "for type bit" },
                group: { type: "string", default: "control", description: "polling group" },
                invalidRaw: { type: "number", description: "raw value meaning no valid reading" },
                loop4to20: LOOP_CURRENT_SCHEMA,
              },
            },
          },
          outputs: {
            type: "array",
            default: [],
            items: {
              type: "object",
              additionalProperties: false,
              required: ["name", "table", "address"],
              properties: {
                name,
                table: { enum: ["coil", "holding"], description: "Modbus table" },
                address: addr,
                ...encoding,
                refreshMs: { type: "integer", minimum: 0, maximum: 3600000, default: 1000, description: "rewrite period, ms (0 = on change only)" },
                verify: { type: "boolean", default: true, description: "read back after writing" },
                tolerance: { type: "number", minimum: 0, default: 0.01, description: "read-back tolerance" },
                priority: { type: "integer", minimum: 0, maximum: 9, default: 1, description: "its writes' and read-backs' place in the bus's queue, 0 first, as a polling group's priority; a rack's isolation valves and power outputs are always written at 0, ahead of a control valve's commands on a busy serial bus" },
              },
            },
          },
        },
      },
    },
  },
};

/** Cross-field rules JSON Schema cannot say; problems in "path: reason" form. */
export function modbusProblems(c: ModbusConfig, at = "modbus"): string[] {
  const out: string[] = [];
  const groups = new Set(c.groups.map((g) => g.name));
  const buses = new Set(c.buses.map((b) => b.name));
  const dup = (names: string[], where: string): void => {
    const seen = new Set<string>();
    for (const n of names) {
      if (seen.has(n)) out.push(`${where}: duplicate name "${n}"`);
      seen.add(n);
    }
  };
  dup(c.groups.map((g) => g.name), `${at}.groups`);
  dup(c.buses.map((b) => b.name), `${at}.buses`);
  dup(c.devices.map((d) => d.name), `${at}.devices`);
  c.devices.forEach((d, i) => {
    const p = `${at}.devices[${i}]`;
    if ((d.bus === undefined) === (d.tcp === undefined)) out.push(`${p}: give exactly one of bus and tcp`);
    if (d.bus !== undefined && !buses.has(d.bus)) out.push(`${p}.bus: no bus named "${d.bus}"`);
    dup([...d.points.map((x) => x.name), ...d.outputs.map((x) => x.name)], `${p}.points/outputs`);
    d.points.forEach((pt, k) => {
      const pp = `${p}.points[${k}]`;
      if (!groups.has(pt.group)) out.push(`${pp}.group: no polling group named "${pt.group}"`);
      const bits = pt.table === "coil" || pt.table === "discrete";
      if (bits && pt.type !== "bool") out.push(`${pp}.type: ${pt.table} points are bool`);
      if (!bits && pt.type === "bool") out.push(`${pp}.type: use bit (with bit:) for a bit of a register`);
      if ((pt.type === "bit") !== (pt.bit !== undefined)) out.push(`${pp}.bit: required with type bit, and only with it`);
      if (pt.address + (bits ? 1 : registerCount(pt.type)) > 65536) out.push(`${pp}.address: runs past 65535`);
      if (pt.loop4to20 !== undefined && bits) out.push(`${pp}.loop4to20: a loop current is a register value, not a bit`);
      if (pt.loop4to20 !== undefined && pt.loop4to20.at4mA === pt.loop4to20.at20mA) out.push(`${pp}.loop4to20.at20mA: must differ from at4mA`);
    });
    d.outputs.forEach((o, k) => {
      const op = `${p}.outputs[${k}]`;
      if (o.table === "coil" && o.type !== "bool") out.push(`${op}.type: coil outputs are bool`);
      if (o.table === "holding" && (o.type === "bool" || o.type === "bit")) out.push(`${op}.type: holding outputs are numeric`);
      if (o.address + (o.table === "coil" ? 1 : registerCount(o.type)) > 65536) out.push(`${op}.address: runs past 65535`);
    });
    if (d.breaker.maxOpenMs < d.breaker.openMs) out.push(`${p}.breaker.maxOpenMs: must be >= openMs`);
    (d.lease?.safeValues ?? []).forEach((v, k) => {
      const at = `${p}.lease.safeValues[${k}]`;
      if (!d.outputs.some((o) => o.name === v.output)) out.push(`${at}.output: "${v.output}" is not one of ${d.name}'s outputs`);
      if (v.table === "coil" && v.value > 1) out.push(`${at}.value: a coil holds 0 or 1`);
    });
    const t = d.lease?.timeout;
    if (t !== undefined && t.ms / t.unitMs > 65535) out.push(`${p}.lease.timeout.ms: ${t.ms} ms is more than a register of ${t.unitMs} ms units holds (65535)`);
    if (t !== undefined && d.lease !== undefined && d.lease.periodMs * 2 > t.ms) out.push(`${p}.lease.periodMs: ${d.lease.periodMs} ms is more than half the device's lease time (${t.ms} ms): one late renewal would let it run out`);
  });
  if (c.reconnect.maxMs < c.reconnect.baseMs) out.push(`${at}.reconnect.maxMs: must be >= baseMs`);
  return out;
}

/** Validates a standalone Modbus config (the agent embeds MODBUS_SCHEMA in its own). */
export const validateModbusConfig = validator<ModbusConfig>(MODBUS_SCHEMA, (c) => modbusProblems(c));
