// The pod as a Redfish service, read-only (docs/redfish.md): GET and HEAD on the tree of
// tree.ts and DSP0266's two service documents (service-documents.ts), bounded before anything is
// looked at (the request rate, the header bytes, the URL), with HTTP Basic authentication against
// the HMI's users file when one is configured (the service root, $metadata and odata stay open, as
// Redfish requires). Every other method is refused with 405; a query it does not support, 501.
// Each resource carries an ETag, and a GET whose If-None-Match names it is answered 304.
import { createHash } from "node:crypto";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { boundedServer, closeHttp, listenHttp } from "../../lib/http-server.js";
import { LoginLimiter } from "../hmi/login-limiter.js";
import { PasswordBusyError, UsersFile, verifyPassword } from "../hmi/users.js";
import type { RedfishConfig } from "./schema.js";
import { connectionLimits } from "../hmi/schema.js";
import { metadataDocument, odataDocument, servedTypes } from "./service-documents.js";
import { RedfishTree, ROOT, type RedfishSource } from "./tree.js";

const MAX_HEADER_BYTES = 8 * 1024;
const MAX_URL_CHARS = 512;
/** A Basic credential longer than this is not one: refused before it is decoded. */
const MAX_AUTH_CHARS = 1024;
const CREDENTIAL_TTL_MS = 60_000;
/** verified credentials kept at once: past it the cache starts again (only genuine ones get in) */
const MAX_VERIFIED = 64;

export interface RedfishStats {
  requests: number;
  /** beyond maxRequestsPerS: 503 */
  limited: number;
  unauthorized: number;
}

/** A Redfish error body (DSP0266 §9.6): a Base message registry id, and what went wrong. */
function error(res: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}): void {
  send(res, status, { error: { code: `Base.1.19.${code}`, message } }, { ...headers, connection: "close" });
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}, contentType = "application/json;charset=utf-8"): void {
  const text = Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
  res.writeHead(status, { "odata-version": "4.0", "cache-control": "no-store", "x-content-type-options": "nosniff", ...headers, "content-type": contentType, "content-length": text.length });
  res.end(text);
}

/** A weak ETag of a representation: it changes whenever a byte of the body does. */
const etagOf = (body: string): string => `W/"${createHash("sha256").update(body).digest("hex").slice(0, 16)}"`;

/**
 * The query parameters this service does not carry out (ProtocolFeaturesSupported says so):
 * DSP0266 has a service answer 501 rather than ignore one and return what was not asked for.
 */
export function unsupportedQuery(url: string): string | null {
  const q = url.indexOf("?");
  if (q < 0) return null;
  for (const key of new URLSearchParams(url.slice(q + 1)).keys()) {
    if (key.startsWith("$") || key === "only" || key === "excerpt" || key === "includeoriginofcondition") return key;
  }
  return null;
}

export class RedfishServer {
  private server: Server | null = null;
  private tree: RedfishTree;
  private intake: number;
  private timer: NodeJS.Timeout | null = null;
  private readonly logins = new LoginLimiter();
  /**
   * Credentials verified in the last minute, by their sha256: scrypt costs tens of ms of the
   * thread pool (which the spool's flushes share), and a DCIM poller sends its credentials with
   * every request. A user removed from the file loses access within CREDENTIAL_TTL_MS.
   */
  private readonly verified = new Map<string, number>();
  private readonly counts: RedfishStats = { requests: 0, limited: 0, unauthorized: 0 };
  private readonly usersFile: UsersFile | null;
  /** $metadata, computed from the served tree at its first request (a reload's new tree, again) */
  private metadata: string | null = null;

  constructor(
    src: RedfishSource,
    private readonly c: RedfishConfig,
  ) {
    this.tree = new RedfishTree(src);
    this.intake = c.maxRequestsPerS;
    this.usersFile = c.usersFile === undefined ? null : new UsersFile(c.usersFile);
  }

  /** Follows a new agent after a reload replaced it. */
  attach(src: RedfishSource): void {
    this.tree = new RedfishTree(src);
    this.metadata = null;
  }

  async listen(): Promise<number> {
    const server = boundedServer({ maxHeaderBytes: MAX_HEADER_BYTES, tls: this.c.tls, limits: connectionLimits(this.c) }, (req, res) => void this.handle(req, res));
    this.server = server;
    this.timer = setInterval(() => (this.intake = this.c.maxRequestsPerS), 1000);
    return await listenHttp(server, { host: this.c.host, port: this.c.port });
  }

