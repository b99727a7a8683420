// A rig adapter: what the real-time HIL runner needs to know of a rig (docs/hil.md). YAML,
// checked against a JSON Schema like the config:
//
//   name: bench-rig-2
//   devices:                        # where the daemon finds the rig's devices (over its config's)
//     cdu: { host: 10.0.4.10, port: 502, unitId: 1 }
//     rack-1.bmc: { url: https://10.0.4.31 }
//   truth: { url: http://10.0.4.2:8502/truth }   # ground truth, in the simulator's /truth shape
//   faults:                         # how each kind of step is injected
//     leak: { http: { url: http://10.0.4.2:8502/fault } }
//     pumpTrip: { modbus: { host: 10.0.4.10, port: 502, unitId: 1, table: coil, address: 9, value: 1 } }
//     default: { manual: "Do this on the rig, then press Enter: {action}" }
//   clear: { http: { url: http://10.0.4.2:8502/clear } }
//
// The simulator run as its own process (`podwarden sim`) is a rig like any other:
// configs/hil/rigs/sim-pod.yaml reaches it only through its Modbus devices and its fault API.
import { ModbusClient } from "../drivers/modbus/modbus-serial.js";
import { readResponseBounded } from "../lib/bounded-read.js";
import { ConfigError, loadYamlFile, validator } from "../lib/config-file.js";
import { ACTION_KEYS, type FaultAction } from "../sim/faults.js";

export type Injector =
  | { http: { url: string; method?: "POST" | "PUT"; body?: unknown } }
  | { modbus: { host: string; port: number; unitId?: number; table: "coil" | "holding"; address: number; value: number } }
  | { manual: string };

export interface RigDevice {
  /** a Modbus TCP device */
  host?: string;
  port?: number;
  unitId?: number;
  /** a Redfish BMC */
  url?: string;
  /** a Modbus device reached over a serial line (RTU) instead: the port on the daemon's host */
  serial?: { path: string; baudRate: number };
}

export interface RigAdapter {
  name: string;
  description: string;
  /** device name (as the daemon's config names it) -> where it is on this rig */
  devices: Record<string, RigDevice>;
  /** GET: the plant's ground truth in the simulator's /truth shape; absent: no truth.* signals */
  truth?: { url: string };
  /** how often the pod and the truth are sampled, ms */
  sampleMs: number;
  /** after the daemon says it runs, how long the pod settles before the scenario's time 0, s */
  settleS: number;
  /** fault kind (a step's action key) or `default` -> how it is injected */
  faults: Record<string, Injector>;
  /** run before and after each scenario: every fault undone */
  clear?: Injector;
  file: string;
}

const URL_PATTERN = "^https?://[^\\s]+$";
const INJECTOR = {
  oneOf: [
    {
      type: "object",
      additionalProperties: false,
      required: ["http"],
      properties: {
        http: {
          type: "object",
          additionalProperties: false,
          required: ["url"],
          properties: {
            url: { type: "string", pattern: URL_PATTERN, maxLength: 1000, description: "where to send the request" },
            method: { enum: ["POST", "PUT"], description: "POST unless PUT" },
            body: { description: "the JSON body (default: the step's action, as `podwarden sim`'s POST /fault takes it)" },
          },
        },
      },
    },
    {
      type: "object",
      additionalProperties: false,
      required: ["modbus"],
      properties: {
        modbus: {
          type: "object",
          additionalProperties: false,
          required: ["host", "port", "table", "address", "value"],
          properties: {
            host: { type: "string", minLength: 1, maxLength: 255 },
            port: { type: "integer", minimum: 1, maximum: 65535 },
            unitId: { type: "integer", minimum: 0, maximum: 255, description: "1 unless given" },
            table: { enum: ["coil", "holding"], description: "a coil (value 0 or 1) or a holding register (0–65535)" },
            address: { type: "integer", minimum: 0, maximum: 65535 },
            value: { type: "integer", minimum: 0, maximum: 65535 },
          },
        },
      },
    },
    {
      type: "object",
      additionalProperties: false,
      required: ["manual"],
      properties: { manual: { type: "string", minLength: 1, maxLength: 2000, description: "what the operator is asked to do ({action}: the step's action); the runner waits for Enter" } },
    },
  ],
};

