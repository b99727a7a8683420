// Starting and stopping the small HTTP servers (metrics, admin socket, simulator control).
import type { Server } from "node:http";

/** Listens on a TCP port (0 = ephemeral) or, with no host, a Unix socket path; resolves with the port (or 0). */
export async function listenHttp(server: Server, target: { port: number; host: string } | { path: string }): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    if ("path" in target) server.listen(target.path, () => resolve());
    else server.listen(target.port, target.host, () => resolve());
  });
  const a = server.address();
  return typeof a === "object" && a !== null ? (a).port : 0;
}

/** Closes a server now: keep-alive connections too, so close() does not wait for clients to leave. */
export async function closeHttp(server: Server | null): Promise<void> {
  if (server === null) return;
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
}
