// Decides whether a command payload is authentic, fresh, addressed to this pod and allowed for
// its signer's role. Cheap checks come first so a flood of junk costs little; the signature is
// checked before anything that depends on the body's claims; the replay guard is last, so only
// an authentic, otherwise valid command moves its key's sequence number.
import type { KeyObject } from "node:crypto";
import { parsePublicKey, verifyEnvelope } from "./signing.js";
import { duplicateKeyProblem } from "../../lib/json-unique-keys.js";
import { ReplayGuard } from "./replay-guard.js";
import { MAX_CONFIG_COMMAND_BYTES, ROLE_COMMANDS, validateBody, validateEnvelope, validateParams, type CommandBody, type CommandName, type Role } from "./schema.js";

export const MAX_COMMAND_BYTES = 16 * 1024;

/** Every code a rejected command's answer carries (docs/mqtt.md lists them). */
export const REJECT_CODES = ["malformed", "wrong-pod", "unknown-key", "bad-signature", "forbidden", "expired", "not-yet-valid", "invalid-params", "replayed", "unavailable", "out-of-envelope", "not-found", "refused"] as const;
export type RejectCode = (typeof REJECT_CODES)[number];

export interface CommandKey {
  id: string;
  publicKey: string;
  roles: Role[];
}

export interface AuthorizerOptions {
  site: string;
  pod: string;
  keys: readonly CommandKey[];
  maxTtlS: number;
  clockSkewS: number;
  /** where the replay guard keeps its state; without one every command is refused */
  stateDir: string | undefined;
}

export interface Authorised {
  ok: true;
  body: CommandBody;
  keyId: string;
  roles: Role[];
}

/**
 * The checks a command passes, in the order they run: a rejection names the one that stopped it
 * (the fuzzer counts how far its cases reach; the code alone lumps several as "malformed").
 */
export const CHECKS = ["size", "json", "envelope", "body-json", "body", "topic", "pod", "key", "signature", "duplicates", "role", "lifetime", "not-yet-valid", "expiry", "params", "replay"] as const;
export type Check = (typeof CHECKS)[number];

export interface Rejected {
  ok: false;
  code: RejectCode;
  reason: string;
  /** the check that refused it */
  check: Check;
  /** from the body, when it could be read: the response carries it back */
  transaction?: string;
  keyId?: string;
  /** an authentic command refused by the replay guard: its seq (with keyId and transaction, which command it repeats) */
  seq?: number;
}

export class CommandAuthorizer {
  private readonly keys = new Map<string, { key: KeyObject; roles: Role[] }>();
  private readonly guard: ReplayGuard | null;
  readonly problem: string | null;

  constructor(private readonly o: AuthorizerOptions) {
    // keys were validated with the config; a key that will not parse here is a config error
    for (const k of o.keys) this.keys.set(k.id, { key: parsePublicKey(k.publicKey), roles: k.roles });
    let guard: ReplayGuard | null = null;
    let problem: string | null = o.stateDir === undefined ? "no state directory: replay protection cannot persist, so every command is refused" : null;
    try {
      guard = o.stateDir === undefined ? null : new ReplayGuard(o.stateDir, Date.now());
      problem ??= guard?.problem ?? null;
    } catch (err) {
      // the damaged file's loss marker could not be saved: without it a restart would reopen
      // every recorded command, so none is taken at all
      problem = `the replay guard's state was lost and its loss marker cannot be saved (${(err as Error).message}), so every command is refused`;
    }
    this.guard = guard;
    this.problem = problem;
  }

  /**
   * Every check but the replay guard's runs before this returns its promise, in arrival order; an
   * accepted command's verdict comes once its seq is on disk.
   */
  async check(topicCommand: CommandName, payload: Buffer, nowMs: number): Promise<Authorised | Rejected> {
    const max = topicCommand === "config" ? MAX_CONFIG_COMMAND_BYTES : MAX_COMMAND_BYTES;
    if (payload.length > max) return { ok: false, code: "malformed", check: "size", reason: `payload of ${payload.length} bytes exceeds ${max}` };
    let raw: unknown;
    try {
      raw = JSON.parse(payload.toString("utf8"));
    } catch {
      return { ok: false, code: "malformed", check: "json", reason: "payload is not JSON" };
    }
    const env = validateEnvelope(raw, topicCommand);
    if (!env.ok) return { ok: false, code: "malformed", check: "envelope", reason: env.reason };
    const keyId = env.value.keyId;
    let bodyRaw: unknown;
    try {
      bodyRaw = JSON.parse(env.value.body);
    } catch {
      return { ok: false, code: "malformed", check: "body-json", reason: "body is not JSON", keyId };
    }
    const tx = (bodyRaw as { transaction?: unknown } | null)?.transaction;
    const transaction = typeof tx === "string" && tx.length <= 64 ? tx : undefined;
    const reject = (check: Check, code: RejectCode, reason: string): Rejected => ({ ok: false, code, check, reason, transaction, keyId });

    const b = validateBody(bodyRaw);
    if (!b.ok) return reject("body", "malformed", b.reason);
    const body = b.value;
    if (body.command !== topicCommand) return reject("topic", "malformed", `body is a "${body.command}" command sent to request/${topicCommand}`);
    const me = `${this.o.site}/${this.o.pod}`;
    if (body.pod !== me) return reject("pod", "wrong-pod", `addressed to ${body.pod}, this is ${me}`);
    const key = this.keys.get(keyId);
    if (key === undefined) return reject("key", "unknown-key", `key ${keyId} is not configured`);
    if (!verifyEnvelope(env.value, key.key)) return reject("signature", "bad-signature", `signature does not verify with key ${keyId}`);
    // only an authentic body is worth the second parse: duplicates could make it say two things
    const dup = duplicateKeyProblem(env.value.body);
    if (dup !== null) return reject("duplicates", "malformed", `the body repeats a key (${dup}): each key once`);
    if (!key.roles.some((r) => ROLE_COMMANDS[r].includes(body.command))) return reject("role", "forbidden", `key ${keyId} (${key.roles.join(", ")}) may not send ${body.command}`);

    const issued = Date.parse(body.issuedAt);
    const expires = Date.parse(body.expiresAt);
    if (expires <= issued) return reject("lifetime", "malformed", "expiresAt is not after issuedAt");
    if (expires - issued > this.o.maxTtlS * 1000) return reject("lifetime", "malformed", `lifetime ${Math.round((expires - issued) / 1000)} s exceeds the allowed ${this.o.maxTtlS} s`);
    if (issued > nowMs + this.o.clockSkewS * 1000) return reject("not-yet-valid", "not-yet-valid", `issued ${body.issuedAt}, in the future beyond the allowed clock skew`);
    if (expires <= nowMs) return reject("expiry", "expired", `expired at ${body.expiresAt}`);

    const p = validateParams(body.command, body.params);
    if (!p.ok) return reject("params", "invalid-params", p.reason);

    if (this.guard === null) return reject("replay", "unavailable", this.problem ?? "no replay guard");
    try {
      const v = await this.guard.admit(keyId, body.seq, issued);
      if (!v.ok) return { ...reject("replay", "replayed", v.reason), seq: body.seq };
    } catch (err) {
      // could not record the seq: refusing is the only safe answer
      return reject("replay", "unavailable", `cannot record the command sequence: ${(err as Error).message}`);
    }
    return { ok: true, body, keyId, roles: key.roles };
  }
}
