// One BMC of the Redfish client (driver.ts): its pinned HTTP pool and session, its poll loop, its
// EventService stream and its Controls.
//
// Quality, never a guess: a resource whose Status is not Enabled/OK, whose ReadingTime stopped
// moving, or that did not answer is a point of bad quality, not a value. A leak event is a
// pushed sample: it is published the moment it is parsed, which wakes the control tick as a
// changed Modbus leak sample does; a dropped stream is reopened with backoff and every leak
// detector re-read when it is back (in between they are polled, as they always are).
import { createParser } from "eventsource-parser";
import { readFileSync } from "node:fs";
import { Backoff } from "../../lib/backoff.js";
import { monoMs } from "../../lib/clock.js";
import type { Point, Quality } from "../../lib/points.js";
import { CircuitBreaker } from "../breaker.js";
import type { RedfishDeviceConfig } from "./config.js";
import { BmcHttp, HttpFailure, type HttpAnswer } from "./http.js";
import { errorCode, isObject, LEAK_VALUE, property, type OutputRuntime, type PointRuntime, type RedfishDeviceStats, type RedfishDriverOptions } from "./bmc-runtime.js";

/** One BMC: its pool, its session, its poll loop, its event stream and its outputs. */
export class Bmc {
  readonly name: string;
  readonly outputs = new Map<string, OutputRuntime>();
  private readonly points: PointRuntime[];
  private readonly http: BmcHttp;
  private readonly breaker: CircuitBreaker;
  private readonly streamBackoff: Backoff;
  private running = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private readonly abort = new AbortController();
  private token: string | null = null;
  private sessionUri: string | null = null;
  private login_: Promise<void> | null = null;
  private connected = false;
  private why = "not yet polled";
  private polls = 0;
  private failedPolls = 0;
  private streamOpen = false;
  private events = 0;
  private eventsShed = 0;
  private streamReconnects = 0;
  private logins = 0;
  private eventWindowStartMs = 0;
  private eventWindowCount = 0;
  private rereadQueued = false;

