// Logging in to the HMI and acting through it (docs/hmi.md, "Actions"):
//   GET  /api/session  who is logged in here, the CSRF token, the actions their roles allow
//   POST /api/login    {name, password}: a session cookie (HttpOnly, SameSite=Strict)
//   POST /api/logout
//   POST /api/action   {command, params}: acknowledge, reset a leak, a setpoint with a lease, a
//                      mode, isolate or return a rack
// An action goes through the same checks as a signed command: the role (the same roles and
// ROLE_COMMANDS), the command's parameter schema, and the executor with its envelope and
// refusals (commands/executor.ts); every outcome is audited with the user's name, like a
// signed command's with its key's. Nothing here can do what a signed command may not.
//
// Against a forged cross-site request: the cookie is SameSite=Strict; every POST must come from
// this page's own origin (Origin and Sec-Fetch-Site, when the browser sends them) as JSON (a
// cross-site form cannot send it without a CORS preflight, which is refused); and an action or
// a logout must carry the session's CSRF token in x-csrf-token.
import type { IncomingMessage, ServerResponse } from "node:http";
import { duplicateKeyProblem } from "../../lib/json-unique-keys.js";
import { ROLE_COMMANDS, validateParams, type CommandName, type Role } from "../commands/schema.js";
import type { AuditRecord, PodCommands } from "../pod-api.js";
import type { HmiConfig } from "./schema.js";
import { readBody } from "../../lib/http-server.js";
import { refuse, sendJson } from "./http.js";
import { DEFAULT_LOGIN_LIMITS, LoginLimiter } from "./login-limiter.js";
import { sameToken, Sessions, type Session } from "./sessions.js";
import { PasswordBusyError, UsersFile, verifyPassword, type HmiUser } from "./users.js";

/** What the HMI may do: no power budget (mission control's), nothing a role could not sign. */
export const HMI_ACTIONS = ["ack-alarm", "reset-leak", "setpoint", "mode", "isolate-rack", "return-rack", "record", "tune", "gains"] as const satisfies readonly CommandName[];
type HmiAction = (typeof HMI_ACTIONS)[number];

const COOKIE = "podwarden_session";
const MAX_LOGIN_BYTES = 1024;
const MAX_ACTION_BYTES = 4096;
/** how much of a name someone typed reaches the audit trail */
const MAX_AUDITED_NAME = 64;

/** What actions take of the pod: the commander (the executor's face) and the audit trail. */
export type HmiCommander = PodCommands;

const isAction = (s: unknown): s is HmiAction => typeof s === "string" && (HMI_ACTIONS as readonly string[]).includes(s);

/** The actions `roles` allow here. */
export function allowedActions(roles: readonly Role[]): HmiAction[] {
  return HMI_ACTIONS.filter((a) => roles.some((r) => ROLE_COMMANDS[r].includes(a)));
}

function cookieOf(req: IncomingMessage): string | undefined {
  for (const part of String(req.headers.cookie ?? "").split(";")) {
    const [k, v] = part.trim().split("=");
    if (k === COOKIE && v !== undefined && /^[A-Za-z0-9_-]{43}$/.test(v)) return v;
  }
  return undefined;
}

export class HmiActions {
  private readonly sessions: Sessions;
  private readonly limiter: LoginLimiter;
  private readonly usersFile: UsersFile | null;

  constructor(
    /** the pod's commanding face, and where the view reads the loops' names and the envelope */
    public commander: () => HmiCommander,
    private readonly c: HmiConfig,
    private readonly onError: (err: unknown) => void,
  ) {
    this.sessions = new Sessions(c.sessionIdleS * 1000);
    this.limiter = new LoginLimiter(DEFAULT_LOGIN_LIMITS, c.knownAddresses);
    this.usersFile = c.usersFile === undefined ? null : new UsersFile(c.usersFile);
  }

  attach(commander: () => HmiCommander): void {
    this.commander = commander;
  }

  /** Whether this path is one of the actions' (the server routes it here). */
  static owns(path: string): boolean {
    return path === "/api/session" || path === "/api/login" || path === "/api/logout" || path === "/api/action";
  }

