// Modbus RTU master on a serial port (serialport), one request at a time per bus.
//
// RTU has no transaction id, so the only protection against a late answer being taken for the
// next request is time: after a timeout the bus stays quiet for `guardMs` (the device may still
// answer), and after a bad frame until the line has been silent for `interFrameMs` (the rest of
// the damaged answer, or of a neighbour's late one, is still arriving). Bytes arriving while no
// request waits are discarded and push that silence on. The receive buffer is flushed before
// every request. A bad frame once held the bus for the whole `guardMs` as well: 100 ms per
// damaged answer, on a line damaging 30 % of them, kept a leaking rack's isolation writes
// queued for seconds (docs/hil.md, rtu-line-noise-rack-2). A frame is accepted only if it starts at the first byte after
// the request, comes from the addressed unit, answers the function code sent, has exactly the
// expected length and a good CRC. modbus-serial's buffered RTU port scans its buffer for any
// matching unit and function code instead, which can pick up a stale or misaligned frame; that
// is why this transport is our own. The port itself is a serial link (serial-link.ts): read on
// the loop of whichever thread runs the transport, but for RTS direction control.
import { isMainThread } from "node:worker_threads";
import { monoMs } from "../../lib/clock.js";
import { Backoff } from "../../lib/backoff.js";
import { ConnectionState } from "./connection-state.js";
import { encodeRequest, parseResponse, responseLength } from "./master-pdu.js";
import { crcOk, withCrc } from "./protocol.js";
import { framingName, type SerialFraming } from "./serial-line.js";
import { serialportLink, ttyLink, type SerialLink } from "./serial-link.js";
import type { ModbusOutcome, ModbusRequest, ModbusTransport, TransportStats } from "./types.js";

export interface RtuTransportOptions {
  path: string;
  baudRate: number;
  /** data bits, parity, stop bits (serial-line.ts): set on the port as it opens */
  framing: SerialFraming;
  /** rts: RTS raised while a request is sent, dropped once it is out (software direction control) */
  rs485: "none" | "rts";
  /** silence after a timeout before the next request, ms */
  guardMs: number;
  /** a partial frame followed by this much silence is a truncated frame; after a bad frame or stray bytes, the silence the line needs before the next request, ms */
  interFrameMs: number;
  reconnect: { baseMs: number; maxMs: number };
}

interface Exchange {
  unit: number;
  req: ModbusRequest;
  settle(o: ModbusOutcome): void;
}

export class RtuTransport extends ConnectionState implements ModbusTransport {
  readonly maxInFlight = 1;
  private port: SerialLink | null = null;
  /** an open in progress: its link is closed at once if the transport stopped or moved on meanwhile */
  private opening: object | null = null;
  private stopped = true;
  private buf: Buffer = Buffer.alloc(0);
  private current: Exchange | null = null;
  private quietUntil = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private reopenTimer: NodeJS.Timeout | null = null;
  private gapTimer: NodeJS.Timeout | null = null;
  private readonly backoff: Backoff;
  /** bytes that arrived while no request waited for them (a late answer, line noise) */
  strayBytes = 0;
  /** a good answer has come since the port opened */
  private answeredSinceOpen = false;
  /** damaged answers (bytes that made no good frame) since the last good one */
  private damagedRun = 0;
  /** RTS could not be set on this port (rs485: rts): said in each timeout's message */
  private rtsProblem: string | null = null;
  /** the port did not open, or did not take all of its framing (serial-link.ts): said with each failure */
  private lineProblem: string | null = null;

  constructor(private readonly o: RtuTransportOptions) {
    super();
    this.backoff = new Backoff(o.reconnect);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.open();
  }

  private open(): void {
    const o = this.o;
    if (o.rs485 === "rts" && !isMainThread) {
      // the config loader keeps such a bus on the main thread (serial-link.ts); never reached
      this.rtsProblem = `RTS direction control on ${o.path} needs the main thread`;
      this.lost();
      return;
    }
    this.answeredSinceOpen = false;
    this.damagedRun = 0;
    const attempt = {};
    this.opening = attempt;
    const events = {
      data: (chunk: Buffer) => {
        if (this.port === link) this.onData(chunk);
      },
      lost: () => {
        if (this.port === link) this.lost();
      },
    };
    let link: SerialLink | null = null;
    const opened = (o.rs485 === "rts" ? serialportLink : ttyLink)({ path: o.path, baudRate: o.baudRate, framing: o.framing }, events);
    opened.then(
      (l) => {
        if (this.opening !== attempt || this.stopped) return void l.close();
        this.opening = null;
        link = l;
        this.port = l;
        this.lineProblem = l.problem;
        this.backoff.reset();
        this.setConnected(true);
      },
      (e: Error) => {
        if (this.opening !== attempt) return;
        this.opening = null;
        this.lineProblem = `cannot open ${o.path}: ${e.message}`;
        this.lost();
      },
    );
  }

