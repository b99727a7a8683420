// A BMC's Controls as outputs (DSP0266 Control resources: a rack's power limit): each write a
// PATCH with If-Match on the ETag last seen, then read back; a value outside the control's
// AllowableMin/AllowableMax is clamped to the limit before it is sent (a BMC would answer 400 to
// it: 120 kW was once sent to a control allowing 150-1000 W), said once per value in the log,
// naming the limit; the output is then confirmed when the BMC holds the limit.
import { monoMs } from "../../lib/clock.js";
import type { Quality } from "../../lib/points.js";
import { errorCode, isObject, property, type OutputRuntime } from "./bmc-runtime.js";
import type { BmcSession } from "./bmc-session.js";
import { HttpFailure, type HttpAnswer } from "./http.js";

export interface Allowable {
  min: number | null;
  max: number | null;
}

/** A control's AllowableMin and AllowableMax: the siblings of its property (SetPoint's, on a Control). */
export function allowableOf(body: Record<string, unknown>, path: string): Allowable | null {
  const at = path.includes(".") ? path.slice(0, path.lastIndexOf(".") + 1) : "";
  const num = (k: string): number | null => {
    const v = property(body, `${at}${k}`);
    return typeof v === "number" && Number.isFinite(v) ? v : null;
  };
  const a = { min: num("AllowableMin"), max: num("AllowableMax") };
  return a.min === null && a.max === null ? null : a;
}

const clampTo = (v: number, a: Allowable): number => Math.min(a.max ?? Infinity, Math.max(a.min ?? -Infinity, v));

type Publish = (id: string, value: number, sourceTimeMs: number, quality: Quality, detail: string | undefined, unit: string | undefined) => void;

export class BmcControls {
  constructor(
    private readonly session: BmcSession,
    private readonly publish: Publish,
    private readonly warn: (line: string) => void,
    private readonly running: () => boolean,
  ) {}

  /** The value in the BMC's units that goes out for `value`: clamped to the control's limits, said once per value. */
  private clamp(o: OutputRuntime, value: number): number {
    const raw = value * o.c.scale;
    if (o.allowable === null) return raw;
    const sent = clampTo(raw, o.allowable);
    if (sent === raw) {
      o.clampedFrom = null;
      return raw;
    }
    if (o.clampedFrom !== value) this.warn(`${o.id}: ${raw} is outside the BMC's ${sent > raw ? `AllowableMin ${o.allowable.min}` : `AllowableMax ${o.allowable.max}`} for ${o.c.property}: ${sent} sent`);
    o.clampedFrom = value;
    return sent;
  }

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
    if (o.writing || monoMs() < o.retryAtMs || !this.running()) return;
    void this.write(o);
  }

  /** PATCH with If-Match on the ETag last seen (fetched if none, again once on 412), then read back. */
  private async write(o: OutputRuntime): Promise<void> {
    const value = o.state.value;
    if (value === null) return;
    o.writing = true;
    let sent = value * o.c.scale;
    try {
      let r: HttpAnswer | null = null;
      for (let attempt = 0; attempt < 2; attempt++) {
        if (o.etag === null || attempt > 0) {
          const g = await this.session.request("GET", o.c.path);
          const etag = g.headers.etag;
          o.etag = typeof etag === "string" ? etag : isObject(g.json) && typeof g.json["@odata.etag"] === "string" ? g.json["@odata.etag"] : null;
          if (isObject(g.json)) o.allowable = allowableOf(g.json, o.c.property);
        }
        sent = this.clamp(o, value);
        r = await this.session.request("PATCH", o.c.path, o.etag === null ? {} : { "if-match": o.etag }, { [o.c.property]: sent });
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
      const back = await this.session.request("GET", o.c.path);
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
    if (this.running() && o.state.value !== null && o.state.value !== value && monoMs() >= o.retryAtMs) void this.write(o);
  }

  /**
   * Compares what the BMC holds with what it should hold. On our own read-back that is the value
   * just sent; a miss waits its backoff before the next try (a BMC that clamps our value must not
   * be hammered). On a poll it is the value last written: a different one there means someone
   * else changed it, and ours goes back at once; a newer value not yet sent is the write's business.
   */
  checkHeld(o: OutputRuntime, held: unknown, afterWrite = false): void {
    // o.state.written is the value just sent, on a read-back, and the one last sent, on a poll
    const want = o.state.written;
    if (want === null) return;
    // a value the BMC's limits clamped is held when the limit is
    const sent = o.clampedFrom === want && o.allowable !== null ? clampTo(want * o.c.scale, o.allowable) : want * o.c.scale;
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
    this.warn(`${o.id}: ${why}`);
  }
}
