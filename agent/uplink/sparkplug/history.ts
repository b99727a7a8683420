// What the edge node saw while it had no Sparkplug session (the broker away, or the primary host
// offline): DATA messages, kept in order up to a bound and replayed after the next births with
// is_historical set on every metric (Sparkplug 3.0 §6.4.6). In memory: a restart starts a new
// session whose births carry the state as it is then; the JSON uplink's disk spool is the record
// that survives a restart.
import type { UMetric } from "./payload.js";

export interface StoredData {
  /** null: NDATA; else the device id of a DDATA */
  device: string | null;
  /** wall-clock ms the message was made */
  timestamp: number;
  metrics: UMetric[];
}

export class DataHistory {
  private readonly items: StoredData[] = [];
  private head = 0;
  /** messages dropped, oldest first, past the bound, since start */
  dropped = 0;

  constructor(private readonly max: number) {}

  get size(): number {
    return this.items.length - this.head;
  }

  add(d: StoredData): void {
    if (this.max === 0) {
      this.dropped++;
      return;
    }
    this.items.push(d);
    while (this.size > this.max) {
      this.head++;
      this.dropped++;
    }
    // compact now and then rather than shift() one by one (O(n) each)
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items.splice(0, this.head);
      this.head = 0;
    }
  }

  /** Everything stored, oldest first; the store is then empty. */
  drain(): StoredData[] {
    const out = this.items.slice(this.head);
    this.items.length = 0;
    this.head = 0;
    return out;
  }
}
