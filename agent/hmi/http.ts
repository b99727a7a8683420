// The HMI's HTTP plumbing: the headers every answer carries, JSON answers and the Host check
// (request bodies are read up to a limit by lib/http-server.ts's readBody).
import type { ServerResponse } from "node:http";
import { isIP } from "node:net";

// The page loads nothing from anywhere but this server, runs no inline script and no eval, and
// cannot be framed by another site.
export const SECURITY_HEADERS = {
  "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/** A JSON answer already serialised (a view computed once for every page); never cached. */
export function sendJsonText(res: ServerResponse, status: number, json: string, headers: Record<string, string | string[]> = {}): void {
  const text = Buffer.from(json);
  res.writeHead(status, { ...SECURITY_HEADERS, "cache-control": "no-store", ...headers, "content-type": "application/json", "content-length": text.length });
  // node sends no body to a HEAD request whatever is passed here
  res.end(text);
}

/** Answers an error and closes the connection: whatever the client still sends is not read. */
export function refuse(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { error: message }, { ...headers, connection: "close" });
}

/**
 * Whether a request's Host header names this HMI: an IP address (v4, or v6 in brackets), localhost,
 * or one of `allowed` (case does not matter; a port is ignored). DNS rebinding points a name the
 * attacker owns at the controller, so the victim's browser sends that name: only names the
 * operator listed pass. A request with no Host header is not a browser's, and passes.
 */
export function hostAllowed(host: string | undefined, allowed: readonly string[]): boolean {
  if (host === undefined) return true;
  const h = host.toLowerCase();
  const name = h.startsWith("[") ? h.slice(1, h.indexOf("]")) : h.replace(/:\d*$/, "");
  if (isIP(name) !== 0 || name === "localhost") return true;
  return allowed.some((a) => a.toLowerCase() === name);
}
