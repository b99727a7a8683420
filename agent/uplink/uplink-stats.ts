// What the uplink says of itself (its stats, in metrics and status), and where a pod's topics
// live: the shapes the uplink's readers share, apart from the uplink's connection logic.
import type { ConsumerAckStats } from "./consumer-ack.js";
import type { SpoolClass } from "./spool.js";

export const topicBase = (site: string, pod: string): string => `podwarden/${site}/${pod}/`;

export interface UplinkStats {
  connected: boolean;
  connects: number;
  /** the broker of the current connection, or of the attempt under way (redacted), or null */
  broker: string | null;
  /** times the pod moved on to the next broker address (a lost, refused or silent connection) */
  brokerSwitches: number;
  spoolDepth: Record<SpoolClass, number>;
  spoolBytes: number;
  spoolDropped: Record<SpoolClass, number>;
  /** records lost to damage found at start */
  spoolLost: Record<SpoolClass, number>;
  /** the last seq given to an event (critical) and a telemetry message */
  lastSeq: Record<SpoolClass, number>;
  inflight: number;
  /** publish -> PUBACK quantiles since start, µs */
  ackUs: { p50: number; p99: number };
  /** when the broker last acknowledged a publish (wall time, ISO 8601), or null */
  lastAckAt: string | null;
  commands: { accepted: number; rejected: number; suppressed: number; dropped: number; duplicates: number };
  /** the broker has acknowledged the subscription to signed commands on this connection: a command sent before then is not heard */
  commandsLive: boolean;
  /** with uplink.consumerAck: mission control's acknowledgements of the events */
  consumerAck?: ConsumerAckStats;
}

