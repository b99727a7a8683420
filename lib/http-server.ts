// Starting and stopping the small HTTP servers (metrics, admin socket, simulator control, the
// HMI, the Redfish service, the Redfish client's event listener), and bounding what the network
// may hold open on them and what a request's body may be.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Socket } from "node:net";
import { readFileBounded } from "./bounded-read.js";

/** What a bounded server may hold open, and how long a client may take. */
export interface ConnectionLimits {
  /** connections open at once from everywhere; one more is closed as it is accepted */
  maxConnections: number;
  /** connections open at once from one address; one more is closed as it is accepted */
  maxPerAddress: number;
}

/**
 * How long a client may take, ms. Node checks these on the thread that serves the requests, by
 * walking every open connection once each `connectionsCheckingInterval` (30 s by default): with
 * 16k half-open connections that walk put every control loop in fail-safe (issue #49). With the
 * connection caps the walk is over at most `maxConnections`, so it runs every 250 ms and the
 * timeouts fire about when they say.
 */
export const CLIENT_TIMEOUTS = {
  /** to send the request's headers, from the connection's start */
  headersMs: 1000,
  /** to send the whole request, body included (a login, an action: a few hundred bytes) */
  requestMs: 2000,
  /** idle between two requests on a kept-alive connection */
  keepAliveMs: 1000,
  /** a TLS client's handshake */
  handshakeMs: 2000,
  checkEveryMs: 250,
} as const;

/** Counts of connections refused by the caps, since the start. */
export interface ConnectionCounts {
  open: number;
  refusedTotal: number;
  refusedPerAddress: number;
}

export type BoundedServer = Server & { connectionCounts(): ConnectionCounts };

/**
 * An HTTP server, or HTTPS with the certificate given, whose requests are bounded before the
 * handler sees them: header bytes, the time a client may take to send its headers and its
 * request, and the connections open at once, in all and per address. A connection beyond a cap
 * is closed as it is accepted, before a byte of it is read.
 */
export function boundedServer(o: { maxHeaderBytes: number; tls?: { certFile: string; keyFile: string }; limits: ConnectionLimits }, handler: (req: IncomingMessage, res: ServerResponse) => void): BoundedServer {
  const options = {
    maxHeaderSize: o.maxHeaderBytes,
    headersTimeout: CLIENT_TIMEOUTS.headersMs,
    requestTimeout: CLIENT_TIMEOUTS.requestMs,
    keepAliveTimeout: CLIENT_TIMEOUTS.keepAliveMs,
    connectionsCheckingInterval: CLIENT_TIMEOUTS.checkEveryMs,
  };
  const server =
    o.tls === undefined
      ? createHttpServer(options, handler)
      : createHttpsServer({ ...options, handshakeTimeout: CLIENT_TIMEOUTS.handshakeMs, cert: readFileBounded(o.tls.certFile), key: readFileBounded(o.tls.keyFile) }, handler);
  const counts: ConnectionCounts = { open: 0, refusedTotal: 0, refusedPerAddress: 0 };
  const perAddress = new Map<string, number>();
  // node closes a connection beyond maxConnections itself, and says so with "drop"
  server.maxConnections = o.limits.maxConnections;
  server.on("drop", () => counts.refusedTotal++);
  server.on("connection", (socket: Socket) => {
    const from = socket.remoteAddress ?? "?";
    const n = perAddress.get(from) ?? 0;
    if (n >= o.limits.maxPerAddress) {
      counts.refusedPerAddress++;
      socket.destroy();
      return;
    }
    perAddress.set(from, n + 1);
    counts.open++;
    socket.once("close", () => {
      counts.open--;
      const left = (perAddress.get(from) ?? 1) - 1;
      if (left <= 0) perAddress.delete(from);
      else perAddress.set(from, left);
    });
  });
  return Object.assign(server, { connectionCounts: () => ({ ...counts }) });
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

/**
 * The request's body, at most `maxBytes`: a declared length beyond it is refused before a byte
 * is read, and a body that grows beyond it is cut off there. null when too large.
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | null> {
  const declared = Number(req.headers["content-length"] ?? "0");
  if (!(declared <= maxBytes)) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on("data", (d: Buffer) => {
      size += d.length;
      if (size > maxBytes) {
        req.removeAllListeners("data");
        req.pause();
        resolve(null);
        return;
      }
      parts.push(d);
    });
    req.once("end", () => resolve(Buffer.concat(parts)));
    req.once("error", reject);
  });
}
