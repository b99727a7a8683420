// The sending side of a command, for mission-control tooling, `podwarden command` and tests:
// builds the body, signs it, and returns the payload to publish on request/<command>.
import { randomUUID, type KeyObject } from "node:crypto";
import type { CommandBody, CommandName } from "./schema.js";
import { signEnvelope } from "./signing.js";

export interface CommandSpec {
  site: string;
  pod: string;
  command: CommandName;
  params: Record<string, unknown>;
  /** strictly increasing per key (e.g. a persisted counter, or milliseconds since the epoch) */
  seq: number;
  keyId: string;
  privateKey: KeyObject;
  ttlS?: number;
  transaction?: string;
  nowMs?: number;
}

export function commandBody(s: CommandSpec): CommandBody {
  const now = s.nowMs ?? Date.now();
  return {
    v: 1,
    pod: `${s.site}/${s.pod}`,
    command: s.command,
    transaction: s.transaction ?? randomUUID(),
    seq: s.seq,
    issuedAt: new Date(now).toISOString(),
    expiresAt: new Date(now + (s.ttlS ?? 60) * 1000).toISOString(),
    params: s.params,
  };
}

/** A command's parameters from their JSON text (a CLI's --params): an object, or an error saying so. */
export function parseParams(text: string): Record<string, unknown> {
  let params: unknown;
  try {
    params = JSON.parse(text);
  } catch {
    throw new Error("--params must be a JSON object");
  }
  if (typeof params !== "object" || params === null || Array.isArray(params)) throw new Error("--params must be a JSON object");
  return params as Record<string, unknown>;
}

/** The payload for request/<command>: the signed envelope as JSON. */
export function signedCommand(s: CommandSpec, body: CommandBody = commandBody(s)): string {
  return JSON.stringify(signEnvelope(JSON.stringify(body), s.keyId, s.privateKey));
}
