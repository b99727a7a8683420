// A TCP proxy on loopback that can partition the link it carries, for fault tests and the soak:
//   pass    forward both ways
//   drop    black-hole: bytes vanish both ways and new connections get no answer, like an
//           iptables DROP (the client sees silence, never a reset)
//   reject  every connection is reset at once and new ones are refused, like an iptables REJECT
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";

export type PartitionMode = "pass" | "drop" | "reject";

export class PartitionProxy {
  private server: Server | null = null;
  private readonly pairs = new Set<[Socket, Socket]>();
  mode: PartitionMode = "pass";
  port = 0;

  constructor(private readonly targetPort: number) {}

  async listen(): Promise<void> {
    this.server = createServer({ noDelay: true }, (client) => {
      client.on("error", () => undefined);
      if (this.mode === "reject") return void client.resetAndDestroy();
      const upstream = connect({ port: this.targetPort, host: "127.0.0.1", noDelay: true });
      upstream.on("error", () => client.destroy());
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      const close = (): void => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on("close", close);
      upstream.on("close", close);
      client.on("data", (d: Buffer) => {
        if (this.mode === "pass") upstream.write(d);
      });
      upstream.on("data", (d: Buffer) => {
        if (this.mode === "pass") client.write(d);
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, "127.0.0.1", () => r()));
    this.port = (this.server.address() as AddressInfo).port;
  }

  setMode(mode: PartitionMode): void {
    this.mode = mode;
    if (mode !== "reject") return;
    for (const [c, u] of [...this.pairs]) {
      c.resetAndDestroy();
      u.destroy();
    }
  }

  async close(): Promise<void> {
    for (const [c, u] of [...this.pairs]) {
      c.destroy();
      u.destroy();
    }
    await new Promise<void>((r) => (this.server === null ? r() : this.server.close(() => r())));
  }
}
