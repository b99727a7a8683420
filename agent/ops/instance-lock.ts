// One podwarden per pod, and per state directory, on a host.
//
// A second daemon for the same pod would drive the same field devices (its start-up alone writes
// every actuator's safe value, under a running controller), take over the first one's MQTT
// session (same client id: the broker drops one, both reconnect, forever), and write the same
// leak latches, spool and replay guard. So `podwarden run` claims its pod and its state directory
// before it touches anything, and a second one refuses to start, naming the first.
//
// Each claim is a listening socket in Linux's abstract namespace (a name starting with NUL): the
// kernel frees it when the process dies, however it dies, so a SIGKILLed daemon leaves no stale
// lock behind to clear by hand, and nothing is written to disk. The namespace is per network
// namespace: daemons in separate network namespaces (containers) do not see each other's claims.
// The socket answers every connection with who holds it, for the second daemon's error message.
import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { createConnection, createServer, Server } from "node:net";
import { resolve } from "node:path";

export class InstanceLockError extends Error {}

export interface Claim {
  /** what is claimed, for messages: "pod demo/pod-a" */
  what: string;
  key: string;
}

export interface Holder {
  pid: number;
  pod: string;
  config: string;
}

/** The claims a daemon makes: its pod, and its state directory when it has one. */
export function daemonClaims(site: string, pod: string, stateDir: string | undefined): Claim[] {
  const claims: Claim[] = [{ what: `pod ${site}/${pod}`, key: `pod:${site}/${pod}` }];
  if (stateDir !== undefined) {
    const dir = canonicalDir(stateDir);
    claims.push({ what: `state directory ${dir}`, key: `state-dir:${dir}` });
  }
  return claims;
}

function canonicalDir(dir: string): string {
  try {
    return realpathSync(dir); // one directory reached by two paths (a symlink) is one claim
  } catch {
    return resolve(dir); // not created yet
  }
}

/** The abstract socket name of a claim (hashed: names are limited to 107 bytes). */
function socketName(key: string): string {
  return `\0podwarden/${createHash("sha256").update(key).digest("hex").slice(0, 40)}`;
}

export class InstanceLock {
  private constructor(
    private readonly servers: Server[],
    /**
     * Claims that could not be made for a reason other than a holder (the platform refused the
     * socket: a security policy, say), with that reason. The daemon runs without them and says
     * so: refusing to start over a guard against a rare mistake would leave the pod uncontrolled.
     */
    readonly unguarded: string[],
  ) {}

  /**
   * Takes every claim or none: throws InstanceLockError naming the daemon that holds one.
   */
  static async acquire(claims: Claim[], holder: Holder): Promise<InstanceLock> {
    const held: Server[] = [];
    const unguarded: string[] = [];
    try {
      for (const c of claims) {
        const s = await listenOn(c, holder);
        if (s instanceof Server) held.push(s);
        else unguarded.push(`${c.what}: the claim's socket was refused (${(s as NodeJS.ErrnoException).code ?? s.message})`);
      }
    } catch (err) {
      await Promise.all(held.map(closeServer));
      throw err;
    }
    return new InstanceLock(held, unguarded);
  }

  async release(): Promise<void> {
    await Promise.all(this.servers.splice(0).map(closeServer));
  }
}

/** The claim's socket; or the platform's error if it refused the socket itself. */
async function listenOn(c: Claim, holder: Holder): Promise<Server | Error> {
  const answer = `${JSON.stringify(holder)}\n`;
  const server = createServer((sock) => {
    sock.on("error", () => undefined);
    sock.end(answer);
  });
  const name = socketName(c.key);
  try {
    await new Promise<void>((ok, fail) => {
      server.once("error", fail);
      server.listen({ path: name }, () => {
        server.off("error", fail);
        ok();
      });
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE") return err as Error;
    const other = await askHolder(name);
    const who = other === null ? "another podwarden" : `another podwarden (pid ${other.pid}, config ${other.config})`;
    throw new InstanceLockError(`${who} is already running ${c.what}: stop it first (a second one would drive the same devices and take over its MQTT session)`);
  }
  server.on("error", () => undefined); // a failed answer to one asker is not the daemon's problem
  server.unref(); // the claim lasts as long as the process, and never keeps it alive by itself
  return server;
}

/** Who holds a claim, or null if it does not say within a second. */
function askHolder(name: string): Promise<Holder | null> {
  return new Promise((done) => {
    let text = "";
    const sock = createConnection({ path: name });
    const timer = setTimeout(() => finish(null), 1000);
    const finish = (h: Holder | null): void => {
      clearTimeout(timer);
      sock.destroy();
      done(h);
    };
    sock.setEncoding("utf8");
    sock.on("data", (d: string) => {
      text += d;
    });
    sock.on("end", () => {
      try {
        const h = JSON.parse(text) as Partial<Holder>;
        finish(typeof h.pid === "number" && typeof h.config === "string" && typeof h.pod === "string" ? (h as Holder) : null);
      } catch {
        finish(null);
      }
    });
    sock.on("error", () => finish(null));
  });
}

function closeServer(s: Server): Promise<void> {
  return new Promise((done) => s.close(() => done()));
}
