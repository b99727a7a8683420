// One BMC's leak events, as the BMC offers them (issue #50): its EventService's Server-Sent
// Events stream where it has one; else, with a pod listener configured (event-listener.ts), an
// EventDestination subscription that has the BMC push each event to the pod; else none, and its
// detectors are only polled (as they always are beside the events). Said once, not at every
// look: a BMC without SSE stays without it, and is asked again quietly every events.recheckS,
// when its subscription is also checked to be still there (a BMC that restarted may have lost
// it). The subscription is deleted at the stop.
import { randomBytes } from "node:crypto";
import { createParser } from "eventsource-parser";
import { setTimeout as sleep } from "node:timers/promises";
import { Backoff } from "../../lib/backoff.js";
import type { RedfishDeviceConfig } from "./config.js";
import type { BmcHttp } from "./http.js";
import type { BmcSession } from "./bmc-session.js";
import { errorCode, isObject } from "./bmc-runtime.js";
import { TOKEN_HEADER, type EventListener } from "./event-listener.js";

const EVENT_SERVICE = "/redfish/v1/EventService";

/** What the events need of their BMC. */
export interface EventHost {
  readonly name: string;
  readonly c: RedfishDeviceConfig;
  readonly session: BmcSession;
  readonly http: BmcHttp;
  readonly signal: AbortSignal;
  running(): boolean;
  log(level: "info" | "warn", line: string): void;
  /** an event's body (SSE data or a pushed POST's), bounded, not yet parsed */
  onEvent(data: string): void;
  /** every leak detector read soon: what changed while no event could arrive */
  rereadLeaks(): void;
  /** the leak detectors' resources, which a subscription asks for */
  leakPaths(): string[];
}

export class BmcEvents {
  streamOpen = false;
  streamReconnects = 0;
  /** why the BMC has no event stream, once found so; null: it has one, or not yet known */
  noStream: string | null = null;
  /** the BMC's subscription pushing to the pod (its URI), or null */
  subscription: string | null = null;
  /** events the BMC pushed to the pod's listener */
  pushed = 0;
  private readonly backoff: Backoff;
  private pushProblem: string | null = null;

  constructor(
    private readonly h: EventHost,
    private readonly listener: EventListener | null,
  ) {
    this.backoff = new Backoff(h.c.events.reconnect);
  }

  async run(): Promise<void> {
    const h = this.h;
    while (h.running()) {
      let wait = 0;
      try {
        await this.streamOnce();
      } catch (err) {
        if (!h.running()) return;
        if (err instanceof NoEventStream) {
          const push = this.listener !== null && h.c.events.push;
          if (this.noStream === null) h.log("warn", `${h.name}: no Server-Sent Events (${err.message}): ${push ? "its leak events are to be pushed to the pod (an EventDestination subscription), and" : "its leak detectors are"} polled every ${h.c.pollMs} ms; asked again every ${h.c.events.recheckS} s`);
          this.noStream = err.message;
          if (push) await this.keepSubscription();
          wait = h.c.events.recheckS * 1000;
        } else h.log("warn", `${h.name}: event stream ${this.streamOpen ? "dropped" : "not opened"}: ${(err as Error).message}`);
      }
      if (this.streamOpen) this.streamReconnects++;
      this.streamOpen = false;
      if (!h.running()) return;
      await sleep(wait || this.backoff.next(), undefined, { signal: h.signal }).catch(() => undefined);
    }
  }

  /** Deletes the subscription, so that the BMC does not push to a pod that is gone. */
  async stop(): Promise<void> {
    this.listener?.remove(this.h.name);
    const sub = this.subscription;
    this.subscription = null;
    if (sub !== null) await this.h.session.request("DELETE", sub).catch(() => undefined);
  }

  /** The stream's URI: the configured one, else the EventService's ServerSentEventUri. */
  private async streamPath(): Promise<string> {
    const configured = this.h.c.events.path;
    if (configured !== undefined) return configured;
    const r = await this.h.session.request("GET", EVENT_SERVICE);
    if (r.status === 404) throw new NoEventStream("no EventService");
    if (r.status !== 200 || !isObject(r.json)) throw new Error(`EventService: HTTP ${r.status}${errorCode(r)}`);
    const uri = r.json.ServerSentEventUri;
    if (typeof uri !== "string" || !uri.startsWith("/redfish/v1/") || uri.length > 512) throw new NoEventStream(uri === undefined ? "the EventService has no ServerSentEventUri" : "its ServerSentEventUri is not a path under /redfish/v1/");
    return uri;
  }

