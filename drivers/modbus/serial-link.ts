// A serial port as the RTU transport sees it: bytes in, frames out, a close. Two ways to open one:
//
// - `ttyLink`, on any thread: the device opened with node:fs, its line set by stty(1), its bytes
//   read through a node:tty stream on the calling thread's own event loop.
// - `serialportLink`, on the main thread only, for software RS-485 direction control (RTS).
//
// Why two: serialport's native binding (@serialport/bindings-cpp 13.0.0, src/poller.cpp) waits
// for a port's bytes with uv_poll_init(uv_default_loop(), ...), the main thread's loop, whatever
// thread opened the port. In a worker thread the bytes never arrived (measured: a worker's port
// over a socat pty got no 'data' event in 3 s while the main thread wrote to the other end), and
// the poller's handle is put on the main loop from the worker's thread, a data race. The leak
// thread and the control plane's thread must own their serial buses (issue #52, the leak path on
// every transport), so they read through the loop of their own thread. RTS is an ioctl node has
// no other way to reach, so a bus that toggles RTS in software stays with serialport, on the
// main thread.
import { execFile } from "node:child_process";
import { closeSync, constants, openSync, writeSync } from "node:fs";
import { ReadStream } from "node:tty";
import { promisify } from "node:util";
import { SerialPort } from "serialport";
import type { SerialFraming } from "./serial-line.js";

export interface SerialLinkEvents {
  data(chunk: Buffer): void;
  /** the port is gone (unplugged, closed under us): the transport reopens it */
  lost(): void;
}

export interface SerialLink {
  /** what of the framing asked for the port did not take (null: all of it) */
  readonly problem: string | null;
  /** Puts a frame on the line; false when the port did not take it whole. */
  write(frame: Buffer): boolean;
  /** RS-485 direction by RTS around a frame (serialportLink only); the callback gets why it could not */
  writeWithRts?(frame: Buffer, problem: (why: string) => void): void;
  close(): Promise<void>;
}

export interface SerialOpen {
  path: string;
  baudRate: number;
  framing: SerialFraming;
}

const run = promisify(execFile);

/**
 * The line settings serialport's binding makes (bindings-cpp serialport_unix.cpp): raw bytes,
 * no echo, no flow control, ignore modem lines, bytes with parity errors dropped (so a parity
 * mismatch shows as damaged frames, as with serialport), and the framing asked for.
 */
export function sttyArgs(o: SerialOpen): string[] {
  const f = o.framing;
  return [
    "-F",
    o.path,
    String(o.baudRate),
    "raw",
    "-echo",
    "cs8",
    f.parity === "none" ? "-parenb" : "parenb",
    f.parity === "odd" ? "parodd" : "-parodd",
    f.stopBits === 2 ? "cstopb" : "-cstopb",
    "ignpar",
    "-crtscts",
    "clocal",
    "cread",
    "hupcl",
  ];
}

async function setLine(o: SerialOpen): Promise<void> {
  try {
    await run("stty", sttyArgs(o), { timeout: 5000 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`stty: ${(e.stderr ?? "").trim().replace(/^stty: [^:]*: /, "") || e.message}`, { cause: err });
  }
}

/** Opens a serial device on the calling thread's event loop (any thread). */
export async function ttyLink(o: SerialOpen, on: SerialLinkEvents): Promise<SerialLink> {
  // non-blocking: a write never holds the thread (a frame the output buffer cannot take is refused)
  const fd = openSync(o.path, constants.O_RDWR | constants.O_NOCTTY | constants.O_NONBLOCK);
  let problem: string | null = null;
  try {
    // with our descriptor open: a pty's settings reset when its last descriptor closes
    await setLine(o);
  } catch (err) {
    // A port that cannot take the parity (a pty has none; some UARTs have no odd parity) runs
    // without it rather than not at all, as serialport's binding did without a word: here it
    // is said, in the device's health beside a framing mismatch it causes (rtu-transport.ts).
    try {
      if (o.framing.parity === "none") throw err;
      await setLine({ ...o, framing: { ...o.framing, parity: "none" } });
      problem = `${o.path} did not take ${o.framing.parity} parity (${(err as Error).message}): it runs without parity`;
    } catch (again) {
      closeSync(fd);
      throw again;
    }
  }
  // node:tty reads on this thread's loop; it owns the descriptor from here and closes it
  const stream = new ReadStream(fd);
  let open = true;
  const gone = (): void => {
    if (!open) return;
    open = false;
    on.lost();
  };
  stream.on("data", (chunk: Buffer) => on.data(chunk));
  stream.on("error", gone);
  stream.on("end", gone);
  stream.on("close", gone);
  return {
    problem,
    write(frame) {
      if (!open) return false;
      try {
        return writeSync(fd, frame) === frame.length;
      } catch {
        return false; // EAGAIN: the output buffer is full; EIO: the port went away
      }
    },
    close() {
      open = false;
      if (stream.destroyed) return Promise.resolve();
      return new Promise<void>((r) => {
        stream.once("close", () => r());
        stream.destroy();
      });
    },
  };
}

/** Opens a serial device with serialport, for RTS direction control: main thread only (see above). */
export function serialportLink(o: SerialOpen, on: SerialLinkEvents): Promise<SerialLink> {
  const { dataBits, parity, stopBits } = o.framing;
  const port = new SerialPort({ path: o.path, baudRate: o.baudRate, dataBits, parity, stopBits, autoOpen: false });
  let open = false;
  port.on("data", (chunk: Buffer) => on.data(chunk));
  port.on("error", () => undefined);
  port.on("close", () => {
    if (!open) return;
    open = false;
    on.lost();
  });
  return new Promise((resolve, reject) =>
    port.open((err) => {
      if (err) return reject(err);
      open = true;
      resolve({
        problem: null,
        write(frame) {
          if (!open) return false;
          port.write(frame);
          return true;
        },
        // raised, the frame written, dropped once the kernel says the frame is out (tcdrain)
        writeWithRts(frame, problem) {
          port.set({ rts: true }, (e) => {
            if (e !== null && e !== undefined) problem(`RTS cannot be set on ${o.path} (${e.message})`);
            port.write(frame);
            port.drain(() => port.set({ rts: false }, () => undefined));
          });
        },
        close() {
          open = false;
          if (!port.isOpen) return Promise.resolve();
          return new Promise<void>((r) => port.close(() => r()));
        },
      });
    }),
  );
}
