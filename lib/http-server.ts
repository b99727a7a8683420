// Starting and stopping the small HTTP servers (metrics, admin socket, simulator control, the
// HMI, the Redfish service).
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { readFileBounded } from "./bounded-read.js";

/**
 * An HTTP server, or HTTPS with the certificate given, whose requests are bounded before the
 * handler sees them: header bytes, and the time a client may take to send its headers and its
 * request (a slow client cannot hold a connection open).
 */
export function boundedServer(o: { maxHeaderBytes: number; tls?: { certFile: string; keyFile: string } }, handler: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const options = { maxHeaderSize: o.maxHeaderBytes, requestTimeout: 10_000, headersTimeout: 5_000 };
  return o.tls === undefined ? createHttpServer(options, handler) : createHttpsServer({ ...options, cert: readFileBounded(o.tls.certFile), key: readFileBounded(o.tls.keyFile) }, handler);
}

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
