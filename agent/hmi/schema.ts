// The HMI's config section (`hmi`): its schema, and its type derived from it (apart from the
// server so that config checking does not load it).
import { existsSync } from "node:fs";
import { arr, bool, int, obj, optional, str, type Infer } from "../../lib/schema-builders.js";
import { loadUsers } from "./users.js";

/** A server's optional TLS keys (the HMI's, the Redfish service's). */
export const serverTls = (description: string) =>
  optional(
    obj(
      {
        certFile: str("server certificate chain, PEM", { minLength: 1 }),
        keyFile: str("server private key, PEM", { minLength: 1 }),
      },
      description,
      ["certFile", "keyFile"],
    ),
  );

/**
 * A served endpoint's connection caps (the HMI's, the Redfish service's): past either, a
 * connection is closed as it is accepted, so a flood of half-open connections costs the daemon
 * nothing it has to walk (lib/http-server.ts).
 */
export const connectionKeys = () => ({
  maxConnections: int(1, 4096, 64, "connections open at once from every address together; one more is closed as it is accepted"),
  maxConnectionsPerAddress: int(1, 1024, 16, "connections open at once from one address (a browser opens about 6, and 1 for each live page); one more is closed as it is accepted"),
});

/** The caps of a served endpoint's config, as lib/http-server.ts takes them. */
export const connectionLimits = (c: { maxConnections: number; maxConnectionsPerAddress: number }) => ({ maxConnections: c.maxConnections, maxPerAddress: c.maxConnectionsPerAddress });

export const HMI_SCHEMA = obj(
  {
    enabled: bool(true, "serve the pod's web HMI (docs/hmi.md)"),
    host: str("address to bind: loopback by default; the controller's service-port address to reach it from a laptop", { default: "127.0.0.1" }),
    port: int(0, 65535, 8470, "port (0 = ephemeral)"),
    updateHz: int(1, 20, 5, "live updates a second to each open page"),
    maxClients: int(1, 64, 8, "live pages open at once; one more is refused with 503. With a users file, pages without a login take at most half (rounded up), so that a logged-in operator finds one free"),
    maxClientsPerAddress: int(1, 64, 2, "live pages open at once from one address; one more is refused with 503"),
    maxClientsPerUser: int(1, 64, 4, "live pages open at once for one logged-in user; one more is refused with 503"),
    livePageS: int(5, 3600, 60, "a live page's stream lasts this long, then the browser connects again (within a second, the page staying live) and meets the caps again: no client holds a slot for longer, read or not"),
    trendMinutes: int(1, 60, 15, "how far back the trends reach: every field point, output, setpoint and cap, sampled once a second in memory (4 bytes a sample)"),
    usersFile: optional(str("who may log in to act (acknowledge, reset a leak, setpoints, modes, isolation): a YAML file written by `podwarden hmi-user`; without it the HMI is view-only", { minLength: 1 })),
    sessionIdleS: int(60, 86400, 900, "a login ends after this long without a request"),
    allowedHosts: arr(str("a host name", { minLength: 1, maxLength: 253 }), "names the HMI answers to (in the Host header) besides an IP address and localhost: a request that names any other host is refused with 421, so that a page elsewhere cannot reach the HMI through a name it points at the controller (DNS rebinding)", { default: [], maxItems: 32 }),
    knownAddresses: arr(str("an IPv4 or IPv6 address, or a CIDR block", { pattern: "^([0-9]{1,3}(\\.[0-9]{1,3}){3}(/[0-9]{1,2})?|[0-9a-fA-F:]*:[0-9a-fA-F:.]*(/[0-9]{1,3})?)$", maxLength: 64 }), "addresses known for every user, such as the operators' workstations: failed logins from elsewhere (the limits per user and in all) cannot lock out a user with the right password from one of these, nor from an address the user has logged in from since the start; only that user's failures from that address count there (docs/security.md)", { default: [], maxItems: 64 }),
    tls: serverTls("serve over HTTPS with this certificate"),
    ...connectionKeys(),
  },
  "the pod's web HMI, served by the daemon",
);

export type HmiConfig = Infer<typeof HMI_SCHEMA>;

/** What the schema cannot say: the certificate files exist (check-config and a reload say so before the daemon tries). */
export function hmiProblems(c: HmiConfig): string[] {
  return endpointProblems(c, "hmi");
}

/** A served endpoint's files: its certificate and key exist, its users file reads. `key` is its config section. */
export function endpointProblems(c: { enabled: boolean; tls?: { certFile: string; keyFile: string }; usersFile?: string }, key: string): string[] {
  if (!c.enabled) return [];
  const out = c.tls === undefined ? [] : (["certFile", "keyFile"] as const).filter((k) => !existsSync(c.tls![k])).map((k) => `${key}.tls.${k}: no file ${c.tls![k]}`);
  if (c.usersFile !== undefined) {
    try {
      loadUsers(c.usersFile);
    } catch (err) {
      out.push(...((err as { problems?: string[] }).problems ?? [(err as Error).message]).map((p) => `${key}.usersFile (${c.usersFile}): ${p}`));
    }
  }
  return out;
}
