// The limit on failed logins, shared by the HMI and the Redfish service's Basic auth. An
// attempt takes its place before its password is looked at (`reserve`) and counts as a failure
// from then on; only a right password gives the place back (`succeeded`), or one never looked at
// (`release`). Beyond a limit, logins are refused unread (429) until the window has passed: a
// password cannot be guessed faster, and a burst of guesses costs at most the limits' worth of
// scrypt work, however many arrive at once (counting after the scrypt let 113-196 of a burst
// reach it: issue #49).
//
// Per address, per user and in all (issue #54). The ceiling in all used to lock out everyone:
// 20 failures a minute from anywhere, and no one could log in. So a user with the right
// password from a known address is held only by the failures of that user from that address:
// - a known address is one this user logged in from since the start, or one configured
//   (`hmi.knownAddresses`: the operators' workstations);
// - from anywhere else, the limits per address, per user and in all hold too.
// A guesser elsewhere, or guessing other names from the same shared laptop, cannot lock the
// user out; guessing the user's own password from the user's own address is held as before.
import { BlockList, isIP, isIPv6 } from "node:net";

export interface LoginLimits {
  /** failures a window from one address (and from one address for one user, known or not) */
  perSource: number;
  /** failures a window for one user name, from addresses not known for it */
  perUser: number;
  /** failures a window in all, from addresses not known for the user */
  total: number;
  windowMs: number;
}

export const DEFAULT_LOGIN_LIMITS: LoginLimits = { perSource: 5, perUser: 5, total: 20, windowMs: 60_000 };

/** One attempt's place in the limiter: a failure from the moment it was taken. */
export interface LoginTicket {
  readonly atMs: number;
  readonly source: string;
  readonly user: string;
}

/** (user, address) pairs remembered as known: past it the oldest goes */
const MAX_KNOWN = 1024;

export class LoginLimiter {
  private readonly failures: LoginTicket[] = [];
  /** `user\0address` of each right login since the start, oldest first */
  private readonly known = new Set<string>();
  private readonly configured = new BlockList();

  constructor(
    private readonly limits: LoginLimits = DEFAULT_LOGIN_LIMITS,
    /** addresses or CIDR blocks known for every user (`10.0.0.0/24`, `::1`) */
    knownAddresses: readonly string[] = [],
  ) {
    for (const a of knownAddresses) {
      const [net, bits] = a.split("/");
      const type = isIPv6(net) ? "ipv6" : "ipv4";
      const most = type === "ipv6" ? 128 : 32;
      if (isIP(net) === 0 || (bits !== undefined && !(Number(bits) >= 0 && Number(bits) <= most))) throw new Error(`known address "${a}" is not an IP address or CIDR block`);
      if (bits === undefined) this.configured.addAddress(net, type);
      else this.configured.addSubnet(net, Number(bits), type);
    }
  }

  /** Whether `user` has logged in from `source` since the start, or `source` is configured as known. */
  isKnown(source: string, user: string): boolean {
    if (this.known.has(`${user}\0${source}`)) return true;
    const plain = source.startsWith("::ffff:") ? source.slice(7) : source; // IPv4 on a dual-stack socket
    try {
      return this.configured.check(plain, isIPv6(plain) ? "ipv6" : "ipv4");
    } catch {
      return false; // not an address ("unknown")
    }
  }

  /** ms to wait before `source` may try again as `user`; 0 if it may now. */
  waitMs(source: string, user: string, nowMs: number): number {
    this.expire(nowMs);
    const { perSource, perUser, total, windowMs } = this.limits;
    /** when the oldest failure `matching` leaves the window, if `limit` of them are in it; else 0 */
    const until = (matching: (f: LoginTicket) => boolean, limit: number): number => {
      let n = 0;
      let first: LoginTicket | undefined;
      for (const f of this.failures) {
        if (!matching(f)) continue;
        first ??= f;
        if (++n >= limit) return first.atMs + windowMs - nowMs;
      }
      return 0;
    };
    const pair = until((f) => f.source === source && f.user === user, perSource);
    if (pair > 0 || this.isKnown(source, user)) return pair;
    return Math.max(
      until((f) => f.source === source, perSource),
      until((f) => f.user === user, perUser),
      until(() => true, total),
    );
  }

  /** Takes a place for an attempt from `source` as `user`, or says how long to wait (ms) when there is none. */
  reserve(source: string, user: string, nowMs: number): { ticket: LoginTicket } | { waitMs: number } {
    const wait = this.waitMs(source, user, nowMs);
    if (wait > 0) return { waitMs: wait };
    const ticket = { atMs: nowMs, source, user };
    this.failures.push(ticket);
    return { ticket };
  }

  /** The attempt was never looked at: its place is given back, and it was no failure. */
  release(ticket: LoginTicket): void {
    const i = this.failures.indexOf(ticket);
    if (i >= 0) this.failures.splice(i, 1);
  }

  /** The password was right: the place is given back, and the address is known for the user from now on. */
  succeeded(ticket: LoginTicket): void {
    this.release(ticket);
    const key = `${ticket.user}\0${ticket.source}`;
    this.known.delete(key); // to the end: the most recent
    this.known.add(key);
    if (this.known.size > MAX_KNOWN) this.known.delete(this.known.values().next().value as string);
  }

  private expire(nowMs: number): void {
    while (this.failures.length > 0 && this.failures[0].atMs + this.limits.windowMs <= nowMs) this.failures.shift();
  }
}
