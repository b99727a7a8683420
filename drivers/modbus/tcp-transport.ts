// Modbus TCP master transport on modbus-serial's client.
//
// modbus-serial matches responses to requests by MBAP transaction id and ignores a response
// whose transaction already timed out, so a late answer can never satisfy a later request; it
// also allows several requests in flight on one connection (pipelining). This class adds what
// it lacks: reconnect with backoff and jitter forever, a connect timeout, one fresh client per
// connection (the old one destroyed, its timers gone), and outcomes instead of exceptions.
//
// It also keeps the byte stream in step. Modbus TCP has no checksum and cannot be resynchronised
// after a bad frame: a header that claims too many bytes swallows the replies that follow, and
// every request times out from then on (the hostile-server fuzz found this). So an impossible
// header (protocol id not 0, length outside 3..254), or a timeout while part of a frame sits in
// the buffer, drops the connection, and a fresh one starts in step.
import { Socket } from "node:net";
import { Backoff } from "../../lib/backoff.js";
import { ConnectionState } from "./connection-state.js";
import { heldTransactions, issueAndRelease, ModbusClient } from "./modbus-serial.js";
import { FC } from "./protocol.js";
import type { TransportStats, ModbusOutcome, ModbusRequest, ModbusTransport } from "./types.js";

export interface TcpTransportOptions {
  host: string;
  port: number;
  maxInFlight: number;
  connectTimeoutMs: number;
  reconnect: { baseMs: number; maxMs: number };
}

interface ModbusError {
  modbusCode?: number;
  errno?: string;
  message?: string;
  name?: string;
}

/** Removes one occurrence of x (order does not matter: the last element takes its place). */
function removeFrom<T>(xs: T[], x: T): void {
  const i = xs.indexOf(x);
  if (i < 0) return;
  xs[i] = xs[xs.length - 1];
  xs.pop();
}

function failure(err: unknown): ModbusOutcome {
  const e = (err ?? {}) as ModbusError;
  if (typeof e.modbusCode === "number") return { ok: false, kind: "exception", code: e.modbusCode, message: e.message ?? "exception" };
  if (e.name === "TransactionTimedOutError" || e.errno === "ETIMEDOUT") return { ok: false, kind: "timeout", message: "timed out" };
  if (e.name === "PortNotOpenError" || e.errno === "ECONNREFUSED") return { ok: false, kind: "disconnected", message: e.message ?? "not connected" };
  const message = e.message ?? String(err);
  if (/CRC|length|Unexpected data|wrong/i.test(message)) return { ok: false, kind: "corrupt", message };
  return { ok: false, kind: "error", message };
}

export class TcpTransport extends ConnectionState implements ModbusTransport {
  readonly maxInFlight: number;
  private client: ModbusClient | null = null;
  private socket: Socket | null = null;
  private stopped = true;
  private generation = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly backoff: Backoff;
  /**
   * The settle functions of the requests in flight (at most maxInFlight), settled as
   * "disconnected" when the connection drops. An array, not a Set:
   * V8 rebuilds a Set's hash table on an add after a delete, and for a Set that has reached the
   * old generation it allocates the new table there, ~70 bytes of old-space garbage per request
   * (at a 1 ms poll on 8 devices, a third of what drove the daemon's full collections).
   */
  private readonly inFlight: ((o: ModbusOutcome) => void)[] = [];
  /** received bytes not yet making a whole frame (a mirror of the client's reassembly) */
  private rx: Buffer = Buffer.alloc(0);
  connects = 0;
  /** connections dropped to keep the stream in step (an impossible header, a timeout mid-frame) */
  desyncs = 0;

  /** Request records the modbus-serial client still holds (only those in flight, see issueAndRelease). */
  get heldTransactionRecords(): number {
    return this.client === null ? 0 : heldTransactions(this.client);
  }

  constructor(private readonly o: TcpTransportOptions) {
    super();
    this.maxInFlight = o.maxInFlight;
    this.backoff = new Backoff(o.reconnect);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  private connect(): void {
    const gen = ++this.generation;
    // We own the socket and hand it to modbus-serial connected. Its own TCP port reports a
    // close only if no socket error came first, so a reset connection (ECONNRESET, then close)
    // would otherwise go unnoticed and the client would never reconnect.
    const socket = new Socket();
    this.socket = socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 5000);
    socket.on("error", () => undefined); // followed by "close"
    this.rx = Buffer.alloc(0);
    socket.on("data", (d: Buffer) => {
      if (gen === this.generation) this.track(d);
    });
    socket.once("close", () => {
      if (gen === this.generation) this.lost();
    });
    const giveUp = setTimeout(() => {
      if (gen === this.generation && !this.connected) this.lost();
    }, this.o.connectTimeoutMs);
    socket.connect({ host: this.o.host, port: this.o.port }, () => {
      clearTimeout(giveUp);
      if (gen !== this.generation || this.stopped) return;
      const client = new ModbusClient();
      this.client = client;
      client.on("error", () => undefined);
      client.connectTCP(this.o.host, { port: this.o.port, socket }).then(
        () => {
          if (gen !== this.generation || this.stopped) return;
          this.connects++;
          this.backoff.reset();
          this.setConnected(true);
        },
        () => {
          if (gen === this.generation) this.lost();
        },
      );
    });
    socket.once("close", () => clearTimeout(giveUp));
  }

