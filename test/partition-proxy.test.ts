// The fault tests' partition proxy must act as a partition does: behind a drop the far end's
// FIN never arrives, so a client only finds out by its own watch, and learns of a connection the
// far end gave up when the link heals (a wrong FIN made an MQTT client's silence watch flaky).
import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { PartitionProxy } from "../tooling/partition-proxy.js";
import { waitFor } from "../tooling/processes.js";

describe("PartitionProxy", () => {
  const stops: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const s of stops.splice(0).reverse()) await s();
  });

  async function upstreamServer(): Promise<{ server: Server; port: number; sockets: Socket[] }> {
    const sockets: Socket[] = [];
    const server = createServer((s) => {
      sockets.push(s);
      s.on("error", () => undefined);
      s.on("data", (d) => s.write(d)); // echo
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    stops.push(() => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }));
    return { server, port: (server.address() as AddressInfo).port, sockets };
  }

  async function client(port: number): Promise<{ socket: Socket; got: Buffer[]; closed: () => boolean; errors: string[] }> {
    const got: Buffer[] = [];
    const errors: string[] = [];
    let closed = false;
    const socket = connect({ port, host: "127.0.0.1" });
    socket.on("data", (d) => got.push(d));
    socket.on("error", (e: NodeJS.ErrnoException) => errors.push(e.code ?? e.message));
    socket.on("close", () => (closed = true));
    await new Promise<void>((r) => socket.once("connect", () => r()));
    stops.push(() => void socket.destroy());
    return { socket, got, closed: () => closed, errors };
  }

  it("keeps a client in silence when the far end gives it up during a drop, and resets it when the link heals", async () => {
    const up = await upstreamServer();
    const proxy = new PartitionProxy(up.port);
    await proxy.listen();
    stops.push(() => proxy.close());
    const c = await client(proxy.port);
    c.socket.write("a");
    await waitFor(() => Buffer.concat(c.got).toString() === "a", "echo through the link");
    proxy.setMode("drop");
    c.socket.write("b"); // vanishes
    await waitFor(() => up.sockets.length === 1, "upstream connection seen");
    up.sockets[0].destroy(); // the far end gives the client up
    await waitFor(() => proxy.silenced === 1, "the proxy saw the far end close");
    expect(c.closed()).toBe(false);
    expect(Buffer.concat(c.got).toString()).toBe("a");
    proxy.setMode("pass");
    await waitFor(() => c.closed(), "client reset on the heal");
    expect(c.errors).toContain("ECONNRESET");
  });

  it("passes the far end's close on while the link passes", async () => {
    const up = await upstreamServer();
    const proxy = new PartitionProxy(up.port);
    await proxy.listen();
    stops.push(() => proxy.close());
    const c = await client(proxy.port);
    await waitFor(() => up.sockets.length === 1, "upstream connection seen");
    up.sockets[0].end();
    await waitFor(() => c.closed(), "client closed with the far end");
  });
});
