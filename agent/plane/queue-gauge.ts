// How full a message queue between two threads is, without either waiting on the other: the
// sender counts what it posts, the receiver what it has taken, both in shared memory. The sender
// reads the difference before it posts and, past the queue's bound, drops (or refuses) with a
// count instead: a port's own queue has no bound, and a thread that stops reading would otherwise
// grow the other's memory without end. Neither side ever blocks on the other.

/** The two counters of one direction, in a SharedArrayBuffer both threads hold. */
export class QueueGauge {
  private readonly words: Int32Array;

  constructor(
    buffer: SharedArrayBuffer,
    /** which pair of words in the buffer */
    readonly index: number,
    /** the most messages (or bytes) in flight; past it, `admit` says no */
    readonly bound: number,
  ) {
    this.words = new Int32Array(buffer);
  }

  static buffer(queues: number): SharedArrayBuffer {
    return new SharedArrayBuffer(queues * 2 * Int32Array.BYTES_PER_ELEMENT);
  }

  /** In flight now: posted, not yet taken. */
  depth(): number {
    return (Atomics.load(this.words, 2 * this.index) - Atomics.load(this.words, 2 * this.index + 1)) | 0;
  }

  /** The sender: whether `size` more fits, and if so it is counted as posted. */
  admit(size = 1): boolean {
    if (this.depth() + size > this.bound) return false;
    Atomics.add(this.words, 2 * this.index, size);
    return true;
  }

  /** The sender, for what must go whatever the depth (a reply to a request): counted as posted. */
  force(size = 1): void {
    Atomics.add(this.words, 2 * this.index, size);
  }

  /** The receiver: `size` taken off the queue. */
  taken(size = 1): void {
    Atomics.add(this.words, 2 * this.index + 1, size);
  }
}