  /** Follows the MBAP framing of what arrives; an impossible header means the stream is lost. */
  private track(d: Buffer): void {
    this.rx = this.rx.length === 0 ? d : Buffer.concat([this.rx, d]);
    while (this.rx.length >= 6) {
      const protocol = this.rx.readUInt16BE(2);
      const length = this.rx.readUInt16BE(4);
      if (protocol !== 0 || length < 3 || length > 254) return this.desync();
      if (this.rx.length < 6 + length) return;
      this.rx = this.rx.subarray(6 + length);
    }
  }

  private desync(): void {
    this.desyncs++;
    this.lost();
  }

  /** The connection is gone (or never came): settle what is in flight, retry after a backoff. */
  private lost(): void {
    this.closeConnection("connection lost");
    if (this.stopped || this.timer !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.stopped) this.connect();
    }, this.backoff.next());
  }

  /** Closes the connection and fails what is in flight as disconnected, with `why`. */
  private closeConnection(why: string): void {
    this.generation++; // late events from the old client are ignored from here on
    this.dispose();
    this.setConnected(false);
    for (const settle of this.inFlight.slice()) settle({ ok: false, kind: "disconnected", message: why });
  }

  private dispose(): void {
    const c = this.client;
    this.client = null;
    if (c !== null) {
      try {
        c.destroy(() => undefined); // cancels its pending transaction timers
      } catch {
        // already closed
      }
    }
    this.socket?.destroy();
    this.socket = null;
  }

  /** Drops the connection now (tests; the device "rebooted"); it reconnects after a backoff. */
  drop(): void {
    if (this.socket !== null) this.lost();
  }

  request(unitId: number, req: ModbusRequest, timeoutMs: number): Promise<ModbusOutcome> {
    const client = this.client;
    if (client === null || !this.connected) return Promise.resolve({ ok: false, kind: "disconnected", message: "not connected" });
    return new Promise((resolve) => {
      let done = false;
      const settle = (o: ModbusOutcome): void => {
        if (done) return;
        done = true;
        removeFrom(this.inFlight, settle);
        resolve(o);
      };
      this.inFlight.push(settle);
      client.setID(unitId);
      client.setTimeout(timeoutMs);
      const gen = this.generation;
      issueAndRelease(client, () => this.issue(client, req)).then(
        (data) => settle({ ok: true, data }),
        (err: unknown) => {
          const o = failure(err);
          settle(o); // reported as what it was (a timeout), before the connection goes
          // no answer in time while part of a frame waits: the stream is out of step (a plain
          // timeout with nothing buffered keeps the connection: a late answer is whole, and its
          // transaction id no longer matches anything)
          if (o.ok === false && o.kind === "timeout" && gen === this.generation && this.rx.length > 0) this.desync();
        },
      );
    });
  }

  private async issue(c: ModbusClient, r: ModbusRequest): Promise<number[]> {
    switch (r.fc) {
      case FC.READ_COILS:
        return (await c.readCoils(r.address, r.count)).data.slice(0, r.count).map(Number);
      case FC.READ_DISCRETE_INPUTS:
        return (await c.readDiscreteInputs(r.address, r.count)).data.slice(0, r.count).map(Number);
      case FC.READ_HOLDING_REGISTERS:
        return (await c.readHoldingRegisters(r.address, r.count)).data;
      case FC.READ_INPUT_REGISTERS:
        return (await c.readInputRegisters(r.address, r.count)).data;
      case FC.WRITE_SINGLE_COIL:
        await c.writeCoil(r.address, r.value !== 0);
        return [];
      case FC.WRITE_SINGLE_REGISTER:
        await c.writeRegister(r.address, r.value);
        return [];
      case FC.WRITE_MULTIPLE_COILS:
        await c.writeCoils(r.address, r.values.map((v) => v !== 0));
        return [];
      case FC.WRITE_MULTIPLE_REGISTERS:
        await c.writeRegisters(r.address, r.values);
        return [];
    }
  }

  stats(): TransportStats {
    return { desyncs: this.desyncs, strayBytes: 0 };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.closeConnection("stopped");
    await new Promise((r) => setImmediate(r));
  }
}
