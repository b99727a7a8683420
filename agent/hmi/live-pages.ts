// The HMI's live pages (`GET /api/live`, Server-Sent Events): who may hold one, and when one is
// dropped. Issue #54 found one unauthenticated client holding all 8 slots indefinitely, and a
// page that stopped reading never dropped on loopback, where the kernel's socket buffers take
// megabytes before Node buffers a byte.
// - Slots: `hmi.maxClients` in all, `hmi.maxClientsPerAddress` from one address, and
//   `hmi.maxClientsPerUser` for one logged-in user. With a users file, pages without a login
//   take at most half the slots (rounded up): a logged-in operator finds one free whatever
//   anonymous viewers hold.
// - A page's stream lasts `hmi.livePageS` (60 s), then ends with a short `retry:`, and the
//   browser's EventSource connects again within a second (the page stays live: it marks itself
//   stale only after 2 s without a view). A slot is held for that long at most, however the
//   client behaves, and each new one meets the caps again. This is what frees a slot on
//   loopback: there a client that stops reading leaves megabytes in the kernel's socket buffers
//   (a paused socket took over 120 s at the demo's 5 Hz without one byte held by Node).
// - Slow readers: a page is dropped before its time once Node holds more than
//   MAX_BUFFERED_BYTES for it, or once a write to it has waited for the socket to drain for
//   SLOW_READER_MS.
import type { IncomingMessage, ServerResponse } from "node:http";

/** a live page further behind than this is dropped: ~60 views of the 8-rack pod */
export const MAX_BUFFERED_BYTES = 256 * 1024;
/** a live page whose socket has not drained for this long is dropped */
export const SLOW_READER_MS = 3000;

export interface LivePageLimits {
  maxClients: number;
  maxClientsPerAddress: number;
  maxClientsPerUser: number;
  /** how long one page's stream lasts before the browser is asked to connect again, ms */
  lifetimeMs: number;
  /** logins are possible (a users file): pages without one take at most half the slots */
  logins: boolean;
}

/** why a page was refused: the cap it met (the metric's `reason` label) */
export type PageRefusal = "max-clients" | "per-address" | "per-user" | "no-login";

interface Page {
  address: string;
  user: string | null;
  /** when a write to it first found the socket not drained, since it last was (ms), or null */
  stuckSinceMs: number | null;
}

export class LivePages {
  private readonly pages = new Map<ServerResponse, Page>();
  /** pages refused, by the cap they met */
  readonly refused: Record<PageRefusal, number> = { "max-clients": 0, "per-address": 0, "per-user": 0, "no-login": 0 };
  dropped = 0;
  /** pages whose stream reached its lifetime (the browser connected again) */
  ended = 0;

  constructor(private readonly limits: LivePageLimits) {}

  get size(): number {
    return this.pages.size;
  }

  /**
   * Why a page from `address` for `user` (null: not logged in) cannot have a slot now (counted),
   * or null if it can.
   */
  refusal(address: string, user: string | null): string | null {
    const r = this.cap(address, user);
    if (r === null) return null;
    this.refused[r[0]]++;
    return r[1];
  }

  private cap(address: string, user: string | null): [PageRefusal, string] | null {
    const { maxClients, maxClientsPerAddress, maxClientsPerUser, logins } = this.limits;
    let fromAddress = 0;
    let ofUser = 0;
    let anonymous = 0;
    for (const p of this.pages.values()) {
      if (p.address === address) fromAddress++;
      if (user !== null && p.user === user) ofUser++;
      if (p.user === null) anonymous++;
    }
    if (this.pages.size >= maxClients) return ["max-clients", `${maxClients} pages are open already (hmi.maxClients)`];
    if (fromAddress >= maxClientsPerAddress) return ["per-address", `${maxClientsPerAddress} pages are open from this address already (hmi.maxClientsPerAddress)`];
    if (user !== null && ofUser >= maxClientsPerUser) return ["per-user", `${maxClientsPerUser} pages are open for ${user} already (hmi.maxClientsPerUser)`];
    const anonymousMax = Math.ceil(maxClients / 2);
    if (user === null && logins && anonymous >= anonymousMax) return ["no-login", `${anonymousMax} pages without a login are open already: log in for one of the others`];
    return null;
  }

  /** Takes a slot for `res` (refusal() said it may); it is given back when the page closes. */
  add(req: IncomingMessage, res: ServerResponse, user: string | null, onEmpty: () => void): void {
    this.pages.set(res, { address: req.socket.remoteAddress ?? "unknown", user, stuckSinceMs: null });
    const lifetime = setTimeout(() => {
      this.ended++;
      res.end("retry: 250\n\n"); // the browser connects again at once, and meets the caps again
    }, this.limits.lifetimeMs);
    lifetime.unref();
    res.once("close", () => {
      clearTimeout(lifetime);
      this.pages.delete(res);
      if (this.pages.size === 0) onEmpty();
    });
  }

  /** Writes `frame` to every page; a page that has stopped reading is dropped. */
  broadcast(frame: string, nowMs: number): void {
    for (const [res, p] of this.pages) {
      if (res.writableNeedDrain) p.stuckSinceMs ??= nowMs;
      else p.stuckSinceMs = null;
      if (res.writableLength > MAX_BUFFERED_BYTES || (p.stuckSinceMs !== null && nowMs - p.stuckSinceMs >= SLOW_READER_MS)) {
        this.dropped++;
        this.pages.delete(res);
        res.destroy();
        continue;
      }
      res.write(frame);
    }
  }

  /** Ends every page (the server is closing). */
  endAll(): void {
    for (const res of this.pages.keys()) res.end();
    this.pages.clear();
  }
}
