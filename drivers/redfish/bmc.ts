// One BMC of the Redfish client (driver.ts): its pinned HTTP pool and session, its poll loop, its
// EventService stream and its Controls.
//
// Quality, never a guess: a resource whose Status is not Enabled/OK, whose ReadingTime stopped
// moving, or that did not answer is a point of bad quality, not a value. A leak event is a
// pushed sample: it is published the moment it is parsed, which wakes the control tick as a
// changed Modbus leak sample does; a dropped stream is reopened with backoff and every leak
// detector re-read when it is back (in between they are polled, as they always are).
import { Backoff } from "../../lib/backoff.js";
import { monoMs } from "../../lib/clock.js";
import { PerSecond } from "../../lib/per-second.js";
import type { Point, Quality } from "../../lib/points.js";
import { CircuitBreaker } from "../breaker.js";
import type { RedfishDeviceConfig } from "./config.js";
import { BmcHttp, HttpFailure, type HttpAnswer } from "./http.js";
import { BmcSession } from "./bmc-session.js";
import { allowableOf, BmcControls } from "./bmc-controls.js";
import { BmcEvents } from "./bmc-events.js";
import type { EventListener } from "./event-listener.js";
import { errorCode, isObject, LEAK_VALUE, property, type OutputRuntime, type PointRuntime, type RedfishDeviceStats, type RedfishDriverOptions } from "./bmc-runtime.js";

/** One BMC: its pool, its session, its poll loop, its event stream and its outputs. */
export class Bmc {
  readonly name: string;
  readonly outputs = new Map<string, OutputRuntime>();
  private readonly points: PointRuntime[];
  private readonly http: BmcHttp;
  private readonly breaker: CircuitBreaker;
  private readonly events_: BmcEvents;
  private running = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private readonly abort = new AbortController();
  private readonly session: BmcSession;
  private readonly controls: BmcControls;
  private connected = false;
  private why = "not yet polled";
  private polls = 0;
  private failedPolls = 0;
  private events = 0;
  private eventsShed = 0;
  private readonly eventRate: PerSecond;
  private rereadQueued = false;

  constructor(
    private readonly c: RedfishDeviceConfig,
    private readonly o: RedfishDriverOptions,
    listener: EventListener | null = null,
  ) {
    this.name = c.name;
    this.points = c.points.map((p) => ({ id: `${c.name}.${p.name}`, c: p, readingTime: null, lastRaw: null, readingTimeSinceMs: 0, eventAtMs: -Infinity }));
    for (const p of c.outputs) {
      const id = `${c.name}.${p.name}`;
      this.outputs.set(id, {
        id,
        c: p,
        state: { id, value: null, written: null, writtenAtMs: null, quality: "disconnected", writes: 0, failures: 0 },
        verified: null,
        etag: null,
        writing: false,
        writeEndedMs: -Infinity,
        retryAtMs: 0,
        retry: new Backoff({ baseMs: Math.min(1000, c.pollMs), maxMs: 30_000 }),
        unverifiedSinceMs: null,
        why: "",
        allowable: null,
        clampedFrom: null,
      });
    }
    this.http = new BmcHttp(c);
    this.session = new BmcSession(c, this.http, o.env ?? process.env, (level, line) => this.o.onLog?.(level, line));
    this.controls = new BmcControls(this.session, (id, value, t, q, detail, unit) => this.publish(id, value, t, q, detail, unit), (line) => this.o.onLog?.("warn", line), () => this.running);
    this.eventRate = new PerSecond(c.events.maxEventsPerS);
    this.breaker = new CircuitBreaker(c.breaker.failures, { baseMs: c.breaker.openMs, maxMs: c.breaker.maxOpenMs }, monoMs);
    this.events_ = new BmcEvents(
      {
        name: c.name,
        c,
        session: this.session,
        http: this.http,
        signal: this.abort.signal,
        running: () => this.running,
        log: (level, line) => this.o.onLog?.(level, line),
        onEvent: (data) => this.onEvent(data),
        rereadLeaks: () => this.rereadLeaks(),
        leakPaths: () => [...new Set(this.points.filter((p) => p.c.kind === "leak").map((p) => p.c.path))],
      },
      listener,
    );
  }