  constructor(
    private readonly c: RedfishDeviceConfig,
    private readonly o: RedfishDriverOptions,
  ) {
    this.name = c.name;
    this.points = c.points.map((p) => ({ id: `${c.name}.${p.name}`, c: p, readingTime: null, readingTimeSinceMs: 0, eventAtMs: -Infinity }));
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
      });
    }
    this.http = new BmcHttp(c);
    this.breaker = new CircuitBreaker(c.breaker.failures, { baseMs: c.breaker.openMs, maxMs: c.breaker.maxOpenMs }, monoMs);
    this.streamBackoff = new Backoff(c.events.reconnect);
  }

  start(): void {
    this.running = true;
    void this.pollLoop();
    if (this.c.events.enabled && this.points.some((p) => p.c.kind === "leak")) void this.streamLoop();
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.pollTimer);
    this.abort.abort();
    // a session left open counts against the BMC's session limit until it times out
    if (this.sessionUri !== null && this.token !== null) await this.http.request("DELETE", this.sessionUri, { "x-auth-token": this.token }).catch(() => undefined);
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
      streamOpen: this.streamOpen,
      events: this.events,
      eventsShed: this.eventsShed,
      streamReconnects: this.streamReconnects,
      logins: this.logins,
    };
  }

  // ---- authentication ----

  private password(): string {
    const a = this.c.auth;
    if (a.passwordEnv !== undefined) {
      const v = (this.o.env ?? process.env)[a.passwordEnv];
      if (v === undefined || v === "") throw new HttpFailure("disconnected", `no password: environment variable ${a.passwordEnv} is not set`);
      return v;
    }
    if (a.passwordFile !== undefined) {
      try {
        return readFileSync(a.passwordFile, "utf8").slice(0, 1024).split("\n")[0].trim();
      } catch (err) {
        throw new HttpFailure("disconnected", `no password: ${(err as Error).message}`);
      }
    }
    throw new HttpFailure("disconnected", "no password source configured");
  }

  private async authHeaders(): Promise<Record<string, string>> {
    const a = this.c.auth;
    if (a.mode === "basic") return { authorization: `Basic ${Buffer.from(`${a.user}:${this.password()}`).toString("base64")}` };
    if (this.token === null) {
      // one login at a time, however many requests are waiting for it
      this.login_ ??= this.login().finally(() => (this.login_ = null));
      await this.login_;
    }
    return this.token === null ? {} : { "x-auth-token": this.token };
  }

  private async login(): Promise<void> {
    const r = await this.http.request("POST", "/redfish/v1/SessionService/Sessions", {}, { UserName: this.c.auth.user, Password: this.password() });
    const token = r.headers["x-auth-token"];
    if (r.status !== 201 && r.status !== 200) throw new HttpFailure("disconnected", `login refused: HTTP ${r.status}${errorCode(r)}`);
    if (typeof token !== "string" || token.length === 0 || token.length > 512) throw new HttpFailure("corrupt", "login answered without an X-Auth-Token");
    this.token = token;
    const loc = r.headers.location;
    this.sessionUri = typeof loc === "string" && loc.startsWith("/redfish/v1/") ? loc : null;
    this.logins++;
  }

  /** A request with our credentials; a session the BMC forgot (401) is renewed once. */
  private async request(method: "GET" | "PATCH", path: string, headers: Record<string, string> = {}, body?: unknown): Promise<HttpAnswer> {
    let r = await this.http.request(method, path, { ...(await this.authHeaders()), ...headers }, body);
    if (r.status === 401 && this.c.auth.mode === "session" && this.token !== null) {
      this.token = null;
      r = await this.http.request(method, path, { ...(await this.authHeaders()), ...headers }, body);
    }
    return r;
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
      answer = await this.request("GET", path);
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
      this.checkHeld(o, body[o.c.property]);
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
    // with itself, so the BMC's clock offset cannot fail a good reading
    const rt = typeof body.ReadingTime === "string" ? body.ReadingTime : null;
    if (rt !== p.readingTime) {
      p.readingTime = rt;
      p.readingTimeSinceMs = nowMs;
    } else if (rt !== null && nowMs - p.readingTimeSinceMs >= this.c.staleMs) {
      return this.publish(p.id, raw * p.c.scale + p.c.offset, nowMs, "stale", `ReadingTime ${rt} has not moved for ${Math.round((nowMs - p.readingTimeSinceMs) / 1000)} s`, p.c.unit);
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

  // ---- the event stream ----

  private async streamLoop(): Promise<void> {
    while (this.running) {
      try {
        await this.streamOnce();
      } catch (err) {
        if (!this.running) return;
        this.o.onLog?.("warn", `${this.name}: event stream ${this.streamOpen ? "dropped" : "not opened"}: ${(err as Error).message}`);
      }
      if (this.streamOpen) this.streamReconnects++;
      this.streamOpen = false;
      if (!this.running) return;
      await new Promise((r) => setTimeout(r, this.streamBackoff.next()));
    }
  }

  private async streamOnce(): Promise<void> {
    const ev = this.c.events;
    const res = await this.http.stream(ev.path, await this.authHeaders(), this.abort.signal);
    if (res.statusCode === 401 && this.c.auth.mode === "session") this.token = null;
    if (res.statusCode !== 200) {
      res.body.destroy();
      throw new Error(`HTTP ${res.statusCode}`);
    }
    this.streamOpen = true;
    this.streamBackoff.reset();
    // anything that changed while the stream was down is read now, not at the next poll
    this.rereadLeaks();
    let pending = 0;
    const parser = createParser({
      onEvent: (e) => {
        pending = 0;
        this.onEvent(e.data);
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

  private onEvent(data: string): void {
    this.events++;
    const nowMs = monoMs();
    if (nowMs - this.eventWindowStartMs >= 1000) {
      this.eventWindowStartMs = nowMs;
      this.eventWindowCount = 0;
    }
    if (++this.eventWindowCount > this.c.events.maxEventsPerS) {
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

  // ---- outputs ----

  setOutput(o: OutputRuntime, value: number): void {
    if (!Number.isFinite(value)) return;
    const changed = o.state.value !== value;
    o.state.value = value;
    if (changed) {
      o.retry.reset();
      o.retryAtMs = 0;
    }
    if (o.verified !== null && Math.abs(o.verified - value) * o.c.scale <= o.c.tolerance) {
      o.unverifiedSinceMs = null;
      return;
    }
    o.unverifiedSinceMs ??= monoMs();
    if (o.writing || monoMs() < o.retryAtMs || !this.running) return;
    void this.write(o);
  }

  /** PATCH with If-Match on the ETag last seen (fetched if none, again once on 412), then read back. */
  private async write(o: OutputRuntime): Promise<void> {
    const value = o.state.value;
    if (value === null) return;
    o.writing = true;
    const sent = value * o.c.scale;
    try {
      let r: HttpAnswer | null = null;
      for (let attempt = 0; attempt < 2; attempt++) {
        if (o.etag === null || attempt > 0) {
          const g = await this.request("GET", o.c.path);
          const etag = g.headers.etag;
          o.etag = typeof etag === "string" ? etag : isObject(g.json) && typeof g.json["@odata.etag"] === "string" ? g.json["@odata.etag"] : null;
        }
        r = await this.request("PATCH", o.c.path, o.etag === null ? {} : { "if-match": o.etag }, { [o.c.property]: sent });
        if (r.status !== 412) break;
      }
      o.state.writes++;
      if (r === null || (r.status !== 200 && r.status !== 204)) {
        this.refused(o, `PATCH ${o.c.property}=${sent} refused: HTTP ${r?.status ?? "?"}${r === null ? "" : errorCode(r)}`, "exception");
        return;
      }
      o.state.written = value;
      o.state.writtenAtMs = monoMs();
      const etag = r.headers.etag;
      if (typeof etag === "string") o.etag = etag;
      // read back: what the BMC holds, not what it said it took
      const back = await this.request("GET", o.c.path);
      if (back.status !== 200 || !isObject(back.json)) {
        this.refused(o, `read-back failed: HTTP ${back.status}`, "exception");
        return;
      }
      if (typeof back.headers.etag === "string") o.etag = back.headers.etag;
      this.checkHeld(o, back.json[o.c.property], true);
    } catch (err) {
      const f = err instanceof HttpFailure ? err : new HttpFailure("disconnected", (err as Error).message);
      this.refused(o, `write of ${o.c.property}=${sent}: ${f.message}`, f.kind);
    } finally {
      o.writing = false;
      o.writeEndedMs = monoMs();
    }
    // a newer value asked for while this one was on its way goes now
    if (this.running && o.state.value !== null && o.state.value !== value && monoMs() >= o.retryAtMs) void this.write(o);
  }

  /**
   * Compares what the BMC holds with what it should hold. On our own read-back that is the value
   * just sent; a miss waits its backoff before the next try (a BMC that clamps our value must not
   * be hammered). On a poll it is the value last written: a different one there means someone
   * else changed it, and ours goes back at once; a newer value not yet sent is the write's business.
   */
  private checkHeld(o: OutputRuntime, held: unknown, afterWrite = false): void {
    // o.state.written is the value just sent, on a read-back, and the one last sent, on a poll
    const want = o.state.written;
    if (want === null) return;
    const sent = want * o.c.scale;
    const nowMs = monoMs();
    if (typeof held === "number" && Math.abs(held - sent) <= o.c.tolerance) {
      if (want !== o.state.value) return; // the last value is held; the newer one is on its way
      o.verified = want;
      o.state.quality = "good";
      o.unverifiedSinceMs = null;
      o.why = "";
      o.retry.reset();
      o.retryAtMs = 0;
      this.publish(o.id, held / o.c.scale, nowMs, "good", undefined, o.c.unit);
      return;
    }
    const known = o.state.quality === "mismatch";
    this.refused(o, `the BMC holds ${o.c.property}=${JSON.stringify(held)}, not ${sent}`, "mismatch", afterWrite || !known);
    if (!afterWrite && !known) o.retryAtMs = 0;
    if (typeof held === "number") this.publish(o.id, held / o.c.scale, nowMs, "mismatch", o.why, o.c.unit);
  }

  /** The output is not what we asked for: its quality, why, and (`counted`) a failure logged and a retry scheduled. */
  private refused(o: OutputRuntime, why: string, quality: Quality, counted = true): void {
    o.state.quality = quality;
    o.why = why;
    o.verified = null;
    o.unverifiedSinceMs ??= monoMs();
    if (quality !== "mismatch") this.publish(o.id, NaN, monoMs(), quality, why, o.c.unit);
    if (!counted) return;
    o.state.failures++;
    o.retryAtMs = monoMs() + o.retry.next();
    this.o.onLog?.("warn", `${o.id}: ${why}`);
  }
}
