// Mission control's count of what each pod said: per pod and per class (events, telemetry), the
// sequence numbers seen, so a gap is a loss and never silence.
//
// A pod numbers each class from 1 and never reuses a number (its spool: docs/mqtt.md); delivery
// is at least once, and after an outage the backlog comes in order but interleaved with nothing
// newer (the spool sends oldest first). So the ledger keeps, per stream, the highest number
// below which everything has arrived (`upTo`) and the numbers seen above it. A number missing
// below the highest seen is a gap; a gap still open `lossAfterMs` after it opened is counted as
// lost (it may yet arrive: then it is counted as late, and no longer lost). Duplicates are
// counted and dropped. Memory per stream is bounded: numbers seen above upTo are a set capped
// at `maxPending`; beyond it the oldest gap is closed as lost at once, and a jump of more than
// `maxPending` is counted lost whole (what of it arrives later counts as a duplicate).
//
// A stream starts where the consumer first meets it (`baseline: "first-seen"`, for a consumer
// that joins a running fleet: what a pod said before is not its to count), or at 1 (`"one"`,
// for a consumer that was there before the pods started: the tests' oracle).
//
// Pure: no I/O and no clock of its own (times are passed in), so the watch, the tests' oracle and
// the fleet bench count the same way.

export type StreamClass = "events" | "telemetry";

export interface StreamCounts {
  /** messages taken (first copies) */
  received: number;
  duplicates: number;
  /** the highest number seen */
  highest: number;
  /** everything at or below this has arrived, or been given up as lost */
  upTo: number;
  /** numbers missing below `highest`, not yet given up */
  open: number;
  /** numbers given up as lost */
  lost: number;
  /** numbers that came after they had been given up */
  late: number;
}

interface Stream {
  upTo: number;
  highest: number;
  /** numbers seen above upTo */
  above: Set<number>;
  /** when each open gap was first seen: number -> ms */
  openedAt: Map<number, number>;
  /** numbers given up as lost (kept to tell a late arrival from a duplicate) */
  givenUp: Set<number>;
  received: number;
  duplicates: number;
  lost: number;
  late: number;
}

export interface LedgerOptions {
  /** a gap open this long is counted as lost, ms */
  lossAfterMs: number;
  /** numbers seen above a stream's upTo kept at most; past it the oldest gap is given up */
  maxPending?: number;
  /** where a stream's count starts: at its first number seen (default), or at 1 */
  baseline?: "first-seen" | "one";
}

const newStream = (): Stream => ({ upTo: 0, highest: 0, above: new Set(), openedAt: new Map(), givenUp: new Set(), received: 0, duplicates: 0, lost: 0, late: 0 });

export type Verdict = "new" | "duplicate" | "late";

export class SeqLedger {
  private readonly streams = new Map<string, Stream>();
  private readonly maxPending: number;

  constructor(private readonly o: LedgerOptions) {
    this.maxPending = o.maxPending ?? 100_000;
  }

  private stream(pod: string, cls: StreamClass, firstSeq?: number, ackedBefore?: number): Stream {
    const key = `${pod}\n${cls}`;
    let s = this.streams.get(key);
    if (s === undefined) {
      this.streams.set(key, (s = newStream()));
      // a pod holding its events for acknowledgement says what was acknowledged before: the
      // stream starts there, not at the first number met (a live event can come before the
      // held ones it is sending again, and the held ones are this consumer's to count)
      if (firstSeq !== undefined && this.o.baseline !== "one") s.upTo = s.highest = ackedBefore !== undefined && ackedBefore < firstSeq ? ackedBefore : firstSeq - 1;
    }
    return s;
  }

