// Modbus TCP server in front of simulated devices. Raw sockets, no artificial delay: a
// response is written in the same turn of the event loop that completed its request (unless
// the device has a "slow" fault). modbus-serial's ServerTCP defers every request through a
// timer instead, which costs ~1 ms per request (see BENCHMARKS.md), so it is not used here.
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import type { FieldDevice } from "./field-device.js";

const MBAP_LEN = 7;

export class ModbusTcpFront {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  /** connections accepted since start, open or not */
  accepted = 0;
  private readonly byUnit = new Map<number, FieldDevice<unknown>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** frames dropped for a bad MBAP header */
  malformed = 0;
  /** connections reset by a `resetEvery` fault */
  resets = 0;
  /** answers written on each open connection (for `resetEvery`) */
  private readonly answered = new WeakMap<Socket, number>();

  constructor(devices: readonly FieldDevice<unknown>[]) {
    for (const d of devices) this.byUnit.set(d.unitId, d);
  }

  /** The single device, when this front serves one: it also answers unit ids 0 and 255. */
  private deviceFor(unit: number): FieldDevice<unknown> | undefined {
    const d = this.byUnit.get(unit);
    if (d !== undefined) return d;
    if (this.byUnit.size === 1 && (unit === 0 || unit === 255)) return this.byUnit.values().next().value;
    return undefined;
  }

  async listen(port: number, host = "127.0.0.1"): Promise<number> {
    const server = createServer({ noDelay: true }, (socket) => this.accept(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    return (server.address() as AddressInfo).port;
  }

  private accept(socket: Socket): void {
    this.sockets.add(socket);
    this.accepted++;
    socket.setNoDelay(true);
    let buf = Buffer.alloc(0);
    socket.on("data", (chunk) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      // TCP may split or join frames: take every complete frame, keep the rest
      while (buf.length >= MBAP_LEN) {
        const protocol = buf.readUInt16BE(2);
        const length = buf.readUInt16BE(4);
        if (protocol !== 0 || length < 2 || length > 254) {
          // a broken header means the stream is out of sync: drop the connection
          this.malformed++;
          socket.destroy();
          return;
        }
        if (buf.length < 6 + length) break;
        const frame = buf.subarray(0, 6 + length);
        buf = buf.subarray(6 + length);
        this.handle(socket, frame);
      }
    });
    socket.on("error", () => socket.destroy());
    socket.on("close", () => this.sockets.delete(socket));
  }

  private handle(socket: Socket, frame: Buffer): void {
    const unit = frame[6];
    const device = this.deviceFor(unit);
    if (device === undefined) return;
    const response = device.respond(Buffer.from(frame.subarray(7)));
    if (response === null) return;
    const out = Buffer.alloc(MBAP_LEN + response.length);
    frame.copy(out, 0, 0, 4); // transaction id and protocol id echoed
    out.writeUInt16BE(response.length + 1, 4);
    out[6] = unit;
    response.copy(out, MBAP_LEN);
    const slow = device.faults.slowMs;
    if (slow > 0) {
      const t = setTimeout(() => {
        this.timers.delete(t);
        if (!socket.destroyed) this.answer(socket, out, device);
      }, slow);
      this.timers.add(t);
    } else {
      this.answer(socket, out, device);
    }
  }

  /** Writes an answer; with a `resetEvery` fault, every n-th on a connection is followed by a reset. */
  private answer(socket: Socket, out: Buffer, device: FieldDevice<unknown>): void {
    const every = device.faults.resetEvery;
    if (every <= 0) {
      socket.write(out);
      return;
    }
    const n = (this.answered.get(socket) ?? 0) + 1;
    this.answered.set(socket, n);
    if (n % every !== 0) {
      socket.write(out);
      return;
    }
    this.resets++;
    // the answer goes out, then an RST: the master sees its answer and then a reset connection
    socket.write(out, () => socket.resetAndDestroy());
  }

  /** connections open now */
  get connections(): number {
    return this.sockets.size;
  }

  /** Drops every open connection (a device reboot, as far as masters can tell). */
  dropConnections(): void {
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.dropConnections();
    const server = this.server;
    this.server = null;
    if (server !== null) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
