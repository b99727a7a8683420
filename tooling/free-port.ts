// A free loopback TCP port, for peers that must be told a port up front (mosquitto, ServerTCP).
// The port is released before it is returned, so a race is possible but harmless on loopback.
import { createServer, type AddressInfo } from "node:net";

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
