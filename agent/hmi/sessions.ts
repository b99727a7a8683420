// Who is logged in to the HMI, and who may try: sessions with their CSRF tokens, and the limit
// on failed logins. In memory only: a restart logs everyone out, which is the safe direction.
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { Role } from "../commands/schema.js";

export interface Session {
  user: string;
  roles: Role[];
  /** sent back by the page in x-csrf-token with every action */
  csrf: string;
  expiresAtMs: number;
}

const token = (): string => randomBytes(32).toString("base64url");

export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class Sessions {
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly idleMs: number,
    /** the most sessions held; a new one beyond it ends the oldest */
    private readonly max = 32,
  ) {}

  /** A new session for `user`; returns its id (the cookie) and the session. */
  open(user: string, roles: Role[], nowMs: number): { id: string; session: Session } {
    this.sweep(nowMs);
    while (this.sessions.size >= this.max) this.sessions.delete(this.sessions.keys().next().value as string);
    const id = token();
    const session = { user, roles, csrf: token(), expiresAtMs: nowMs + this.idleMs };
    this.sessions.set(id, session);
    return { id, session };
  }

  /** The live session with this id, its idle time restarted; undefined if none or expired. */
  get(id: string | undefined, nowMs: number): Session | undefined {
    if (id === undefined) return undefined;
    const s = this.sessions.get(id);
    if (s === undefined) return undefined;
    if (s.expiresAtMs <= nowMs) {
      this.sessions.delete(id);
      return undefined;
    }
    s.expiresAtMs = nowMs + this.idleMs;
    return s;
  }

  close(id: string | undefined): void {
    if (id !== undefined) this.sessions.delete(id);
  }

  /** Ends every session of users no longer in the file, or whose roles changed (a reload of the users file). */
  keepOnly(still: (user: string, roles: Role[]) => boolean): void {
    for (const [id, s] of this.sessions) if (!still(s.user, s.roles)) this.sessions.delete(id);
  }

  get size(): number {
    return this.sessions.size;
  }

  private sweep(nowMs: number): void {
    for (const [id, s] of this.sessions) if (s.expiresAtMs <= nowMs) this.sessions.delete(id);
  }
}

/** One attempt's place in the limiter: a failure from the moment it was taken. */
export interface LoginTicket {
  readonly atMs: number;
  readonly source: string;
}

/**
 * Failed logins allowed per minute: `perSource` from one address, `total` from all. An attempt
 * takes its place before its password is looked at (`reserve`) and counts as a failure from
 * then on; only a right password gives the place back (`succeeded`). Beyond either limit,
 * logins are refused unread (429) until the minute has passed: a password cannot be guessed
 * faster, and a burst of guesses costs at most the limit's worth of scrypt work, however many
 * arrive at once (counting after the scrypt let 113-196 of a burst reach it: issue #49).
 */
export class LoginLimiter {
  private readonly failures: LoginTicket[] = [];

  constructor(
    private readonly perSource = 5,
    private readonly total = 20,
    private readonly windowMs = 60_000,
  ) {}

  /** ms to wait before `source` may try again; 0 if it may try now. */
  waitMs(source: string, nowMs: number): number {
    this.expire(nowMs);
    let mine = 0;
    let first: LoginTicket | undefined;
    for (const f of this.failures) {
      if (f.source !== source) continue;
      first ??= f;
      mine++;
    }
    if (first !== undefined && mine >= this.perSource) return first.atMs + this.windowMs - nowMs;
    if (this.failures.length >= this.total) return this.failures[0].atMs + this.windowMs - nowMs;
    return 0;
  }

  /** Takes a place for an attempt from `source`, or says how long to wait (ms) when there is none. */
  reserve(source: string, nowMs: number): { ticket: LoginTicket } | { waitMs: number } {
    const wait = this.waitMs(source, nowMs);
    if (wait > 0) return { waitMs: wait };
    const ticket = { atMs: nowMs, source };
    this.failures.push(ticket);
    return { ticket };
  }

  /** The attempt was right (or was never looked at): its place is given back. */
  release(ticket: LoginTicket): void {
    const i = this.failures.indexOf(ticket);
    if (i >= 0) this.failures.splice(i, 1);
  }

  failed(source: string, nowMs: number): void {
    this.expire(nowMs);
    this.failures.push({ atMs: nowMs, source });
  }

  private expire(nowMs: number): void {
    while (this.failures.length > 0 && this.failures[0].atMs + this.windowMs <= nowMs) this.failures.shift();
  }
}