  handle(req: IncomingMessage, res: ServerResponse, path: string): void {
    const method = req.method ?? "";
    if (path === "/api/session" ? method !== "GET" && method !== "HEAD" : method !== "POST") {
      return refuse(res, 405, `${method} is not allowed here`, { allow: path === "/api/session" ? "GET, HEAD" : "POST" });
    }
    if (path === "/api/session") return this.session(req, res);
    const why = this.crossSite(req);
    if (why !== null) return refuse(res, 403, why);
    if (!/^application\/json(;|$)/.test(String(req.headers["content-type"] ?? ""))) return refuse(res, 415, "send application/json");
    const run = path === "/api/login" ? this.login(req, res) : path === "/api/logout" ? Promise.resolve(this.logout(req, res)) : this.action(req, res);
    run.catch((err: unknown) => {
      this.onError(err);
      if (!res.headersSent) refuse(res, 500, "the action could not be carried out");
    });
  }

  /** Why this request is not from the HMI's own page, or null. */
  private crossSite(req: IncomingMessage): string | null {
    const site = req.headers["sec-fetch-site"];
    if (site !== undefined && site !== "same-origin") return `a ${String(site)} request is refused: act from the HMI's own page`;
    const origin = req.headers.origin;
    if (origin === undefined) return null; // not a browser's cross-site request (those carry Origin on POST)
    const scheme = this.c.tls === undefined ? "http" : "https";
    return origin === `${scheme}://${req.headers.host ?? ""}` ? null : `a request from ${origin.slice(0, 100)} is refused: act from the HMI's own page`;
  }

  private users(): HmiUser[] | null {
    // looked at every login and action (parsed again only when it changed): a user removed from
    // the file, or given other roles, is so at once
    return this.usersFile?.read() ?? null;
  }

  /** The user logged in on this request's session, or null. */
  userOf(req: IncomingMessage): string | null {
    return this.current(req)?.s.user ?? null;
  }

  private current(req: IncomingMessage): { id: string; s: Session } | null {
    const id = cookieOf(req);
    const s = this.sessions.get(id, Date.now());
    return id === undefined || s === undefined ? null : { id, s };
  }

  private session(req: IncomingMessage, res: ServerResponse): void {
    const cur = this.current(req);
    if (cur === null) return sendJson(res, 200, { user: null, loginPossible: this.c.usersFile !== undefined });
    sendJson(res, 200, this.sessionView(cur.s));
  }

  /** What a logged-in page needs to offer the actions: the token, what the roles allow, the names and the envelope. */
  private sessionView(s: Session): Record<string, unknown> {
    const k = this.commander();
    return {
      user: s.user,
      roles: s.roles,
      csrf: s.csrf,
      actions: allowedActions(s.roles),
      racks: k.layout.racks.map((r) => r.name),
      loops: Array.from({ length: k.layout.loops }, (_, i) => ({ name: k.layout.loopName(i), pump: k.layout.isPumpLoop(i), kind: k.layout.loopKind(i) })),
      limits: k.limits,
    };
  }

  private audit(a: AuditRecord): void {
    this.commander().audit(a);
  }

