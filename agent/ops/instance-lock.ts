// One podwarden per pod, and per state directory, on a host.
//
// A second daemon for the same pod would drive the same field devices (its start-up alone writes
// every actuator's safe value, under a running controller), take over the first one's MQTT
// session (same client id: the broker drops one, both reconnect, forever), and write the same
// leak latches, spool and replay guard. So `podwarden run` claims its pod and its state directory
// before it touches anything, and a second one refuses to start, naming the first.
//
// Each claim is a listening Unix socket in a private lock directory (owned by the daemon's user,
// mode 0700; lockDirectory() below). Why not the alternatives:
// - an abstract socket (the first design) needs no file, but its namespace is open to every local
//   user: anyone could bind the name first, block the daemon's start, and answer with a forged
//   holder. Node has no SO_PEERCRED to check who holds it;
// - an flock() is not in Node's fs API, and a native module for it is a build dependency on
//   every controller.
// In a directory only the daemon's user can write, nobody else can bind a claim, and a claim
// left by a SIGKILLed daemon is found stale (connect() is refused: no process listens) and
// replaced, so no lock file ever needs clearing by hand. The socket answers every connection
// with who holds it, for the second daemon's error message.
import { createHash } from "node:crypto";
import { linkSync, lstatSync, mkdirSync, realpathSync, renameSync, unlinkSync } from "node:fs";
import { createConnection, createServer, Server } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

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

/**
 * Where the claims live, first found:
 * - `$RUNTIME_DIRECTORY`: systemd's `RuntimeDirectory=podwarden` (deploy/podwarden.service);
 * - `/run/podwarden`: as root, or when it exists and is this user's (the service's directory,
 *   seen by a copy started by hand as the service's user);
 * - `$XDG_RUNTIME_DIR/podwarden`, then `<tmpdir>/podwarden-<uid>`.
 * `PODWARDEN_LOCK_DIR` overrides all of them (tests, and hosts with an unusual layout).
 */
export function lockDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const uid = process.getuid?.() ?? 0;
  if (env.PODWARDEN_LOCK_DIR) return env.PODWARDEN_LOCK_DIR;
  if (env.RUNTIME_DIRECTORY) return env.RUNTIME_DIRECTORY.split(":")[0];
  if (uid === 0) return "/run/podwarden";
  try {
    if (lstatSync("/run/podwarden").uid === uid) return "/run/podwarden";
  } catch {
    // no such directory: not under the service
  }
  if (env.XDG_RUNTIME_DIR) return join(env.XDG_RUNTIME_DIR, "podwarden");
  return join(tmpdir(), `podwarden-${uid}`);
}

/**
 * Creates the lock directory, or checks the one there: a real directory (not a symlink), this
 * user's, mode 0700. Returns why it cannot be used, or null. A directory another user owns or
 * can write is refused: claims there could be squatted or replaced.
 */
export function privateDirectoryProblem(dir: string): string | null {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") return `cannot create ${dir} (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
  }
  const st = lstatSync(dir);
  const uid = process.getuid?.() ?? 0;
  if (!st.isDirectory()) return `${dir} is not a directory`;
  if (st.uid !== uid) return `${dir} belongs to uid ${st.uid}, not to this user (uid ${uid}): another user could hold its claims`;
  if ((st.mode & 0o077) !== 0) return `${dir} has mode ${(st.mode & 0o777).toString(8)}: other users could hold its claims (it must be 700)`;
  return null;
}

/** The socket file of a claim (hashed: socket paths are limited to 107 bytes). */
function socketPath(dir: string, key: string): string {
  return join(dir, `${createHash("sha256").update(key).digest("hex").slice(0, 40)}.sock`);
}

export class InstanceLock {
  private constructor(
    private readonly servers: Server[],
    /**
     * Claims that could not be made for a reason other than a holder (no private lock directory,
     * the platform refused the socket), with that reason. The daemon runs without them and says
     * so: refusing to start over a guard against a rare mistake would leave the pod uncontrolled,
     * and would let anyone who can spoil the lock directory stop the pod's controller.
     */
    readonly unguarded: string[],
  ) {}

