// The uplink's retained topics, state, info and alarms: what each says of the pod, built from
// the pod's reader. They are state, not history: republished, current, on every connect (the
// connection and when to publish are uplink.ts's).
import type { PodReader } from "../pod-api.js";
import { packageVersion } from "../version.js";
import type { UplinkConfig } from "./schema.js";

/**
 * The retained state. The Will is written at connect time and published by the broker at some
 * later moment the pod cannot know: it carries no mode and no timestamp rather than stale ones.
 */
export function stateMessage(kind: "online" | "stopped" | "will", pod: PodReader, since: string): string {
  if (kind === "will") return JSON.stringify({ state: "offline", reason: "connection lost", mode: null, maintenance: null, since, timestamp: null });
  return JSON.stringify({ state: kind === "online" ? "online" : "offline", ...(kind === "stopped" ? { reason: "stopped" } : {}), mode: pod.mode(), maintenance: pod.status().maintenance, since, timestamp: new Date().toISOString() });
}

/** What the pod is and can do: its identity, version, racks, capabilities and commands. */
export function infoMessage(pod: PodReader, c: UplinkConfig, commands: readonly string[]): string {
  const id = pod.identity;
  return JSON.stringify({
    version: packageVersion(),
    configHash: id.configHash,
    site: id.site,
    pod: id.pod,
    racks: id.racks,
    capabilities: ["telemetry", "report-by-exception", "alarms", "events", "store-and-forward", ...(c.commands.enabled ? ["commands"] : []), ...(c.consumerAck.enabled ? ["consumer-ack"] : [])],
    commands: c.commands.enabled ? commands : [],
    protocolVersion: c.protocolVersion,
  });
}

/** The active alarm set. */
export function alarmsMessage(pod: PodReader): string {
  const alarms = pod.activeAlarms().map((x) => ({
    id: x.id,
    severity: x.severity,
    message: x.message,
    source: x.source,
    latched: x.latched,
    acknowledged: x.acknowledged,
    suppressed: x.suppressed,
    raisedAt: x.raisedAt,
  }));
  return JSON.stringify({ timestamp: new Date().toISOString(), alarms });
}
