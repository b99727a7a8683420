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

  async open(path: string, baudRate: number): Promise<void> {
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
      this.handle(Buffer.from(frame));
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
    if (device.faults.slowMs > 0) {
      const t = setTimeout(() => {
        this.timers.delete(t);
        send();
      }, device.faults.slowMs);
      this.timers.add(t);
    } else {
      send();
    }
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
