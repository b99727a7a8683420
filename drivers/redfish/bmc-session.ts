// A BMC's credentials on the wire (DSP0266 §13): a session from SessionService with its
// X-Auth-Token, renewed once when the BMC forgets it (401), or HTTP Basic on every request. BMCs
// as they are answer a session POST with 201 (the specification), 200 or 204: each is taken when
// it carries a token. A BMC with no session service at all (404, 405, 501 to the POST) may be met
// with Basic, when the config allows it (`auth.basicFallback`): said once in the log.
import { readFileSync } from "node:fs";
import type { RedfishDeviceConfig } from "./config.js";
import { errorCode } from "./bmc-runtime.js";
import { HttpFailure, type BmcHttp, type HttpAnswer } from "./http.js";

const SESSIONS = "/redfish/v1/SessionService/Sessions";
/** What a BMC answers a session POST with when it has no session service. */
const NO_SESSION_SERVICE = new Set([404, 405, 501]);

export class BmcSession {
  private token: string | null = null;
  private uri: string | null = null;
  private login_: Promise<void> | null = null;
  /** Basic in place of sessions, once a BMC without a session service was met and the config allows it */
  private basic: boolean;
  logins = 0;

  constructor(
    private readonly c: RedfishDeviceConfig,
    private readonly http: BmcHttp,
    private readonly env: NodeJS.ProcessEnv,
    private readonly onLog: (level: "warn", line: string) => void,
  ) {
    this.basic = c.auth.mode === "basic";
  }

  /** A request with our credentials; a session the BMC forgot (401) is renewed once. */
  async request(method: "GET" | "PATCH" | "POST" | "DELETE", path: string, headers: Record<string, string> = {}, body?: unknown): Promise<HttpAnswer> {
    let r = await this.http.request(method, path, { ...(await this.headers()), ...headers }, body);
    if (r.status === 401 && !this.basic && this.token !== null) {
      this.token = null;
      r = await this.http.request(method, path, { ...(await this.headers()), ...headers }, body);
    }
    return r;
  }

  /** The headers that carry our credentials (a login first when there is no session). */
  async headers(): Promise<Record<string, string>> {
    if (!this.basic && this.token === null) {
      // one login at a time, however many requests are waiting for it
      this.login_ ??= this.login().finally(() => (this.login_ = null));
      await this.login_;
    }
    if (this.basic) return { authorization: `Basic ${Buffer.from(`${this.c.auth.user}:${this.password()}`).toString("base64")}` };
    return this.token === null ? {} : { "x-auth-token": this.token };
  }

  /** The BMC answered 401 to a request made with the session: the next one logs in again. */
  forget(): void {
    if (!this.basic) this.token = null;
  }

  /** Ends the session: one left open counts against the BMC's session limit until it times out. */
  async end(): Promise<void> {
    if (this.uri !== null && this.token !== null) await this.http.request("DELETE", this.uri, { "x-auth-token": this.token }).catch(() => undefined);
  }

  private async login(): Promise<void> {
    const r = await this.http.request("POST", SESSIONS, {}, { UserName: this.c.auth.user, Password: this.password() });
    if (NO_SESSION_SERVICE.has(r.status) && this.c.auth.basicFallback) {
      this.basic = true;
      this.onLog("warn", `${this.c.name}: no session service (HTTP ${r.status} to ${SESSIONS}): HTTP Basic from now on (auth.basicFallback)`);
      return;
    }
    if (r.status !== 201 && r.status !== 200 && r.status !== 204) throw new HttpFailure("disconnected", `login refused: HTTP ${r.status}${errorCode(r)}`);
    const token = r.headers["x-auth-token"];
    if (typeof token !== "string" || token.length === 0 || token.length > 512) throw new HttpFailure("corrupt", `login answered HTTP ${r.status} without an X-Auth-Token`);
    this.token = token;
    const loc = r.headers.location;
    // a 204 has no body; its Location, where given, is the session to end at the stop
    this.uri = typeof loc === "string" && loc.startsWith("/redfish/v1/") ? loc : null;
    this.logins++;
  }

  private password(): string {
    const a = this.c.auth;
    if (a.passwordEnv !== undefined) {
      const v = this.env[a.passwordEnv];
      if (v === undefined || v === "") throw new HttpFailure("disconnected", `no password: environment variable ${a.passwordEnv} is not set`);
      return v;
    }
    if (a.passwordFile !== undefined) {
      try {
        return readFileSync(a.passwordFile, "utf8").slice(0, 1024).split("\n")[0].trim();
      } catch (err) {
        throw new HttpFailure("disconnected", `no password: ${(err as Error).message}`);
      }
    }
    throw new HttpFailure("disconnected", "no password source configured");
  }
}