  /**
   * One message's number (a positive integer), from pod `pod` ("site/pod"), taken at `nowMs`;
   * `ackedBefore`: the pod's acknowledged mark when it sent it (uplink.consumerAck's `acked`).
   */
  record(pod: string, cls: StreamClass, seq: number, nowMs: number, ackedBefore?: number): Verdict {
    const s = this.stream(pod, cls, seq, ackedBefore);
    if (s.givenUp.delete(seq)) {
      s.late++;
      s.lost--;
      s.received++;
      return "late";
    }
    if (seq <= s.upTo || s.above.has(seq)) {
      s.duplicates++;
      return "duplicate";
    }
    s.received++;
    if (seq - s.highest - 1 > this.maxPending) {
      // too far ahead to track number by number: what is open now, and the jump, are lost
      while (s.upTo < s.highest) this.giveUpOldest(s);
      s.lost += seq - s.highest - 1;
      s.upTo = s.highest = seq - 1;
    }
    if (seq > s.highest) {
      for (let k = s.highest + 1; k < seq; k++) if (k > s.upTo) s.openedAt.set(k, nowMs);
      s.highest = seq;
    }
    s.openedAt.delete(seq);
    s.above.add(seq);
    this.advance(s);
    while (s.above.size > this.maxPending) this.giveUpOldest(s);
    return "new";
  }

  /** Gives up gaps open longer than lossAfterMs (call it now and then). */
  expire(nowMs: number): void {
    for (const s of this.streams.values()) {
      for (const [k, at] of s.openedAt) {
        if (nowMs - at < this.o.lossAfterMs) continue;
        this.giveUp(s, k);
      }
      this.advance(s);
    }
  }

  private giveUpOldest(s: Stream): void {
    this.giveUp(s, s.upTo + 1);
    this.advance(s);
  }

  /** Counts k as lost; the lost numbers remembered (to tell a late arrival) are capped too. */
  private giveUp(s: Stream, k: number): void {
    s.openedAt.delete(k);
    s.givenUp.add(k);
    s.lost++;
    if (s.givenUp.size > this.maxPending) s.givenUp.delete(s.givenUp.values().next().value as number);
  }

  /** Moves upTo over everything that has arrived or been given up: every number up to the highest that is not an open gap. */
  private advance(s: Stream): void {
    while (s.upTo < s.highest && !s.openedAt.has(s.upTo + 1)) s.above.delete(++s.upTo);
  }

  private peek(pod: string, cls: StreamClass): Stream {
    return this.streams.get(`${pod}\n${cls}`) ?? newStream();
  }

  counts(pod: string, cls: StreamClass): StreamCounts {
    const s = this.peek(pod, cls);
    return { received: s.received, duplicates: s.duplicates, highest: s.highest, upTo: s.upTo, open: s.openedAt.size, lost: s.lost, late: s.late };
  }

  /**
   * The highest number at or below which everything of the stream has arrived, none given up: what
   * a consumer may acknowledge to the pod (uplink.consumerAck), which then forgets all of it. A
   * number given up as lost holds the mark below it until it arrives late (a pod holding its
   * events re-sends it). 0 for a stream not seen.
   */
  contiguous(pod: string, cls: StreamClass): number {
    const s = this.peek(pod, cls);
    let mark = s.upTo;
    for (const k of s.givenUp) if (k <= mark) mark = k - 1;
    return mark;
  }

  /** The numbers missing below the highest seen (open or given up), at most `limit` of them. */
  missing(pod: string, cls: StreamClass, limit = 100): number[] {
    const s = this.peek(pod, cls);
    const out: number[] = [];
    for (let k = s.upTo + 1; k <= s.highest && out.length < limit; k++) if (!s.above.has(k)) out.push(k);
    for (const k of s.givenUp) if (k <= s.upTo && out.length < limit) out.push(k);
    return out.sort((a, b) => a - b);
  }

  pods(): string[] {
    return [...new Set([...this.streams.keys()].map((k) => k.slice(0, k.indexOf("\n"))))].sort();
  }

  /** Totals over every pod. */
  totals(cls: StreamClass): StreamCounts {
    const t: StreamCounts = { received: 0, duplicates: 0, highest: 0, upTo: 0, open: 0, lost: 0, late: 0 };
    for (const [key, s] of this.streams) {
      if (!key.endsWith(`\n${cls}`)) continue;
      t.received += s.received;
      t.duplicates += s.duplicates;
      t.open += s.openedAt.size;
      t.lost += s.lost;
      t.late += s.late;
    }
    return t;
  }
}
