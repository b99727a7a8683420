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
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  return {
    aedes,
    port: actual,
    url: `mqtt://${host}:${actual}`,
    dropClients: () => {
      for (const s of sockets) s.destroy();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      await new Promise<void>((r) => aedes.close(() => r()));
    },
  };
}