  private lost(): void {
    const port = this.port;
    this.port = null;
    if (port !== null) void port.close();
    this.setConnected(false);
    this.finish({ ok: false, kind: "disconnected", message: "serial port closed" });
    if (this.stopped || this.reopenTimer !== null) return;
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = null;
      if (!this.stopped) this.open();
    }, this.backoff.next());
  }

  private onData(chunk: Buffer): void {
    const now = monoMs();
    if (this.current === null || now < this.quietUntil) {
      this.strayBytes += chunk.length; // nobody asked: a late answer or line noise
      this.quietUntil = Math.max(this.quietUntil, now + this.o.interFrameMs);
      return;
    }
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    this.tryFrame();
  }

  private tryFrame(): void {
    const ex = this.current;
    if (ex === null) return;
    const b = this.buf;
    // another unit's frame, or a good frame with more behind it: a neighbour's late answer is on
    // the wire, which says nothing about the addressed device (kind "collision")
    if (b.length >= 1 && b[0] !== ex.unit) return this.corrupt(`unit ${b[0]} answered for ${ex.unit}`, "collision");
    if (b.length >= 2) {
      const isException = b[1] === (ex.req.fc | 0x80);
      if (!isException && b[1] !== ex.req.fc) return this.corrupt(`function code ${b[1]}`);
      const want = 1 + (isException ? 2 : responseLength(ex.req)) + 2;
      if (b.length >= want) {
        if (b.length > want) return this.corrupt("trailing bytes after the frame", crcOk(b.subarray(0, want)) ? "collision" : "corrupt");
        if (!crcOk(b)) return this.corrupt("CRC error");
        this.answeredSinceOpen = true;
        this.damagedRun = 0;
        this.finish(parseResponse(ex.req, b.subarray(1, want - 2)));
        return;
      }
    }
    // incomplete: a silence now means the frame was truncated
    if (this.gapTimer !== null) clearTimeout(this.gapTimer);
    this.gapTimer = setTimeout(() => {
      this.gapTimer = null;
      if (this.current === ex && this.buf.length > 0) this.corrupt("truncated frame");
    }, this.o.interFrameMs);
  }

  private corrupt(why: string, kind: "corrupt" | "collision" = "corrupt"): void {
    this.quietUntil = monoMs() + this.o.interFrameMs;
    this.damagedRun++;
    this.finish({ ok: false, kind, message: `${why}${this.framingHint()}` });
  }

  /**
   * A line whose every answer arrives damaged, and none good since the port opened, is most
   * likely framed differently from its devices (a parity or stop-bit mismatch turns every
   * answer's bytes into framing errors, a baud mismatch into garbage), not noisy: a noisy line
   * lets a good answer through now and then. Said in the device's health, so that the engineer
   * reads "framing", not "timeout" or "CRC error" alone.
   */
  private framingHint(): string {
    if (this.answeredSinceOpen || this.damagedRun < 3) return "";
    // short: the device's health keeps 200 characters of a message
    return `; ${this.damagedRun} damaged, none good since the port opened: framing mismatch? (bus ${this.o.baudRate} ${framingName(this.o.framing)}; check the devices' baud, parity, stop bits)${this.portProblems()}`;
  }

  /** What is wrong with the port itself, after a failure's own words: RTS, its framing, its opening. */
  private portProblems(): string {
    return [this.rtsProblem, this.lineProblem].map((p) => (p === null ? "" : `; ${p}`)).join("");
  }

  private finish(o: ModbusOutcome): void {
    if (this.gapTimer !== null) clearTimeout(this.gapTimer);
    this.gapTimer = null;
    this.buf = Buffer.alloc(0);
    const ex = this.current;
    this.current = null;
    ex?.settle(o);
  }

  request(unitId: number, req: ModbusRequest, timeoutMs: number): Promise<ModbusOutcome> {
    // one exchange at a time, even if a caller forgets: requests queue behind each other
    const result = this.chain.then(() => this.exchange(unitId, req, timeoutMs));
    this.chain = result;
    return result;
  }

  private async exchange(unit: number, req: ModbusRequest, timeoutMs: number): Promise<ModbusOutcome> {
    // wait out the quiet, which stray bytes push on; a line that never falls silent (a babbling
    // device) holds the request at most its own timeout past the quiet first owed, then it goes
    const giveUpAt = Math.max(this.quietUntil, monoMs()) + timeoutMs;
    for (let now = monoMs(); now < this.quietUntil && now < giveUpAt; now = monoMs()) {
      const wait = Math.min(this.quietUntil, giveUpAt) - now;
      await new Promise((r) => setTimeout(r, wait));
    }
    const port = this.port;
    if (port === null || !this.connected) return { ok: false, kind: "disconnected", message: `serial port not open${this.portProblems()}` };
    return new Promise<ModbusOutcome>((resolve) => {
      const timer = setTimeout(() => {
        if (this.current?.settle !== settle) return;
        this.quietUntil = monoMs() + this.o.guardMs;
        this.finish({ ok: false, kind: "timeout", message: `timed out${this.portProblems()}` });
      }, timeoutMs);
      const settle = (o: ModbusOutcome): void => {
        clearTimeout(timer);
        resolve(o);
      };
      this.buf = Buffer.alloc(0);
      this.current = { unit, req, settle };
      const frame = withCrc(Buffer.concat([Buffer.from([unit]), encodeRequest(req)]));
      if (port.writeWithRts !== undefined) port.writeWithRts(frame, (why) => (this.rtsProblem ??= why));
      else if (!port.write(frame)) this.finish({ ok: false, kind: "disconnected", message: "the serial port did not take the frame" });
    });
  }

  stats(): TransportStats {
    return { desyncs: 0, strayBytes: this.strayBytes };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.reopenTimer !== null) clearTimeout(this.reopenTimer);
    this.reopenTimer = null;
    this.finish({ ok: false, kind: "disconnected", message: "stopped" });
    this.opening = null;
    const port = this.port;
    this.port = null;
    this.setConnected(false);
    if (port !== null) await port.close();
  }
}
