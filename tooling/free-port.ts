// A free loopback TCP port, for peers that must be told a port up front (mosquitto, ServerTCP).
// The port is released before it is returned, so a race is possible but harmless on loopback.
import { readFileSync } from "node:fs";
import { connect, createServer, type AddressInfo } from "node:net";

export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, host, () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/**
 * A free loopback port below the kernel's ephemeral range, for a server that must come back on
 * the same port after it is killed: a port from listen(0) lies in that range, where the source
 * port of any outgoing connection (a client reconnecting meanwhile) or another listen(0) may
 * take it first (a NATS node restarted in the fleet test once found its port held). Ports are
 * drawn at random from [lowest, ephemeral start), so parallel runs rarely try the same one.
 */
export async function stablePort(host = "127.0.0.1", lowest = 20_000): Promise<number> {
  let ephemeralStart = 32_768;
  try {
    ephemeralStart = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || ephemeralStart;
  } catch {
    // not Linux: the common default
  }
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = lowest + Math.floor(Math.random() * Math.max(1, ephemeralStart - lowest));
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once("error", () => resolve(false));
      srv.listen(port, host, () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no free port in [${lowest}, ${ephemeralStart})`);
}

/** Whether something listens on a loopback port. */
export function portOpen(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, host);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}
