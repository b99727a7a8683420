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
  /**
   * cuts every connection off but those `keep` names (by the client's port), as a network
   * partition does: nothing crosses either way, in a connection open now or opened later, while
   * the broker runs on for the rest. Its keepalive timer ends a cut-off client's session and
   * publishes its Will; the client learns nothing of that until `heal()`, and from its own
   * keepalive that the link is silent
   */
  partition(keep: (client: { remotePort: number | undefined }) => boolean): void;
  /** the partition heals: what waited crosses, in order */
  heal(): void;
  /**
   * writes `bytes` of the caller's into every connection `to` names (by the client's port) and
   * that is not silent, between the packets aedes writes, as a broker that breaks the protocol
   * would; returns how many got them
   */
  injectRaw(bytes: Buffer, to: (client: { remotePort: number | undefined }) => boolean): number;
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
  // a connection is silent while the broker hangs, or while a partition cuts it off: what its
  // client sends waits in the kernel, and what aedes does to it waits in `held`
  let hung = false;
  let partition: ((s: Socket) => boolean) | null = null;
  const links = new Map<Socket, { held: (() => void)[] }>();
  const silent = (socket: Socket): boolean => hung || (partition !== null && !partition(socket));
  const link = (socket: Socket): Duplex => {
    const me = { held: [] as (() => void)[] };
    links.set(socket, me);
    const hold = (f: () => void): void => {
      if (silent(socket)) me.held.push(f);
      else f();
    };
    const d = new Duplex({
      read: () => {
        if (!silent(socket)) socket.resume();
      },
      write: (chunk: Buffer, _enc, cb) => {
        if (silent(socket)) {
          me.held.push(() => {
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
    if (silent(socket)) socket.pause();
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
  /** every connection that is no longer silent gets what waited for it, and reads again */
  const wake = (): void => {
    for (const [socket, me] of links) {
      if (silent(socket)) continue;
      for (const f of me.held.splice(0)) f();
      if (socket.destroyed) links.delete(socket);
      else socket.resume();
    }
  };
  const server: Server = createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.on("close", () => {
      sockets.delete(socket);
      // a silent connection's close waits in its held list until it wakes
      if (!silent(socket)) links.delete(socket);
    });
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
      wake();
    },
    partition: (keep) => {
      partition = (s) => keep({ remotePort: s.remotePort });
      for (const s of sockets) if (silent(s)) s.pause();
    },
    heal: () => {
      partition = null;
      wake();
    },
    injectRaw: (bytes, to) => {
      let n = 0;
      for (const s of sockets) {
        if (s.destroyed || silent(s) || !to({ remotePort: s.remotePort })) continue;
        s.write(bytes);
        n++;
      }
      return n;
    },
    close: async () => {
      await stopListening();
      await new Promise<void>((r) => aedes.close(() => r()));
    },
  };
}
