// Where BMCs without Server-Sent Events push their leak events: the pod's side of a Redfish
// EventDestination subscription (DSP0266, "Eventing"). One HTTP listener for every BMC, each at
// a path of its own, each subscription with a token of its own.
//
// An event is field input, and bounded as such before it is parsed: the connections open at
// once and the time a client may take (lib/http-server.ts), the body's bytes (the BMC's
// events.maxEventBytes), the events a second (its events.maxEventsPerS, counted before the body
// is read), and its token in the X-Podwarden-Token header the subscription asked for (compared
// in constant time, before a byte of the body is looked at). Nothing here moves an actuator: an
// event is a pushed sample of a leak detector, which the BMC then confirms on a read.
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { boundedServer, closeHttp, listenHttp, readBody, type BoundedServer } from "../../lib/http-server.js";
import { PerSecond } from "../../lib/per-second.js";
import type { RedfishListenerConfig } from "./config.js";

/** The header the subscription asks the BMC to send with each event (EventDestination.HttpHeaders). */
export const TOKEN_HEADER = "x-podwarden-token";
const PATH_PREFIX = "/podwarden/events/";
const MAX_HEADER_BYTES = 8192;

/** One BMC's destination: its token, its bounds and where its events go. */
export interface Destination {
  token: string;
  maxBytes: number;
  maxPerS: number;
  /** the event's body, bounded and from the holder of the token; not yet parsed */
  deliver(body: string): void;
}

export interface ListenerCounts {
  /** events taken and delivered */
  delivered: number;
  /** refused before their body was read: no or a wrong token, an unknown path, over the rate */
  refused: number;
  /** refused for their size, past maxBytes */
  oversized: number;
}

export class EventListener {
  private server: BoundedServer | null = null;
  private readonly destinations = new Map<string, Destination & { rate: PerSecond }>();
  readonly counts: ListenerCounts = { delivered: 0, refused: 0, oversized: 0 };
  private base = "";

  constructor(private readonly c: RedfishListenerConfig) {}

  /** Listens; resolves with the base URL the BMCs are told (config's url, else http://host:port). */
  async listen(): Promise<string> {
    const server = boundedServer({ maxHeaderBytes: MAX_HEADER_BYTES, tls: this.c.tls, limits: { maxConnections: this.c.maxConnections, maxPerAddress: this.c.maxConnections } }, (req, res) => this.handle(req, res));
    this.server = server;
    const port = await listenHttp(server, { host: this.c.host, port: this.c.port });
    this.base = this.c.url ?? `${this.c.tls === undefined ? "http" : "https"}://${this.c.host.includes(":") ? `[${this.c.host}]` : this.c.host}:${port}`;
    return this.base;
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    await closeHttp(s);
  }

  /** Where BMC `name`'s events are to be pushed (after listen()). */
  urlFor(name: string): string {
    return `${this.base}${PATH_PREFIX}${encodeURIComponent(name)}`;
  }

  add(name: string, d: Destination): void {
    this.destinations.set(name, { ...d, rate: new PerSecond(d.maxPerS) });
  }

  remove(name: string): void {
    this.destinations.delete(name);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const answer = (status: number): void => {
      res.writeHead(status, { "content-length": 0, connection: status === 204 ? "keep-alive" : "close" });
      res.end();
    };
    const url = req.url ?? "";
    const d = url.startsWith(PATH_PREFIX) && url.length < 256 ? this.destinations.get(decoded(url.slice(PATH_PREFIX.length))) : undefined;
    if (d === undefined || req.method !== "POST") {
      this.counts.refused++;
      return answer(d === undefined ? 404 : 405);
    }
    const token = req.headers[TOKEN_HEADER];
    if (typeof token !== "string" || !sameToken(token, d.token)) {
      this.counts.refused++;
      return answer(401);
    }
    if (!d.rate.take()) {
      // over the rate: not read; the BMC retries or the detectors' polls carry it
      this.counts.refused++;
      return answer(429);
    }
    void readBody(req, d.maxBytes).then(
      (body) => {
        if (body === null) {
          this.counts.oversized++;
          return answer(413);
        }
        this.counts.delivered++;
        answer(204);
        d.deliver(body.toString("utf8"));
      },
      () => req.destroy(),
    );
  }
}

function sameToken(got: string, want: string): boolean {
  const a = Buffer.from(got);
  const b = Buffer.from(want);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A path segment decoded, or "" where it is not valid percent-encoding (a malformed one must not throw in the handler). */
function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return "";
  }
}
