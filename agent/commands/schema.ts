// The command contract: the envelope, the signed body and each command's parameters, as JSON
// Schemas checked by ajv before anything else looks at a command (docs/mqtt.md lists them).
import { Ajv } from "ajv";
import { describe } from "../../lib/config-file.js";

export const COMMANDS = ["setpoint", "mode", "ack-alarm", "reset-leak", "isolate-rack", "return-rack", "power-budget", "snapshot", "record", "tune", "gains", "stroke", "force", "config"] as const;
export type CommandName = (typeof COMMANDS)[number];

export const ROLES = ["observer", "operator", "engineer"] as const;
export type Role = (typeof ROLES)[number];

/**
 * What each role may do. Nothing any role can send disables an interlock. Tuning a loop,
 * changing its gains and stroking an isolation valve are the engineer's: a relay autotune moves
 * an actuator on its own for minutes, gains decide how every later move is made, and a
 * partial-stroke test closes part of a rack's coolant path. Forcing an output for a loop check
 * is the engineer's too, and only in maintenance; so is a whole config pushed from mission control
 * (`config`), which the pod takes only with configPush.enabled and keeps only after a health window.
 */
export const ROLE_COMMANDS: Record<Role, readonly CommandName[]> = {
  observer: ["snapshot"],
  operator: ["snapshot", "setpoint", "mode", "ack-alarm", "isolate-rack", "return-rack", "record"],
  engineer: COMMANDS,
};

export const LOOP_MODES = ["Automatic", "Manual", "Override", "Disabled"] as const;

/**
 * The largest config a push carries, characters: the shipped template is 7 kB, a 10-rack pod's
 * config with profiles inlined ~30 kB. The command's payload bound follows from it, and both are
 * checked before the payload is parsed (agent/commands/authorizer.ts).
 */
export const MAX_PUSHED_CONFIG_CHARS = 128 * 1024;
/** The payload bound of a `config` command: its config JSON-escaped twice over, at most. */
export const MAX_CONFIG_COMMAND_BYTES = 4 * MAX_PUSHED_CONFIG_CHARS;

const name = { type: "string", minLength: 1, maxLength: 64, pattern: "^[A-Za-z0-9][A-Za-z0-9_.:-]*$" };
const finite = (min: number, max: number): object => ({ type: "number", minimum: min, maximum: max });

export const PARAM_SCHEMAS: Record<CommandName, object> = {
  setpoint: {
    type: "object",
    additionalProperties: false,
    required: ["loop", "value", "leaseS"],
    properties: { loop: name, value: finite(-1e6, 1e6), leaseS: { type: "integer", minimum: 1, maximum: 604_800 } },
  },
  mode: {
    type: "object",
    additionalProperties: false,
    properties: {
      loop: name,
      mode: { enum: LOOP_MODES },
      outputPct: finite(0, 100),
      leaseS: { type: "integer", minimum: 1, maximum: 604_800 },
      maintenance: { type: "boolean" },
    },
    // either {loop, mode[, outputPct][, leaseS]} or {maintenance}: checked by the executor
  },
  "ack-alarm": { type: "object", additionalProperties: false, required: ["id"], properties: { id: { type: "string", minLength: 1, maxLength: 200 } } },
  "reset-leak": { type: "object", additionalProperties: false, required: ["rack"], properties: { rack: name } },
  "isolate-rack": { type: "object", additionalProperties: false, required: ["rack"], properties: { rack: name } },
  "return-rack": { type: "object", additionalProperties: false, required: ["rack"], properties: { rack: name } },
  "power-budget": { type: "object", additionalProperties: false, required: ["podKw"], properties: { podKw: finite(0, 1e6) } },
  snapshot: { type: "object", additionalProperties: false, properties: {} },
  record: { type: "object", additionalProperties: false, properties: {} },
  tune: { type: "object", additionalProperties: false, required: ["loop", "action"], properties: { loop: name, action: { enum: ["start", "abort", "status"] } } },
  stroke: {
    type: "object",
    additionalProperties: false,
    required: ["action"],
    properties: { rack: name, valve: { enum: ["supply", "return"] }, action: { enum: ["start", "abort", "status"] } },
    // start needs rack and valve; abort and status take neither (one test runs at a time)
  },
  force: {
    type: "object",
    additionalProperties: false,
    required: ["output"],
    properties: { output: name, value: finite(-1e6, 1e6), leaseS: { type: "integer", minimum: 1, maximum: 604_800 }, release: { const: true } },
    // {output, value, leaseS}: force it for the lease; {output, release: true}: end the force.
    // Checked by the executor.
  },
  config: {
    type: "object",
    additionalProperties: false,
    required: ["action"],
    properties: {
      action: { enum: ["apply", "status"] },
      yaml: { type: "string", minLength: 1, maxLength: MAX_PUSHED_CONFIG_CHARS },
      windowS: { type: "integer", minimum: 1, maximum: 3600 },
    },
    // {action: "apply", yaml[, windowS]}, or {action: "status"}: checked by the daemon
    // (agent/config-push/config-push.ts)
  },
  gains: {
    type: "object",
    additionalProperties: false,
    required: ["loop"],
    properties: {
      loop: name,
      rule: { enum: ["simc", "tyreus-luyben", "ziegler-nichols"] },
      kp: finite(0, 1e6),
      ki: finite(0, 1e6),
      kd: finite(0, 1e6),
      revert: { const: true },
    },
    // {loop}: show; {loop, rule}: apply a proposal of the last tuning; {loop, kp, ki[, kd]}: by
    // hand; {loop, revert: true}: back to the config's. Checked by the executor.
  },
};

