// The store-and-forward spool: everything the pod says upward at QoS 1 (events, telemetry) is
// written here first and removed only after the broker's PUBACK, so neither a broker outage nor
// a daemon restart loses it.
//
//   <stateDir>/spool/critical/    events (alarm transitions, mode changes, trips, command audit)
//   <stateDir>/spool/telemetry/   telemetry snapshots
//   <stateDir>/spool/quarantine/  copies of damaged files found at start (and alarmed)
//
// Overflow policy (docs/mqtt.md): the spool is bounded by maxBytes across both queues. When a
// new record would exceed it, the oldest telemetry segment is dropped first; critical records
// are dropped only when no telemetry is left to drop. Every dropped record is counted, and a
// dropped critical record raises a Critical alarm.
//
// Replay order: every critical record before any telemetry. After an outage mission control
// learns of the alarms, trips and commands first, then gets the telemetry backlog; within each
// class the order is the original one, and each record keeps its timestamp and seq.
import { join } from "node:path";
import { SpoolQueue, type SpoolRecord } from "./spool-queue.js";

export type SpoolClass = "critical" | "telemetry";
export const SPOOL_CLASSES: readonly SpoolClass[] = ["critical", "telemetry"];

export interface SpoolOptions {
  dir: string;
  maxBytes: number;
  segmentBytes: number;
}

export interface SpoolOpenReport {
  /** records from before the restart still to send */
  pending: Record<SpoolClass, number>;
  /** damaged files found and moved aside: each deserves an alarm */
  quarantined: string[];
  tornTail: boolean;
  /** records lost to that damage, per class (SpoolQueue's QueueOpenReport.lost) */
  lost: Record<SpoolClass, number>;
}

export interface Taken {
  cls: SpoolClass;
  record: SpoolRecord;
}

export class Spool {
  private readonly queues: Record<SpoolClass, SpoolQueue>;
  private readonly quarantineDir: string;
  private readonly heldForConsumer = new Set<SpoolClass>();

  constructor(private readonly o: SpoolOptions) {
    this.queues = {
      critical: new SpoolQueue(join(o.dir, "critical"), o.segmentBytes),
      telemetry: new SpoolQueue(join(o.dir, "telemetry"), o.segmentBytes),
    };
    this.quarantineDir = join(o.dir, "quarantine");
  }

  open(): SpoolOpenReport {
    const c = this.queues.critical.open(this.quarantineDir);
    const t = this.queues.telemetry.open(this.quarantineDir);
    return { pending: { critical: c.pending, telemetry: t.pending }, quarantined: [...c.quarantined, ...t.quarantined], tornTail: c.tornTail || t.tornTail, lost: { critical: c.lost, telemetry: t.lost } };
  }

  /**
   * Appends a record; `make` receives the record's sequence number (its queue's id) and returns
   * the message body. Returns the sequence number and how many records the overflow policy
   * dropped to make room.
   */
  append(cls: SpoolClass, topic: string, make: (seq: number) => string, ts = Date.now()): { seq: number; dropped: Record<SpoolClass, number> } {
    const q = this.queues[cls];
    const seq = q.peekNextId;
    q.append(ts, topic, make(seq));
    return { seq, dropped: this.enforceLimit() };
  }

  private enforceLimit(): Record<SpoolClass, number> {
    const dropped = { critical: 0, telemetry: 0 };
    const t = this.queues.telemetry;
    const c = this.queues.critical;
    // each pass drops one whole segment; a single segment bigger than the limit cannot loop
    for (let guard = 0; this.bytes > this.o.maxBytes && guard < 10_000; guard++) {
      if (t.bytes > 0) dropped.telemetry += t.dropOldest();
      else if (c.bytes > 0) dropped.critical += c.dropOldest();
      else break;
    }
    return dropped;
  }

  /** The next record to send: the oldest critical one, else the oldest telemetry; it is then in flight. */
  take(): Taken | undefined {
    for (const cls of SPOOL_CLASSES) {
      const record = this.queues[cls].peek();
      if (record === undefined) continue;
      this.queues[cls].take(record);
      return { cls, record };
    }
    return undefined;
  }

  /**
   * The broker acknowledged a record (PUBACK). A class held for mission control's own
   * acknowledgement (consumerAck) keeps it until ackThrough(); any other forgets it.
   */
  ack(cls: SpoolClass, id: number): void {
    if (this.heldForConsumer.has(cls)) this.queues[cls].delivered(id);
    else this.queues[cls].ack(id);
  }

  /** Holds a class's records past their PUBACK, until mission control acknowledges them (consumer-ack.ts). */
  holdForConsumer(cls: SpoolClass): void {
    this.heldForConsumer.add(cls);
  }

  /** Mission control holds every record of the class up to `n`: false for an `n` the pod never gave out. */
  ackThrough(cls: SpoolClass, n: number): boolean {
    return this.queues[cls].ackThrough(n);
  }

  /** The class's acknowledged mark. */
  acked(cls: SpoolClass): number {
    return this.queues[cls].acked;
  }

  /** The class's oldest unacknowledged record has been sent and answered by the broker. */
  oldestDelivered(cls: SpoolClass): boolean {
    return this.queues[cls].oldestDelivered();
  }

  /** The class's unacknowledged records go again, from the oldest (the others' flight is untouched). */
  rewindClass(cls: SpoolClass): void {
    this.queues[cls].rewind();
  }

  /** The connection dropped: everything unacknowledged goes again, in order. */
  rewind(): void {
    for (const q of Object.values(this.queues)) q.rewind();
  }

  get bytes(): number {
    return this.queues.critical.bytes + this.queues.telemetry.bytes;
  }

  depth(): Record<SpoolClass, number> {
    return { critical: this.queues.critical.pendingCount(), telemetry: this.queues.telemetry.pendingCount() };
  }

  /** The last sequence number given out, per class (0: none yet). */
  lastSeq(): Record<SpoolClass, number> {
    return { critical: this.queues.critical.peekNextId - 1, telemetry: this.queues.telemetry.peekNextId - 1 };
  }

  dropped(): Record<SpoolClass, number> {
    return { critical: this.queues.critical.dropped, telemetry: this.queues.telemetry.dropped };
  }

  /** Records lost to damage found at start, per class. */
  lost(): Record<SpoolClass, number> {
    return { critical: this.queues.critical.lost, telemetry: this.queues.telemetry.lost };
  }

  /** Puts everything written on disk (fsync): records, new segment files, acknowledged marks. */
  flush(): void {
    for (const q of Object.values(this.queues)) q.flush();
  }

  /** flush() off the event loop (SpoolQueue.flushInBackground); await it before close(). */
  async flushInBackground(): Promise<void> {
    await Promise.all(Object.values(this.queues).map((q) => q.flushInBackground()));
  }

  close(): void {
    for (const q of Object.values(this.queues)) q.close();
  }
}