  private async login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const source = req.socket.remoteAddress ?? "unknown";
    // the body (at most MAX_LOGIN_BYTES) is read before the limiter is asked: a user with the
    // right password from an address known for it is not held by others' failures, and only
    // the name tells (login-limiter.ts)
    const body = await readBody(req, MAX_LOGIN_BYTES);
    if (body === null) return refuse(res, 413, `a login is at most ${MAX_LOGIN_BYTES} bytes`);
    const parsed = parseJson(body);
    const name = typeof parsed?.name === "string" ? parsed.name : null;
    const password = typeof parsed?.password === "string" ? parsed.password : null;
    if (name === null || password === null || name.length > 64 || password.length > 256) return refuse(res, 400, "give {name, password}");
    // the attempt's place before its scrypt: a burst gets no further than the limits' worth
    const place = this.limiter.reserve(source, name, Date.now());
    if ("waitMs" in place) return refuse(res, 429, "too many failed logins: wait and try again", { "retry-after": String(Math.ceil(place.waitMs / 1000)) });
    const users = this.users();
    if (users === null) {
      this.limiter.release(place.ticket);
      return refuse(res, 403, "no one can log in: hmi.usersFile is not configured (the HMI is view-only)");
    }
    const user = users.find((u) => u.name === name);
    let right: boolean;
    try {
      right = await verifyPassword(user, password);
    } catch (err) {
      if (!(err instanceof PasswordBusyError)) throw err;
      this.limiter.release(place.ticket); // never looked at: not a failure
      return refuse(res, 503, err.message, { "retry-after": "1" });
    }
    if (!right) {
      this.audit({ action: "hmi-login", by: `hmi ${name.slice(0, MAX_AUDITED_NAME)}`, result: "rejected", reason: `wrong name or password (from ${source})` });
      return refuse(res, 401, "wrong name or password");
    }
    this.limiter.succeeded(place.ticket);
    const { id, session } = this.sessions.open(user!.name, user!.roles, Date.now());
    this.audit({ action: "hmi-login", by: `hmi ${user!.name}`, result: "accepted" });
    const secure = this.c.tls === undefined ? "" : "; Secure";
    sendJson(res, 200, this.sessionView(session), { "set-cookie": `${COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=/${secure}` });
  }

  /** The session this request carries with its CSRF token; answers and returns null if it has none. */
  private authorised(req: IncomingMessage, res: ServerResponse): { id: string; s: Session } | null {
    const cur = this.current(req);
    if (cur === null) {
      refuse(res, 401, "log in first");
      return null;
    }
    const csrf = req.headers["x-csrf-token"];
    if (typeof csrf !== "string" || !sameToken(csrf, cur.s.csrf)) {
      refuse(res, 403, "missing or wrong x-csrf-token");
      return null;
    }
    return cur;
  }

  private logout(req: IncomingMessage, res: ServerResponse): void {
    const cur = this.authorised(req, res);
    if (cur === null) return;
    this.sessions.close(cur.id);
    this.audit({ action: "hmi-logout", by: `hmi ${cur.s.user}`, result: "accepted" });
    sendJson(res, 200, { user: null }, { "set-cookie": `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0` });
  }

  private async action(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const cur = this.authorised(req, res);
    if (cur === null) return;
    const body = await readBody(req, MAX_ACTION_BYTES);
    if (body === null) return refuse(res, 413, `an action is at most ${MAX_ACTION_BYTES} bytes`);
    const parsed = parseJson(body);
    const command = parsed?.command;
    const by = `hmi ${cur.s.user}`;
    if (!isAction(command)) return refuse(res, 400, `give {command, params} with command one of ${HMI_ACTIONS.join(", ")}`);
    // the file says who may still act, and as what, now
    const user = this.users()?.find((u) => u.name === cur.s.user);
    const roles = user?.roles ?? [];
    if (user === undefined || roles.join() !== cur.s.roles.join()) {
      this.sessions.close(cur.id);
      this.audit({ action: command, by, result: "forbidden", reason: "the user is no longer in the users file with these roles: logged out" });
      return refuse(res, 401, "your login has ended: log in again");
    }
    if (!allowedActions(roles).includes(command)) {
      this.audit({ action: command, by, result: "forbidden", reason: `roles ${roles.join(", ")} may not ${command}` });
      return refuse(res, 403, `your roles (${roles.join(", ")}) may not ${command}`);
    }
    const params = validateParams(command, parsed?.params ?? {});
    if (!params.ok) {
      this.audit({ action: command, by, result: "invalid-params", reason: params.reason });
      return refuse(res, 400, params.reason);
    }
    const outcome = await this.commander().execute({ command, params: params.value }, by);
    const ok = outcome.status === "ok";
    this.audit({ action: command, ...(outcome.rack === undefined ? {} : { rack: outcome.rack }), by, result: ok ? "accepted" : outcome.code, ...(ok ? {} : { reason: outcome.reason }) });
    if (ok) sendJson(res, 200, { status: "ok", data: outcome.data ?? null });
    else sendJson(res, 409, { status: "rejected", code: outcome.code, error: outcome.reason });
  }
}

/** A JSON object, or null: not JSON, not an object, or with a key twice (which one would count?). */
function parseJson(body: Buffer): Record<string, unknown> | null {
  const text = body.toString("utf8");
  if (duplicateKeyProblem(text) !== null) return null;
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
