// An in-process MQTT broker (aedes) on loopback: the demo's broker, and a real broker for tests.
// Sockets get no-delay: with Nagle on, loopback publishes showed a 35–44 ms tail.
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { Duplex } from "node:stream";
import { Aedes } from "aedes";

export interface EmbeddedBroker {
  aedes: Aedes;
  port: number;
  url: string;
  /** drops every client connection (a broker restart, as clients see it) */
  dropClients(): void;
  /**
   * stops listening and drops every connection: a broker gone. It keeps its sessions and
   * retained messages, as a broker restarted with persistence does, for `up()`
   */
  down(): Promise<void>;
  /** listens again on the same port */
  up(): Promise<void>;
  /**
   * hangs, as a broker stopped with SIGSTOP does: connections stay open and new ones are taken
   * (the kernel's backlog does that for a stopped process), but nothing is read or answered, so a
   * client finds out only from its keepalive, and what it sent meanwhile is unacknowledged
   */
  hang(): void;
  /** goes on (SIGCONT): reads what waited in every connection still open */
  resume(): void;
  close(): Promise<void>;
}

export async function startEmbeddedBroker(port = 0, host = "127.0.0.1"): Promise<EmbeddedBroker> {
  const aedes = await Aedes.createBroker();
  const sockets = new Set<Socket>();
  // hang(): each connection reaches aedes through a stream of our own. While the broker hangs its
  // sockets are paused, so what clients send waits in the kernel as it would for a stopped
  // process, and what aedes does to a connection (a write, an end, a destroy) is held until it
  // goes on. Pausing the socket under aedes would not do it (aedes pipes it, and a piped stream
  // resumes when its destination drains), and aedes' own keepalive timer would end a silent
  // client's connection, which a stopped broker cannot: with the timer's close held too, the
  // client finds out from its own keepalive, as it would. Backpressure crosses the stream both
  // ways, as when aedes had the socket itself.
  let hung = false;
  const held: (() => void)[] = [];
  const hold = (f: () => void): void => {
    if (hung) held.push(f);
    else f();
  };
  const link = (socket: Socket): Duplex => {
    const d = new Duplex({
      read: () => {
        if (!hung) socket.resume();
      },
      write: (chunk: Buffer, _enc, cb) => {
        if (hung) {
          held.push(() => {
            if (!socket.destroyed) socket.write(chunk);
          });
          cb();
        } else if (socket.destroyed || socket.write(chunk)) cb();
        // the socket's backpressure reaches aedes, as when it wrote to the socket itself
        else socket.once("drain", () => cb());
      },
      final: (cb) => {
        hold(() => socket.end());
        cb();
      },
      destroy: (err, cb) => {
        hold(() => socket.destroy());
        cb(err);
      },
    });
    let ended = false;
    const end = (): void => {
      if (!ended) d.push(null);
      ended = true;
    };
    socket.on("data", (chunk: Buffer) => {
      if (!d.push(chunk)) socket.pause();
    });
    if (hung) socket.pause();
    socket.on("end", () => hold(end));
    // what arrived before the close (a DISCONNECT, a PUBLISH sent into a hang) is read first:
    // destroying the stream at once would drop it unread, and aedes would send a Will it should not
    socket.on("close", () =>
      hold(() => {
        end();
        if (d.readableEnded) d.destroy();
        else {
          d.once("end", () => d.destroy());
          // aedes stops reading a connection it has given up on: do not wait for it for ever
          setTimeout(() => d.destroy(), 5000).unref();
        }
      }),
    );
    socket.on("error", () => undefined);
    return d;
  };
  const server: Server = createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    aedes.handle(link(socket));
  });
  const listen = (p: number): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(p, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  const stopListening = async (): Promise<void> => {
    for (const s of sockets) s.destroy();
    if (server.listening) await new Promise<void>((r) => server.close(() => r()));
  };
  await listen(port);
  const actual = (server.address() as AddressInfo).port;
  return {
    aedes,
    port: actual,
    url: `mqtt://${host}:${actual}`,
    dropClients: () => {
      for (const s of sockets) s.destroy();
    },
    down: stopListening,
    up: () => (server.listening ? Promise.resolve() : listen(actual)),
    hang: () => {
      hung = true;
      for (const s of sockets) s.pause();
    },
    resume: () => {
      hung = false;
      for (const f of held.splice(0)) f();
      for (const s of sockets) s.resume();
    },
    close: async () => {
      await stopListening();
      await new Promise<void>((r) => aedes.close(() => r()));
    },
  };
}
