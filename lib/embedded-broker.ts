// An in-process MQTT broker (aedes) on loopback: the demo's broker, and a real broker for tests.
// Sockets get no-delay: with Nagle on, loopback publishes showed a 35–44 ms tail.
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
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
  close(): Promise<void>;
}

export async function startEmbeddedBroker(port = 0, host = "127.0.0.1"): Promise<EmbeddedBroker> {
  const aedes = await Aedes.createBroker();
  const sockets = new Set<Socket>();
  const server: Server = createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    aedes.handle(socket);
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
    close: async () => {
      await stopListening();
      await new Promise<void>((r) => aedes.close(() => r()));
    },
  };
}