const envelopeSchema = (maxBody: number): object => ({
  type: "object",
  additionalProperties: false,
  required: ["keyId", "signature", "body"],
  properties: {
    keyId: name,
    // exactly the canonical base64 of 64 bytes: Buffer.from(x, "base64") skips stray characters,
    // so without this one signature would have many spellings (found by the command fuzzer)
    signature: { type: "string", pattern: "^[A-Za-z0-9+/]{86}==$" },
    body: { type: "string", minLength: 2, maxLength: maxBody },
  },
});
export const ENVELOPE_SCHEMA = envelopeSchema(8192);
/** A pushed config's envelope: its body carries the whole file (JSON-escaped: a few % longer). */
const CONFIG_ENVELOPE_SCHEMA = envelopeSchema(MAX_CONFIG_COMMAND_BYTES);

export const BODY_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["v", "pod", "command", "transaction", "seq", "issuedAt", "expiresAt", "params"],
  properties: {
    v: { const: 1 },
    pod: { type: "string", minLength: 3, maxLength: 130, description: "<site>/<pod> the command is for" },
    command: { enum: COMMANDS },
    transaction: { type: "string", minLength: 1, maxLength: 64, pattern: "^[\\x21-\\x7e]+$" },
    seq: { type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
    issuedAt: { type: "string", format: "date-time", maxLength: 40 },
    expiresAt: { type: "string", format: "date-time", maxLength: 40 },
    params: { type: "object" },
  },
};

export interface CommandBody {
  v: 1;
  pod: string;
  command: CommandName;
  transaction: string;
  seq: number;
  issuedAt: string;
  expiresAt: string;
  params: Record<string, unknown>;
}

const ajv = new Ajv({ allErrors: false, strict: true });
// RFC 3339 date-time, checked by Date.parse as well (ajv-formats would be one more dependency)
ajv.addFormat("date-time", { type: "string", validate: (s: string) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(s) && Number.isFinite(Date.parse(s)) });

// compiled on first use: config checking imports this module for ROLES alone
type Compiled = ReturnType<typeof ajv.compile>;
const cache = new Map<object, Compiled>();
const compiled = (schema: object): Compiled => {
  let fn = cache.get(schema);
  if (fn === undefined) {
    fn = ajv.compile(schema);
    cache.set(schema, fn);
  }
  return fn;
};

export type Checked<T> = { ok: true; value: T } | { ok: false; reason: string };

function run<T>(fn: Compiled, data: unknown, what: string): Checked<T> {
  if (fn(data)) return { ok: true, value: data as T };
  const e = fn.errors?.[0];
  return { ok: false, reason: `${what}: ${e === undefined ? "invalid" : describe(e)}` };
}

export const validateEnvelope = (data: unknown, command?: CommandName): Checked<{ keyId: string; signature: string; body: string }> =>
  run(compiled(command === "config" ? CONFIG_ENVELOPE_SCHEMA : ENVELOPE_SCHEMA), data, "envelope");
export const validateBody = (data: unknown): Checked<CommandBody> => run(compiled(BODY_SCHEMA), data, "body");
export const validateParams = (command: CommandName, data: unknown): Checked<Record<string, unknown>> => run(compiled(PARAM_SCHEMAS[command]), data, "params");

export function isCommandName(s: string): s is CommandName {
  return (COMMANDS as readonly string[]).includes(s);
}