  stats(): RedfishStats {
    return { ...this.counts };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // the rate first: a flood is answered 503 without its URL or headers being looked at
    if (this.intake <= 0) {
      this.counts.limited++;
      return error(res, 503, "ServiceTemporarilyUnavailable", `more than ${this.c.maxRequestsPerS} requests a second`, { "retry-after": "1" });
    }
    this.intake--;
    this.counts.requests++;
    const url = req.url ?? "/";
    if (url.length > MAX_URL_CHARS) return error(res, 414, "QueryNotSupported", "URL too long");
    // a body is never read: the answer closes the connection
    if (req.method !== "GET" && req.method !== "HEAD") return error(res, 405, "OperationNotAllowed", "this service is read-only: GET and HEAD", { allow: "GET, HEAD" });
    let path: string;
    try {
      path = decodeURI(url.split("?")[0]);
    } catch {
      return error(res, 400, "MalformedJSON", "the URL's percent-encoding is malformed");
    }
    const unsupported = unsupportedQuery(url);
    if (unsupported !== null) return error(res, 501, "QueryNotSupported", `the query parameter ${unsupported.slice(0, 40)} is not supported (ProtocolFeaturesSupported in the service root)`);
    const open = path === "/redfish" || path === "/redfish/" || path === ROOT || path === `${ROOT}/` || path === `${ROOT}/odata` || path === `${ROOT}/$metadata`;
    if (!open && this.usersFile !== null) {
      const auth = await this.authorized(req, this.usersFile);
      if (auth !== "ok") this.counts.unauthorized++;
      if (auth === "wait") return error(res, 429, "ServiceTemporarilyUnavailable", "too many failed logins from here: wait and try again", { "retry-after": "60" });
      if (auth === "busy") return error(res, 503, "ServiceTemporarilyUnavailable", "too many password checks at once: try again shortly", { "retry-after": "1" });
      if (auth === "no") return error(res, 401, "InsufficientPrivilege", "HTTP Basic authentication with a user of the users file is needed", { "www-authenticate": 'Basic realm="podwarden"' });
    }
    if (path === `${ROOT}/$metadata`) {
      this.metadata ??= metadataDocument(servedTypes(this.tree));
      return send(res, 200, this.metadata, {}, "application/xml;charset=utf-8");
    }
    const resource = path === `${ROOT}/odata` ? odataDocument(this.tree.get(ROOT) ?? {}) : this.tree.get(path);
    if (resource === null) return error(res, 404, "ResourceNotFound", `no resource at ${path.slice(0, 200)}`);
    const body = JSON.stringify(resource);
    const etag = etagOf(body);
    if (req.headers["if-none-match"]?.split(",").some((t) => t.trim() === etag) === true) {
      res.writeHead(304, { "odata-version": "4.0", etag, "cache-control": "no-store" });
      return void res.end();
    }
    send(res, 200, body, { etag });
  }

  /**
   * Basic credentials of a user in the users file. A credential verified in the last minute is
   * taken from the cache first: a DCIM poller that sends its right credentials with every
   * request is not locked out by someone else's failures. Any other takes its place in the
   * limiter before its password is looked at (so a burst costs at most the limit's worth of
   * scrypt work), and gives it back only when right.
   */
  private async authorized(req: IncomingMessage, file: UsersFile): Promise<"ok" | "no" | "wait" | "busy"> {
    const now = Date.now();
    const h = req.headers.authorization ?? "";
    if (h.length > MAX_AUTH_CHARS || !h.startsWith("Basic ")) return "no";
    const key = createHash("sha256").update(h).digest("base64");
    const until = this.verified.get(key);
    if (until !== undefined && until > now) return "ok";
    const text = Buffer.from(h.slice(6), "base64").toString("utf8");
    const colon = text.indexOf(":");
    if (colon <= 0) return "no";
    const name = text.slice(0, colon);
    const place = this.logins.reserve(req.socket.remoteAddress ?? "?", name, now);
    if ("waitMs" in place) return "wait";
    let ok: boolean;
    try {
      ok = await verifyPassword(file.read().find((u) => u.name === name), text.slice(colon + 1));
    } catch (err) {
      if (err instanceof PasswordBusyError) {
        this.logins.release(place.ticket); // never looked at: not a failure
        return "busy";
      }
      ok = false; // an unreadable users file lets nobody in
    }
    if (!ok) return "no";
    this.logins.succeeded(place.ticket);
    if (this.verified.size >= MAX_VERIFIED) this.verified.clear();
    this.verified.set(key, now + CREDENTIAL_TTL_MS);
    return "ok";
  }

  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await closeHttp(this.server);
    this.server = null;
  }
}
