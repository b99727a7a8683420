// Sparkplug B payloads: encoded and decoded by Eclipse Tahu's `sparkplug-payload` (protobufjs
// 6.11.6, which carries the fixes for both protobufjs prototype-pollution advisories,
// CVE-2022-25878 in 6.11.3 and CVE-2023-36665 in 6.11.4). No protobuf code of ours: this module
// only names what the edge node uses of it, and the quality codes of Sparkplug 3.0 §6.4.9.1.
import * as tahu from "sparkplug-payload";
import type { UMetric, UPayload, UPropertyValue } from "sparkplug-payload/lib/sparkplugbpayload.js";
import type { Quality } from "../../../lib/points.js";

export type { UMetric, UPayload, UPropertyValue };

const codec = tahu.get("spBv1.0");
if (codec === null) throw new Error("sparkplug-payload has no spBv1.0 codec");

export const encodePayload = (p: UPayload): Uint8Array => codec.encodePayload(p);
export const decodePayload = (b: Uint8Array): UPayload => codec.decodePayload(b);

/** Sparkplug 3.0 §6.4.9.1: the 'Quality' property's codes. */
export const SPARKPLUG_QUALITY = { bad: 0, good: 192, stale: 500 } as const;

/**
 * A point's quality as Sparkplug's three: what cannot be read now (no answer, no connection, a
 * breaker open, an MQTT point gone quiet) is STALE, the last value no longer current; what was
 * read and is wrong (an exception, a corrupt frame, an invalid value, a failed read-back, a map
 * error) is BAD.
 */
export function sparkplugQuality(q: Quality): number {
  switch (q) {
    case "good":
      return SPARKPLUG_QUALITY.good;
    case "timeout":
    case "disconnected":
    case "offline":
    case "stale":
      return SPARKPLUG_QUALITY.stale;
    default:
      return SPARKPLUG_QUALITY.bad;
  }
}

/** A metric's Quality property (§6.4.9.1), or null without one. */
export function metricQuality(m: UMetric): number | null {
  // through unknown: the codec's property value type names Long, whose types eslint cannot see
  const v = (m.properties as Record<string, { value?: unknown } | undefined> | undefined)?.Quality?.value;
  return v === undefined || v === null ? null : longToNumber(v);
}

/** A number from an Int64/UInt64 the codec may hand back as a Long. */
export function longToNumber(v: unknown): number {
  if (typeof v === "number") return v;
  if (v !== null && typeof v === "object" && "toNumber" in v && typeof v.toNumber === "function") return Number((v as { toNumber(): number }).toNumber());
  return Number.NaN;
}