  private async streamOnce(): Promise<void> {
    const h = this.h;
    const ev = h.c.events;
    const path = await this.streamPath();
    const res = await h.http.stream(path, await h.session.headers(), h.signal);
    if (res.statusCode === 401) h.session.forget();
    if (res.statusCode !== 200) {
      res.body.destroy();
      if (res.statusCode === 404 || res.statusCode === 405 || res.statusCode === 501) throw new NoEventStream(`HTTP ${res.statusCode} at ${path}`);
      throw new Error(`HTTP ${res.statusCode}`);
    }
    if (this.noStream !== null) h.log("info", `${h.name}: Server-Sent Events found at ${path}: leak events are pushed again`);
    this.noStream = null;
    // the stream carries the events now: a subscription beside it would send each twice
    await this.stop();
    this.streamOpen = true;
    this.backoff.reset();
    // anything that changed while the stream was down is read now, not at the next poll
    h.rereadLeaks();
    let pending = 0;
    const parser = createParser({
      onEvent: (e) => {
        pending = 0;
        h.onEvent(e.data);
      },
      onComment: () => {
        pending = 0;
      },
    });
    const text = new TextDecoder();
    try {
      for await (const chunk of res.body) {
        // bounded before it is parsed: bytes since the last whole event
        pending += (chunk as Buffer).length;
        if (pending > ev.maxEventBytes) throw new Error(`an event over maxEventBytes (${ev.maxEventBytes})`);
        parser.feed(text.decode(chunk as Buffer, { stream: true }));
      }
    } finally {
      res.body.destroy();
    }
    throw new Error("the BMC ended the stream");
  }

  /** A subscription in place: the one held, if the BMC still has it, else a new one. Problems said once each. */
  private async keepSubscription(): Promise<void> {
    const h = this.h;
    try {
      if (this.subscription !== null) {
        const r = await h.session.request("GET", this.subscription);
        if (r.status !== 404) return; // there, or a passing fault: looked at again at the next recheck
        h.log("warn", `${h.name}: its subscription ${this.subscription} is gone (the BMC restarted?): subscribing again`);
        this.subscription = null;
      }
      await this.subscribe();
      this.pushProblem = null;
    } catch (err) {
      const why = (err as Error).message;
      if (why !== this.pushProblem) h.log("warn", `${h.name}: cannot subscribe to its leak events (${why}): its detectors are polled; tried again every ${h.c.events.recheckS} s`);
      this.pushProblem = why;
    }
  }

  private async subscribe(): Promise<void> {
    const h = this.h;
    const listener = this.listener!;
    const es = await h.session.request("GET", EVENT_SERVICE);
    const subs = isObject(es.json) && isObject(es.json.Subscriptions) ? es.json.Subscriptions["@odata.id"] : undefined;
    if (typeof subs !== "string" || !subs.startsWith("/redfish/v1/")) throw new Error("its EventService has no Subscriptions");
    // the token travels only in the header the BMC is asked to send (HttpHeaders, which a BMC
    // never gives back on a GET); the listener refuses an event without it before reading it
    const token = randomBytes(24).toString("base64url");
    listener.add(h.name, {
      token,
      maxBytes: h.c.events.maxEventBytes,
      maxPerS: h.c.events.maxEventsPerS,
      deliver: (body) => {
        this.pushed++;
        h.onEvent(body);
      },
    });
    const r = await h.session.request("POST", subs, {}, {
      Destination: listener.urlFor(h.name),
      Protocol: "Redfish",
      SubscriptionType: "RedfishEvent",
      EventFormatType: "Event",
      Context: `podwarden ${h.name}`,
      HttpHeaders: [{ [headerName(TOKEN_HEADER)]: token }],
      OriginResources: h.leakPaths().map((p) => ({ "@odata.id": p })),
    });
    const location = r.headers.location;
    const uri = typeof location === "string" ? new URL(location, "http://bmc").pathname : isObject(r.json) && typeof r.json["@odata.id"] === "string" ? r.json["@odata.id"] : null;
    if (r.status < 200 || r.status > 204 || uri === null) {
      listener.remove(h.name);
      throw new Error(`the subscription was refused: HTTP ${r.status}${errorCode(r)}`);
    }
    this.subscription = uri;
    h.log("info", `${h.name}: subscribed (${uri}): its leak events are pushed to ${listener.urlFor(h.name)}`);
    // what changed before the subscription took is read now
    h.rereadLeaks();
  }
}

/** X-Podwarden-Token, as a header is written in a subscription. */
const headerName = (lower: string): string => lower.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => `${dash}${c.toUpperCase()}`);

/** The BMC serves no event stream: not a fault to retry at once, a way of working to poll around. */
export class NoEventStream extends Error {}
