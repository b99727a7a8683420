// One BMC's HTTP(S) connection pool (undici), with its certificate pinned and every answer's
// size bounded before it is parsed. No Redfish semantics here: requests in, status and JSON out.
import { readFileSync } from "node:fs";
import type { TLSSocket } from "node:tls";
import { buildConnector, Pool, type Dispatcher } from "undici";
import type { RedfishDeviceConfig } from "./config.js";

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** the parsed JSON body (null: empty, or not JSON) */
  json: unknown;
}

/** A request that got no HTTP answer: the quality it gives its points, and why. */
export class HttpFailure extends Error {
  constructor(
    readonly kind: "timeout" | "disconnected" | "corrupt",
    message: string,
  ) {
    super(message);
  }
}

/** The connector for the BMC's URL: its CA alone, and/or its certificate's SHA-256 fingerprint. */
function pinnedConnector(c: RedfishDeviceConfig): buildConnector.connector | undefined {
  if (!c.url.startsWith("https://")) return undefined;
  const t = c.tls ?? {};
  const ca = t.caFile === undefined ? undefined : readFileSync(t.caFile);
  const base = buildConnector({
    ...(ca === undefined ? {} : { ca }),
    // a fingerprint alone pins a self-signed certificate: the chain is not checked, the exact
    // certificate is (below); with a CA the chain and the name are checked by TLS itself
    rejectUnauthorized: ca !== undefined,
    ...(t.servername === undefined ? {} : { servername: t.servername }),
    timeout: c.timeoutMs,
    // no TLS session resumption: a resumed TLS 1.3 session shows no peer certificate, so the
    // fingerprint could not be checked on it (measured: getPeerCertificate() is {} there)
    maxCachedSessions: 0,
  });
  const want = t.fingerprint256?.toUpperCase();
  if (want === undefined) return base;
  return (opts, cb) =>
    base(opts, (err, socket) => {
      if (err !== null) return cb(err, null);
      const got = (socket as TLSSocket).getPeerCertificate().fingerprint256?.toUpperCase();
      if (got === want) return cb(null, socket);
      socket.destroy();
      cb(new Error(`the BMC's certificate (SHA-256 ${got ?? "none"}) is not the pinned one`), null);
    });
}

export class BmcHttp {
  private readonly pool: Pool;

  constructor(private readonly c: RedfishDeviceConfig) {
    const connect = pinnedConnector(c);
    // keep-alive: a poll reuses its connections (a TLS handshake costs more than the GET);
    // one connection is the event stream's for as long as it is open
    this.pool = new Pool(c.url, { connections: 4, keepAliveTimeout: 30_000, pipelining: 1, ...(connect === undefined ? {} : { connect }) });
  }

  /** One request; the body (JSON) is read only up to maxBodyBytes. */
  async request(method: Dispatcher.HttpMethod, path: string, headers: Record<string, string>, body?: unknown): Promise<HttpAnswer> {
    const c = this.c;
    const text = body === undefined ? undefined : JSON.stringify(body);
    let res: Dispatcher.ResponseData;
    try {
      res = await this.pool.request({
        method,
        path,
        headers: { accept: "application/json", ...(text === undefined ? {} : { "content-type": "application/json" }), ...headers },
        body: text,
        headersTimeout: c.timeoutMs,
        bodyTimeout: c.timeoutMs,
        signal: AbortSignal.timeout(c.timeoutMs),
      });
    } catch (err) {
      throw failure(err);
    }
    const json = await readJson(res.body, c.maxBodyBytes, res.headers["content-length"]);
    return { status: res.statusCode, headers: res.headers, json };
  }

  /** A long-lived GET (the event stream): the body is the caller's to read and to end. */
  async stream(path: string, headers: Record<string, string>, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    try {
      return await this.pool.request({ method: "GET", path, headers: { accept: "text/event-stream", ...headers }, headersTimeout: this.c.timeoutMs, bodyTimeout: 0, signal });
    } catch (err) {
      throw failure(err);
    }
  }

  async close(): Promise<void> {
    await this.pool.destroy().catch(() => undefined);
  }
}

function failure(err: unknown): HttpFailure {
  if (err instanceof HttpFailure) return err;
  const e = err as { name?: string; code?: string; message?: string };
  const timeout = e.name === "TimeoutError" || e.code === "UND_ERR_HEADERS_TIMEOUT" || e.code === "UND_ERR_BODY_TIMEOUT" || e.code === "UND_ERR_CONNECT_TIMEOUT";
  return new HttpFailure(timeout ? "timeout" : "disconnected", e.message ?? String(err));
}

async function readJson(body: Dispatcher.ResponseData["body"], max: number, length: string | string[] | undefined): Promise<unknown> {
  if (typeof length === "string" && Number(length) > max) {
    body.destroy();
    throw new HttpFailure("corrupt", `answer of ${length} bytes is over maxBodyBytes (${max})`);
  }
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      size += (chunk as Buffer).length;
      if (size > max) {
        body.destroy();
        throw new HttpFailure("corrupt", `answer over maxBodyBytes (${max})`);
      }
      parts.push(chunk as Buffer);
    }
  } catch (err) {
    throw failure(err);
  }
  if (size === 0) return null;
  try {
    return JSON.parse(Buffer.concat(parts).toString("utf8")) as unknown;
  } catch {
    throw new HttpFailure("corrupt", "answer is not JSON");
  }
}
