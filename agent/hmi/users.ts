// The HMI's users file (`hmi.usersFile`): who may log in, with which roles (the same observer,
// operator and engineer as signed commands), and their passwords as scrypt hashes
// (node:crypto). Written by `podwarden hmi-user`; read by the daemon at start and on reload.
//
//   users:
//     - name: alice
//       roles: [operator]
//       passwordHash: scrypt$16384$8$1$<salt, base64>$<hash, base64>
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { renameSync, statSync, writeFileSync } from "node:fs";
import { stringify } from "yaml";
import { loadYamlFile, validator } from "../../lib/config-file.js";
import { ROLES, type Role } from "../commands/schema.js";

export interface HmiUser {
  name: string;
  roles: Role[];
  passwordHash: string;
}

const USERS_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["users"],
  properties: {
    users: {
      type: "array",
      maxItems: 256,
      items: {
        type: "object",
        additionalProperties: false,
        required: ["name", "roles", "passwordHash"],
        properties: {
          name: { type: "string", pattern: "^[A-Za-z0-9_.@-]{1,64}$", description: "login name" },
          roles: { type: "array", minItems: 1, uniqueItems: true, items: { enum: ROLES } },
          passwordHash: { type: "string", pattern: "^scrypt\\$\\d+\\$\\d+\\$\\d+\\$[A-Za-z0-9+/=]+\\$[A-Za-z0-9+/=]+$", maxLength: 256 },
        },
      },
    },
  },
};

const validateUsers = validator<{ users: HmiUser[] }>(USERS_SCHEMA, (d) => {
  const seen = new Set<string>();
  const out: string[] = [];
  d.users.forEach((u, i) => {
    if (seen.has(u.name)) out.push(`users[${i}].name: "${u.name}" appears twice`);
    seen.add(u.name);
    const p = parseHash(u.passwordHash);
    if (p === null) out.push(`users[${i}].passwordHash: scrypt parameters out of range (N a power of two 2^14..2^17, r 1..16, p 1..4: at most 256 MB a login)`);
  });
  return out;
});

/** The users file, validated; throws a ConfigError naming every problem. */
export function loadUsers(path: string): HmiUser[] {
  return loadYamlFile(path, validateUsers).users;
}

// N = 2^14, r = 8: 16 MB and ~50 ms a hash on the controller, OWASP's minimum for scrypt. A login
// is rare and rate-limited; the cost is what makes a stolen file slow to attack.
const COST = { N: 16384, r: 8, p: 1 };
const KEY_BYTES = 32;

interface ParsedHash {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

function parseHash(s: string): ParsedHash | null {
  const [tag, n, r, p, salt, hash] = s.split("$");
  const N = Number(n);
  const R = Number(r);
  const P = Number(p);
  if (tag !== "scrypt" || !Number.isInteger(Math.log2(N)) || N < 2 ** 14 || N > 2 ** 17 || !(R >= 1 && R <= 16) || !(P >= 1 && P <= 4)) return null;
  return { N, r: R, p: P, salt: Buffer.from(salt, "base64"), hash: Buffer.from(hash, "base64") };
}

function derive(password: string, salt: Buffer, o: ScryptOptions & { N: number; r: number }): Promise<Buffer> {
  // maxmem: node's default (32 MB) is below what the largest costs the file may carry need
  return new Promise((resolve, reject) => scrypt(password, salt, KEY_BYTES, { ...o, maxmem: 256 * o.N * o.r + 1024 * 1024 }, (err, key) => (err === null ? resolve(key) : reject(err))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(password, salt, COST);
  return `scrypt$${COST.N}$${COST.r}$${COST.p}$${salt.toString("base64")}$${hash.toString("base64")}`;
}

/** A hash with the default cost, for a name nobody has: a wrong name costs what a wrong password does. */
const DECOY = { N: COST.N, r: COST.r, p: COST.p, salt: randomBytes(16), hash: randomBytes(KEY_BYTES) };

/** Every password check in this process waits for one of these: too many at once is refused. */
export class PasswordBusyError extends Error {
  constructor() {
    super("too many password checks at once: try again shortly");
    this.name = "PasswordBusyError";
  }
}

/**
 * How many scrypt derivations of a password check run at once in the process, and how many may
 * wait. Each runs on libuv's thread pool, off the main thread, but takes a core and 16 MB for
 * ~50 ms, and the pool (4 threads) is the one the state files' writes and fsyncs wait in: four
 * at once on the controller's 2 cores starved everything else. One at a time leaves a core and
 * three threads of the pool to the daemon; a check beyond the queue is refused, not queued.
 */
export const PASSWORD_CHECKS = { concurrent: 1, waiting: 8 } as const;

let checking = 0;
const waiters: (() => void)[] = [];

async function checkSlot<T>(work: () => Promise<T>): Promise<T> {
  if (checking >= PASSWORD_CHECKS.concurrent) {
    if (waiters.length >= PASSWORD_CHECKS.waiting) throw new PasswordBusyError();
    await new Promise<void>((resolve) => waiters.push(resolve));
  }
  checking++;
  try {
    return await work();
  } finally {
    checking--;
    waiters.shift()?.();
  }
}

/**
 * Whether `password` is the one `user`'s hash was made from; a user that does not exist costs the
 * same and fails. Throws PasswordBusyError when PASSWORD_CHECKS are all taken.
 */
export async function verifyPassword(user: HmiUser | undefined, password: string): Promise<boolean> {
  const h = (user === undefined ? null : parseHash(user.passwordHash)) ?? DECOY;
  const key = await checkSlot(() => derive(password, h.salt, h));
  return user !== undefined && h !== DECOY && h.hash.length === key.length && timingSafeEqual(h.hash, key);
}

/**
 * The users file as it is now, parsed once per change: a login or action looks at its identity
 * (inode, size, change time) and parses it again only when that moved, so a user removed from
 * the file, or given other roles, is so at the next request, and a burst of requests costs one
 * stat each instead of a YAML parse and a schema check each.
 */
export class UsersFile {
  private seen = "";
  private users: HmiUser[] = [];

  constructor(readonly path: string) {}

  /** The users; throws a ConfigError when the file is missing or invalid (nobody gets in). */
  read(): HmiUser[] {
    let id: string;
    try {
      const st = statSync(this.path, { bigint: true });
      id = `${st.ino}:${st.size}:${st.ctimeNs}:${st.mtimeNs}`;
    } catch {
      id = "";
    }
    if (id === "" || id !== this.seen) {
      this.seen = "";
      this.users = loadUsers(this.path);
      this.seen = id;
    }
    return this.users;
  }
}

/** Adds or replaces a user in the file (created if missing), written whole to a temporary file and renamed, mode 0600. */
export async function setUser(path: string, name: string, roles: Role[], password: string): Promise<void> {
  let users: HmiUser[] = [];
  try {
    users = loadUsers(path);
  } catch (err) {
    if ((err as { problems?: string[] }).problems?.some((p) => p.includes("ENOENT")) !== true) throw err;
  }
  const user: HmiUser = { name, roles, passwordHash: await hashPassword(password) };
  validateUsers({ users: [user] }, path);
  const next = [...users.filter((u) => u.name !== name), user];
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, stringify({ users: next }), { mode: 0o600 });
  renameSync(tmp, path);
}
