// Who is logged in to the HMI: sessions with their CSRF tokens (who may try to log in is
// login-limiter.ts's). In memory only: a restart logs everyone out, which is the safe direction.
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