  start(): void {
    this.running = true;
    void this.pollLoop();
    if (this.c.events.enabled && this.points.some((p) => p.c.kind === "leak")) void this.events_.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.pollTimer);
    this.abort.abort();
    await this.events_.stop();
    await this.session.end();
    await this.http.close();
  }

  stats(): RedfishDeviceStats {
    return {
      name: this.name,
      connected: this.connected,
      breaker: this.breaker.state,
      why: this.why,
      polls: this.polls,
      failedPolls: this.failedPolls,
      streamOpen: this.events_.streamOpen,
      events: this.events,
      eventsShed: this.eventsShed,
      streamReconnects: this.events_.streamReconnects,
      noStream: this.events_.noStream,
      subscription: this.events_.subscription,
      pushedEvents: this.events_.pushed,
      logins: this.session.logins,
    };
  }

  // ---- polling ----

  private async pollLoop(): Promise<void> {
    while (this.running) {
      const t0 = monoMs();
      await this.poll();
      if (!this.running) return;
      await new Promise<void>((r) => (this.pollTimer = setTimeout(r, Math.max(0, this.c.pollMs - (monoMs() - t0)))));
    }
  }

  private async poll(): Promise<void> {
    if (!this.breaker.allow()) {
      this.publishAll("offline", `circuit breaker open: ${this.why}`);
      return;
    }
    this.polls++;
    const paths = [...new Set([...this.points.map((p) => p.c.path), ...[...this.outputs.values()].map((o) => o.c.path)])];
    const answers = await Promise.all(paths.map((path) => this.read(path)));
    if (!this.running) return;
    // the BMC is down when nothing answered; a resource that failed alone is its points' business
    if (answers.every((a) => a.failure !== null)) {
      this.failedPolls++;
      this.breaker.failure();
    } else this.breaker.success();
  }

  /** Reads one resource and publishes everything configured on it. */
  private async read(path: string): Promise<{ failure: string | null }> {
    const startedMs = monoMs();
    let answer: HttpAnswer;
    try {
      answer = await this.session.request("GET", path);
    } catch (err) {
      const f = err instanceof HttpFailure ? err : new HttpFailure("disconnected", (err as Error).message);
      this.connected = false;
      this.why = f.message;
      this.publishPath(path, startedMs, f.kind, f.message);
      return { failure: f.message };
    }
    const nowMs = monoMs();
    if (answer.status === 401 || answer.status === 403) {
      this.connected = false;
      this.why = `credentials refused (HTTP ${answer.status}${errorCode(answer)})`;
      this.publishPath(path, startedMs, "exception", this.why);
      return { failure: this.why };
    }
    this.connected = true;
    if (answer.status !== 200) {
      const why = `HTTP ${answer.status}${errorCode(answer)}`;
      this.why = `answering ${why}`;
      this.publishPath(path, startedMs, answer.status === 404 ? "config" : "exception", `${path}: ${why}`);
      return { failure: why };
    }
    this.why = "";
    const body = isObject(answer.json) ? answer.json : null;
    for (const p of this.points) {
      if (p.c.path !== path || p.eventAtMs > startedMs) continue;
      if (body === null) this.publish(p.id, NaN, nowMs, "corrupt", "not a JSON object", p.c.unit);
      else this.publishResource(p, body, nowMs);
    }
    for (const o of this.outputs.values()) {
      if (o.c.path !== path || body === null || o.writing || startedMs <= o.writeEndedMs) continue;
      const etag = answer.headers.etag;
      o.etag = typeof etag === "string" ? etag : typeof body["@odata.etag"] === "string" ? body["@odata.etag"] : null;
      o.allowable = allowableOf(body, o.c.property);
      this.controls.checkHeld(o, body[o.c.property]);
    }
    return { failure: null };
  }

  private publishResource(p: PointRuntime, body: Record<string, unknown>, nowMs: number): void {
    const status = isObject(body.Status) ? body.Status : null;
    const state = status?.State;
    if (state !== undefined && state !== "Enabled") return this.publish(p.id, NaN, nowMs, "invalid", `Status.State ${JSON.stringify(state)}`, p.c.unit);
    if (p.c.kind === "leak") {
      const v = LEAK_VALUE[String(body.DetectorState)];
      if (v === undefined) return this.publish(p.id, NaN, nowMs, "invalid", `DetectorState ${String(body.DetectorState)}`, p.c.unit);
      return this.publish(p.id, v, nowMs, "good", undefined, p.c.unit);
    }
    const health = status?.Health;
    if (health !== undefined && health !== "OK") return this.publish(p.id, NaN, nowMs, "invalid", `Status.Health ${JSON.stringify(health)}`, p.c.unit);
    const raw = property(body, p.c.property);
    if (typeof raw !== "number" || !Number.isFinite(raw)) return this.publish(p.id, NaN, nowMs, "invalid", `${p.c.property} is ${raw === undefined ? "absent" : JSON.stringify(raw)}`, p.c.unit);
    // a reading whose ReadingTime stopped moving is stale, whatever its Health says: compared
    // with itself, so the BMC's clock offset cannot fail a good reading. A value that moves is
    // live all the same: some BMCs never update a sensor's ReadingTime (found on DMTF's mockup
    // server), and a reading that changes was read
    const rt = typeof body.ReadingTime === "string" ? body.ReadingTime : null;
    if (rt !== p.readingTime || raw !== p.lastRaw) {
      p.readingTime = rt;
      p.lastRaw = raw;
      p.readingTimeSinceMs = nowMs;
    } else if (rt !== null && nowMs - p.readingTimeSinceMs >= this.c.staleMs) {
      return this.publish(p.id, raw * p.c.scale + p.c.offset, nowMs, "stale", `ReadingTime ${rt} and the value have not moved for ${Math.round((nowMs - p.readingTimeSinceMs) / 1000)} s`, p.c.unit);
    }
    this.publish(p.id, raw * p.c.scale + p.c.offset, nowMs, "good", undefined, p.c.unit);
  }

  private publish(id: string, value: number, sourceTimeMs: number, quality: Quality, detail: string | undefined, unit: string | undefined): void {
    const p: Point = { id, value, sourceTimeMs, quality };
    if (unit !== undefined) p.unit = unit;
    if (detail !== undefined) p.detail = detail;
    this.o.points.publish(p);
  }

  private publishPath(path: string, startedMs: number, quality: Quality, detail: string): void {
    const nowMs = monoMs();
    for (const p of this.points) if (p.c.path === path && p.eventAtMs <= startedMs) this.publish(p.id, NaN, nowMs, quality, detail, p.c.unit);
  }

  private publishAll(quality: Quality, detail: string): void {
    const nowMs = monoMs();
    for (const p of this.points) this.publish(p.id, NaN, nowMs, quality, detail, p.c.unit);
  }

  private onEvent(data: string): void {
    this.events++;
    const nowMs = monoMs();
    if (!this.eventRate.take()) {
      // a flood is not parsed; what it may have said is read from the detectors instead
      this.eventsShed++;
      this.rereadLeaks();
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(data);
    } catch {
      return this.rereadLeaks();
    }
    const events = isObject(body) && Array.isArray(body.Events) ? body.Events : [];
    for (const e of events.slice(0, 64)) {
      if (!isObject(e)) continue;
      const origin = isObject(e.OriginOfCondition) ? e.OriginOfCondition["@odata.id"] : undefined;
      if (typeof origin !== "string") continue;
      let ours = false;
      for (const p of this.points) {
        if (p.c.path !== origin) continue;
        ours = true;
        const v = p.c.kind === "leak" ? LEAK_VALUE[String(e.MessageSeverity)] : undefined;
        if (v !== undefined) {
          // the pushed sample: published now, and a poll already in flight is older news
          p.eventAtMs = nowMs;
          this.publish(p.id, v, nowMs, "good", undefined, p.c.unit);
        }
      }
      // what the event said is confirmed (or, for a threshold event, learnt) from the resource;
      // a resource nobody configured is not read, whatever an event names
      if (ours) void this.read(origin);
    }
  }

  /** Reads every leak detector once, soon; several asks in a row make one read. */
  private rereadLeaks(): void {
    if (this.rereadQueued || !this.running) return;
    this.rereadQueued = true;
    setImmediate(() => {
      this.rereadQueued = false;
      const paths = new Set(this.points.filter((p) => p.c.kind === "leak").map((p) => p.c.path));
      for (const path of paths) void this.read(path);
    });
  }

  setOutput(o: OutputRuntime, value: number): void {
    this.controls.setOutput(o, value);
  }
}

