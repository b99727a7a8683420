// A TCP proxy on loopback that can partition the link it carries, for fault tests and the soak:
//   pass    forward both ways
//   drop    black-hole: bytes vanish both ways and new connections get no answer, like an
//           iptables DROP (the client sees silence, never a reset)
//   reject  every connection is reset at once and new ones are refused, like an iptables REJECT
// and, while passing, impair it (impair()): a one-way delay, and stalls where a lossy link would
// stall a TCP stream (tc netem's delay and loss, as the stream sees them; this kernel has no
// netem, and a proxy cannot drop a segment TCP would not then resend). injectToClients() writes
// bytes of the caller's into the stream toward the clients, as a broker that breaks the protocol
// and talks on would.
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";

export type PartitionMode = "pass" | "drop" | "reject";

export interface Impairment {
  /** added one-way delay, ms */
  delayMs: number;
  /**
   * share of chunks that come after a lost segment: the stream stalls (head-of-line) for
   * stallMs, as TCP waits for the retransmission, and everything behind waits too
   */
  lossShare: number;
  /** how long a stall lasts, ms (Linux's smallest retransmission timeout is 200 ms) */
  stallMs: number;
  /** uniform [0, 1): seeded by the caller, so a run replays */
  random: () => number;
}

/** One direction of an impaired link: chunks leave in order, each at its release time. */
class DelayLine {
  private readonly queue: { at: number; data: Buffer }[] = [];
  private lastAt = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly send: (d: Buffer) => void) {}

  get idle(): boolean {
    return this.queue.length === 0;
  }

  push(d: Buffer, delayMs: number): void {
    // never before the chunk ahead of it: a stream keeps its order
    this.lastAt = Math.max(performance.now() + delayMs, this.lastAt);
    this.queue.push({ at: this.lastAt, data: d });
    if (this.timer === null) this.arm();
  }

  private arm(): void {
    this.timer = setTimeout(() => this.release(), Math.max(0, this.queue[0].at - performance.now()));
  }

  private release(): void {
    this.timer = null;
    const now = performance.now();
    while (this.queue.length > 0 && this.queue[0].at <= now) this.send(this.queue.shift()!.data);
    if (this.queue.length > 0) this.arm();
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.queue.length = 0;
  }
}

export class PartitionProxy {
  private server: Server | null = null;
  private readonly pairs = new Set<[Socket, Socket]>();
  private readonly lines = new Set<DelayLine>();
  private impairment: Impairment | null = null;
  /** clients whose upstream closed during a drop: silent until the link heals */
  private readonly orphans = new Set<Socket>();
  mode: PartitionMode = "pass";
  port = 0;
  /** connections accepted so far */
  connections = 0;

  constructor(private readonly targetPort: number) {}

  async listen(): Promise<void> {
    this.server = createServer({ noDelay: true }, (client) => {
      client.on("error", () => undefined);
      this.connections++;
      if (this.mode === "reject") return void client.resetAndDestroy();
      const upstream = connect({ port: this.targetPort, host: "127.0.0.1", noDelay: true });
      upstream.on("error", () => client.destroy());
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      const passing = (to: Socket) => (d: Buffer) => {
        if (this.mode === "pass" && !to.destroyed) to.write(d);
      };
      const up = new DelayLine(passing(upstream));
      const down = new DelayLine(passing(client));
      this.lines.add(up).add(down);
      const close = (): void => {
        this.pairs.delete(pair);
        for (const l of [up, down]) {
          l.stop();
          this.lines.delete(l);
        }
        client.destroy();
        upstream.destroy();
      };
      client.on("close", close);
      // Behind a real partition the far end's FIN never arrives: a broker that gives up a client
      // it cannot hear leaves that client in silence, to find out by its own watch (passing the
      // FIN on let aedes's 1.5-keepalive cut reach an MQTT client before its own 1.45-keepalive
      // watch, and the client counted a close, not a silent broker). The client learns on the
      // heal, as it would from the far end's RST.
      upstream.on("close", () => {
        if (this.mode === "drop" && !client.destroyed) this.orphans.add(client);
        else close();
      });
      client.on("close", () => this.orphans.delete(client));
      const forward = (line: DelayLine, to: Socket) => (d: Buffer) => {
        if (this.mode !== "pass") return;
        const im = this.impairment;
        const delayMs = im === null ? 0 : im.delayMs + (im.random() < im.lossShare ? im.stallMs : 0);
        // straight through on a clean link, unless earlier chunks are still queued ahead
        if (delayMs === 0 && line.idle) to.write(d);
        else line.push(d, delayMs);
      };
      client.on("data", forward(up, upstream));
      upstream.on("data", forward(down, client));
    });
    await new Promise<void>((r) => this.server!.listen(0, "127.0.0.1", () => r()));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** Delays and stalls what passes from now on (null: a clean link again; what is queued still leaves in order). */
  impair(i: Impairment | null): void {
    this.impairment = i;
  }

  /** Writes `d` toward every client now connected, between what the upstream sends; returns how many got it. */
  injectToClients(d: Buffer): number {
    let n = 0;
    for (const [c] of this.pairs) {
      if (c.destroyed) continue;
      c.write(d);
      n++;
    }
    return n;
  }

  setMode(mode: PartitionMode): void {
    this.mode = mode;
    if (mode !== "drop") {
      for (const c of [...this.orphans]) c.resetAndDestroy();
      this.orphans.clear();
    }
    if (mode !== "reject") return;
    for (const [c, u] of [...this.pairs]) {
      c.resetAndDestroy();
      u.destroy();
    }
  }

  /** clients left in silence because their far end closed during a drop */
  get silenced(): number {
    return this.orphans.size;
  }

  async close(): Promise<void> {
    for (const l of this.lines) l.stop();
    for (const [c, u] of [...this.pairs]) {
      c.destroy();
      u.destroy();
    }
    await new Promise<void>((r) => (this.server === null ? r() : this.server.close(() => r())));
  }
}