  /**
   * Takes every claim or none: throws InstanceLockError naming the daemon that holds one.
   */
  static async acquire(claims: Claim[], holder: Holder, dir: string = lockDirectory()): Promise<InstanceLock> {
    const held: Server[] = [];
    const unguarded: string[] = [];
    const problem = privateDirectoryProblem(dir);
    if (problem !== null) return new InstanceLock([], claims.map((c) => `${c.what}: ${problem}`));
    try {
      for (const c of claims) {
        const s = await claim(socketPath(dir, c.key), c, holder);
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

/**
 * The claim's socket; or the platform's error if it refused the socket itself. A claim whose
 * socket file nobody listens on (its daemon died) is stale and replaced; a few tries, because
 * another daemon may be replacing it at the same moment.
 */
async function claim(path: string, c: Claim, holder: Holder): Promise<Server | Error> {
  for (let attempt = 0; ; attempt++) {
    const s = await listenOn(path, holder);
    if (s !== "in use") return s;
    const other = await askHolder(path);
    if (other === "stale" && attempt < 3) {
      await removeStale(path);
      continue;
    }
    const who = other === null || other === "stale" ? "another podwarden" : `another podwarden (pid ${other.pid}, config ${other.config})`;
    throw new InstanceLockError(`${who} is already running ${c.what}: stop it first (a second one would drive the same devices and take over its MQTT session)`);
  }
}

/**
 * Removes a stale claim, never a live one: the file is first moved aside (atomic), and only if
 * nobody listens on what was moved is it deleted; a live claim (another daemon took it between
 * our probe and the move) is linked back. Without this, two daemons starting together after a
 * crash could each delete the other's fresh claim and both run.
 */
export async function removeStale(path: string): Promise<void> {
  const aside = `${path}.${process.pid}.stale`;
  try {
    renameSync(path, aside);
  } catch {
    return; // gone already: another daemon removed it
  }
  if ((await askHolder(aside)) !== "stale") {
    try {
      linkSync(aside, path); // live: give it back
    } catch {
      // a third daemon claimed the path meanwhile: that one holds it, and the next attempt says so
    }
  }
  try {
    unlinkSync(aside);
  } catch {
    // already gone
  }
}

/** Listens on the claim's path: the server, "in use", or the platform's error. */
async function listenOn(path: string, holder: Holder): Promise<Server | "in use" | Error> {
  const answer = `${JSON.stringify(holder)}\n`;
  const server = createServer((sock) => {
    sock.on("error", () => undefined);
    sock.end(answer);
  });
  try {
    await new Promise<void>((ok, fail) => {
      server.once("error", fail);
      server.listen({ path }, () => {
        server.off("error", fail);
        ok();
      });
    });
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EADDRINUSE" ? "in use" : (err as Error);
  }
  server.on("error", () => undefined); // a failed answer to one asker is not the daemon's problem
  server.unref(); // the claim lasts as long as the process, and never keeps it alive by itself
  return server;
}

/**
 * Who holds a claim: the holder; "stale" when nobody listens (connect refused, or the file is
 * not a socket); null if a listener does not say who it is within a second.
 */
function askHolder(path: string): Promise<Holder | "stale" | null> {
  return new Promise((done) => {
    let text = "";
    const sock = createConnection({ path });
    const timer = setTimeout(() => finish(null), 1000);
    const finish = (h: Holder | "stale" | null): void => {
      clearTimeout(timer);
      sock.destroy();
      done(h);
    };
    sock.setEncoding("utf8");
    sock.on("data", (d: string) => {
      text += d;
      if (text.length > 4096) finish(null); // bounded: an answer is a line of JSON
    });
    sock.on("end", () => {
      try {
        const h = JSON.parse(text) as Partial<Holder>;
        finish(typeof h.pid === "number" && typeof h.config === "string" && typeof h.pod === "string" ? (h as Holder) : null);
      } catch {
        finish(null);
      }
    });
    sock.on("error", (err: NodeJS.ErrnoException) => finish(err.code === "ECONNREFUSED" || err.code === "ENOENT" || err.code === "ENOTSOCK" ? "stale" : null));
  });
}

function closeServer(s: Server): Promise<void> {
  return new Promise((done) => s.close(() => done()));
}
