// Modbus RTU slave on a serial port (in tests, one end of a socat pty pair), serving several
// devices on one multi-drop bus by unit id. Frames are delimited by their known length and
// checked by CRC; a bad CRC drops one byte and resynchronises, as a line receiver would.
import { SerialPort } from "serialport";
import { crcOk, rtuRequestLength, withCrc } from "../../drivers/modbus/protocol.js";
import { Prng } from "../prng.js";
import type { FieldDevice } from "./field-device.js";
import { damageFrame } from "./line-noise.js";

export class ModbusRtuFront {
  private port: SerialPort | null = null;
  private buf = Buffer.alloc(0);
  private silence: NodeJS.Timeout | null = null;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly byUnit = new Map<number, FieldDevice<unknown>>();
  crcErrors = 0;
  frames = 0;
  /** answers damaged on their way out (a device's lineNoisePct) */
  damaged = 0;
  private readonly noise = new Prng(0x5e71a1);

  constructor(devices: readonly FieldDevice<unknown>[]) {
    for (const d of devices) this.byUnit.set(d.unitId, d);
  }

  /** a character's time on the wire, ms (11 bits: start, 8 data, parity or a second stop, stop); 0: none */
  private charMs = 0;

  /**
   * `wireTime`: a request is taken in once its last byte would have crossed a wire at `baudRate`,
   * and its answer's last byte reaches the master that much later again, as on a real line
   * (a pty carries bytes at once, whatever its rate): what the RTU leak bench measures against.
   */
  async open(path: string, baudRate: number, wireTime = false): Promise<void> {
    this.charMs = wireTime ? (11 * 1000) / baudRate : 0;
    const port = new SerialPort({ path, baudRate, autoOpen: false });
    await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
    this.port = port;
    port.on("data", (chunk: Buffer) => this.onData(chunk));
    port.on("error", () => undefined);
  }

  private onData(chunk: Buffer): void {
    this.buf = Buffer.concat([this.buf, chunk]);
    this.drain();
    // Anything left after a pause is a fragment that will never complete: discard it.
    if (this.silence !== null) clearTimeout(this.silence);
    this.silence = this.buf.length > 0 ? setTimeout(() => (this.buf = Buffer.alloc(0)), 20) : null;
  }

  private drain(): void {
    for (;;) {
      const len = rtuRequestLength(this.buf);
      if (len === 0 || len > this.buf.length) return;
      if (len < 0 || len > 256) {
        this.buf = this.buf.subarray(1);
        continue;
      }
      const frame = this.buf.subarray(0, len);
      if (!crcOk(frame)) {
        this.crcErrors++;
        this.buf = this.buf.subarray(1);
        continue;
      }
      this.buf = this.buf.subarray(len);
      this.frames++;
      this.later(len * this.charMs, () => this.handle(Buffer.from(frame)));
    }
  }

  private handle(frame: Buffer): void {
    const unit = frame[0];
    const pdu = frame.subarray(1, frame.length - 2);
    if (unit === 0) {
      for (const d of this.byUnit.values()) d.respond(pdu); // broadcast: act, never answer
      return;
    }
    const device = this.byUnit.get(unit);
    if (device === undefined) return;
    const response = device.respond(pdu);
    if (response === null) return;
    const good = withCrc(Buffer.concat([Buffer.from([unit]), response]));
    const noisy = device.faults.lineNoisePct > 0 && this.noise.chance(device.faults.lineNoisePct / 100);
    if (noisy) this.damaged++;
    const out = noisy ? damageFrame(good, this.noise) : good;
    const send = (): void => {
      if (this.port?.isOpen === true) this.port.write(out);
    };
    this.later(device.faults.slowMs + out.length * this.charMs, send);
  }

  /** Runs `f` after `ms`, or now for 0. */
  private later(ms: number, f: () => void): void {
    if (ms <= 0) return f();
    const t = setTimeout(() => {
      this.timers.delete(t);
      f();
    }, ms);
    this.timers.add(t);
  }

  async close(): Promise<void> {
    if (this.silence !== null) clearTimeout(this.silence);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    const port = this.port;
    this.port = null;
    if (port?.isOpen === true) await new Promise<void>((resolve) => port.close(() => resolve()));
  }
}
