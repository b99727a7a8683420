// Report-by-exception: which points an exception message carries, by deadband and quality.
import { describe, expect, it } from "vitest";
import type { Point } from "../lib/points.js";
import { ExceptionReporter } from "../agent/uplink/telemetry.js";

const pt = (id: string, value: number, quality: Point["quality"] = "good"): Point => ({ id, value, quality, sourceTimeMs: 1000 });

describe("report-by-exception", () => {
  const reporter = (): ExceptionReporter => new ExceptionReporter({ enabled: true, checkMs: 100, defaultDeadband: 0.5, deadbands: { "rack-1.flowLpm": 2 } });

  it("reports every point the first time, then nothing until one moves beyond its deadband", () => {
    const r = reporter();
    expect(Object.keys(r.changed([pt("rack-1.flowLpm", 100), pt("rack-1.returnTempC", 40)]) ?? {})).toEqual(["rack-1.flowLpm", "rack-1.returnTempC"]);
    expect(r.changed([pt("rack-1.flowLpm", 100), pt("rack-1.returnTempC", 40)])).toBeNull();
    // inside the bands: the point's own (2) and the default (0.5)
    expect(r.changed([pt("rack-1.flowLpm", 101.9), pt("rack-1.returnTempC", 40.5)])).toBeNull();
    // beyond them: only the one that moved is carried
    expect(r.changed([pt("rack-1.flowLpm", 101.9), pt("rack-1.returnTempC", 40.6)])).toEqual({ "rack-1.returnTempC": expect.objectContaining({ value: 40.6, quality: "good" }) as unknown });
    expect(Object.keys(r.changed([pt("rack-1.flowLpm", 97.9), pt("rack-1.returnTempC", 40.6)]) ?? {})).toEqual(["rack-1.flowLpm"]);
  });

  it("measures from the value last reported, so a slow drift is reported once it adds up to a deadband", () => {
    const r = reporter();
    r.reportedAll([pt("t", 40)]);
    const reportedAt: number[] = [];
    for (let i = 1; i <= 30; i++) {
      const v = 40 + i * 0.1; // 0.1 a step, each step far inside the 0.5 band
      if (r.changed([pt("t", v)]) !== null) reportedAt.push(Math.round(v * 10) / 10);
    }
    expect(reportedAt).toEqual([40.6, 41.2, 41.8, 42.4, 43]);
  });

  it("reports a change of quality, and a value becoming unusable or usable again, whatever the deadband", () => {
    const r = reporter();
    r.reportedAll([pt("t", 40)]);
    // a stale value is not a measurement: it travels as null, its quality says why
    expect(r.changed([pt("t", 40, "stale")])).toEqual({ t: expect.objectContaining({ value: null, quality: "stale" }) as unknown });
    expect(r.changed([pt("t", Number.NaN, "invalid")])).toEqual({ t: expect.objectContaining({ value: null, quality: "invalid" }) as unknown });
    expect(r.changed([pt("t", Number.NaN, "invalid")])).toBeNull();
    expect(r.changed([pt("t", 40, "good")])).toEqual({ t: expect.objectContaining({ value: 40, quality: "good" }) as unknown });
  });

  it("after a periodic snapshot, measures from what the snapshot carried", () => {
    const r = reporter();
    r.reportedAll([pt("t", 40)]);
    expect(r.changed([pt("t", 40.4)])).toBeNull();
    r.reportedAll([pt("t", 40.4)]); // the snapshot carried 40.4
    expect(r.changed([pt("t", 40.8)])).toBeNull();
    expect(r.changed([pt("t", 41)])).not.toBeNull();
  });
});
