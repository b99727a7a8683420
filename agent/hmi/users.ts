// The HMI's users file (`hmi.usersFile`): who may log in, with which roles (the same observer,
// operator and engineer as signed commands), and their passwords as scrypt hashes
// (node:crypto). Written by `podwarden hmi-user`; read by the daemon at start and on reload.
//
//   users:
//     - name: alice
//       roles: [operator]
//       passwordHash: scrypt$16384$8$1$<salt, base64>$<hash, base64>
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { writeFileSync, renameSync } from "node:fs";
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

/** Whether `password` is the one `user`'s hash was made from; a user that does not exist costs the same and fails. */
export async function verifyPassword(user: HmiUser | undefined, password: string): Promise<boolean> {
  const h = (user === undefined ? null : parseHash(user.passwordHash)) ?? DECOY;
  const key = await derive(password, h.salt, h);
  return user !== undefined && h !== DECOY && h.hash.length === key.length && timingSafeEqual(h.hash, key);
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