export const RIG_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["name", "faults"],
  properties: {
    name: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9_.-]*$", maxLength: 100, description: "the rig's name, in the report" },
    description: { type: "string", maxLength: 2000 },
    devices: {
      type: "object",
      maxProperties: 512,
      description: "where the daemon finds each device its config names, on this rig (a Modbus TCP address, a serial line, or a Redfish BMC's URL); devices not named keep the config's",
      additionalProperties: {
        type: "object",
        additionalProperties: false,
        minProperties: 1,
        properties: {
          host: { type: "string", minLength: 1, maxLength: 255 },
          port: { type: "integer", minimum: 1, maximum: 65535 },
          unitId: { type: "integer", minimum: 0, maximum: 255 },
          url: { type: "string", pattern: "^https?://[^/?#\\s]+$", maxLength: 256 },
          serial: {
            type: "object",
            additionalProperties: false,
            required: ["path"],
            description: "a Modbus device reached over a serial line (RTU) on this rig, though the config reaches it over TCP: the daemon gets a bus of this port with the device on it (a line-noise step, `lineNoisePct`, needs one)",
            properties: {
              path: { type: "string", minLength: 1, maxLength: 4096, description: "the serial port on the daemon's host, e.g. /dev/ttyUSB0" },
              baudRate: { type: "integer", minimum: 1200, maximum: 921600, default: 115200, description: "baud" },
            },
          },
        },
      },
    },
    truth: {
      type: "object",
      additionalProperties: false,
      required: ["url"],
      properties: { url: { type: "string", pattern: URL_PATTERN, maxLength: 1000, description: "GET: the plant's ground truth as JSON, in the shape of `podwarden sim`'s GET /truth" } },
      description: "where the rig's ground truth comes from; without it, expectations on truth.* signals are skipped",
    },
    sampleMs: { type: "integer", minimum: 5, maximum: 1000, default: 20, description: "how often the pod (the daemon's admin socket) and the truth are sampled: the resolution of every figure" },
    settleS: { type: "number", minimum: 0, maximum: 600, default: 10, description: "how long the pod runs before the scenario's time 0 (its loops settle)" },
    faults: {
      type: "object",
      minProperties: 1,
      additionalProperties: false,
      properties: Object.fromEntries([...ACTION_KEYS.filter((k) => k !== "clear"), "default"].map((k) => [k, INJECTOR])),
      description: "how a step of each kind (its action's key: leak, sensor, device, valve, …) is injected; `default` for the rest",
    },
    clear: { ...INJECTOR, description: "undoes every fault: before and after each scenario" },
  },
};

const validate = validator<Omit<RigAdapter, "file">>(RIG_SCHEMA);

export function parseRig(data: unknown, file = "rig"): RigAdapter {
  const raw = validate(data, file) as Omit<RigAdapter, "file" | "description" | "devices"> & Partial<Pick<RigAdapter, "description" | "devices">>;
  return { ...raw, description: raw.description ?? "", devices: raw.devices ?? {}, file };
}

export function loadRig(path: string): RigAdapter {
  return parseRig(loadYamlFile(path, validator<unknown>({})), path);
}

/** A step's kind: its action's key. */
export function actionKind(action: FaultAction): string {
  return ACTION_KEYS.find((k) => k in action) ?? "default";
}

/** How this rig injects an action; throws naming it when the rig has no way to. */
export function injectorFor(rig: RigAdapter, action: FaultAction): Injector {
  const kind = actionKind(action);
  const inj = rig.faults[kind] ?? rig.faults.default;
  if (inj === undefined) throw new ConfigError(rig.file, [`faults: no way to inject a "${kind}" step (${JSON.stringify(action)}): add faults.${kind} or faults.default`]);
  return inj;
}

/** A request or a prompt takes at most this long before the step is reported failed. */
const INJECT_TIMEOUT_MS = 5000;
/** A rig's answer is read up to this size: an error message, not a stream. */
const MAX_ANSWER_BYTES = 16 * 1024;

/** Asks the operator to do something, resolves when they confirm; rejects once `until` aborts (the run ended). */
export type Prompt = (text: string, until?: AbortSignal) => Promise<void>;

/**
 * Injects one action the way the rig says. `prompt` asks the operator (and resolves when they
 * confirm), until `until` aborts. Throws with the rig's answer when the injection failed.
 */
export async function inject(inj: Injector, action: FaultAction | { clear: "all" }, prompt: Prompt, until?: AbortSignal): Promise<void> {
  if ("manual" in inj) return prompt(inj.manual.replaceAll("{action}", JSON.stringify(action)), until);
  if ("http" in inj) {
    const h = inj.http;
    const method = h.method ?? "POST";
    const res = await fetch(h.url, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(h.body ?? action), signal: AbortSignal.timeout(INJECT_TIMEOUT_MS) });
    const text = await readResponseBounded(res, MAX_ANSWER_BYTES).catch((err: Error) => `(${err.message})`);
    if (!res.ok) throw new Error(`${method} ${h.url}: ${res.status} ${text}`);
    return;
  }
  const m = inj.modbus;
  const unit = m.unitId ?? 1;
  const client = new ModbusClient();
  try {
    client.setTimeout(INJECT_TIMEOUT_MS);
    await client.connectTCP(m.host, { port: m.port });
    client.setID(unit);
    if (m.table === "coil") await client.writeCoil(m.address, m.value !== 0);
    else await client.writeRegister(m.address, m.value);
  } catch (err) {
    throw new Error(`modbus ${m.host}:${m.port} unit ${unit} ${m.table} ${m.address} = ${m.value}: ${(err as Error).message}`, { cause: err });
  } finally {
    await new Promise<void>((done) => client.close(() => done()));
  }
}
