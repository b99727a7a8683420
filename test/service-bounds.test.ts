// The service plane's own bounds (issue #49), each alone: the login limiter's places taken before
// a password is looked at, the process's password checks one at a time, the users file parsed
// once per change, the HTTP servers' connection caps and timeouts, and a reload's config read
// in a worker with a deadline. test/service-attacks.test.ts runs the attacks they answer
// against the daemon.
import { copyFileSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadAgentConfig } from "../agent/config/load.js";
import { loadAgentConfigOffThread } from "../agent/config/load-off-thread.js";
import { PASSWORD_CHECKS, PasswordBusyError, setUser, UsersFile, verifyPassword } from "../agent/hmi/users.js";
import { ConfigError } from "../lib/config-file.js";
import { boundedServer, closeHttp, listenHttp, type BoundedServer } from "../lib/http-server.js";
import { waitFor } from "./helpers/processes.js";
import { tempDir } from "./helpers/temp-dirs.js";

describe("password checks", () => {
  it("run one at a time in the process, with at most 8 waiting: beyond, refused at once", async () => {
    const dir = tempDir("podwarden-pw-");
    const file = join(dir, "users.yaml");
    await setUser(file, "alice", ["operator"], "right");
    const alice = new UsersFile(file).read()[0];
    const n = PASSWORD_CHECKS.concurrent + PASSWORD_CHECKS.waiting + 3;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => verifyPassword(alice, i === 0 ? "right" : "wrong").then(String, (e: Error) => e.name)));
    expect(results[0]).toBe("true");
    expect(results.filter((r) => r === "false")).toHaveLength(PASSWORD_CHECKS.concurrent + PASSWORD_CHECKS.waiting - 1);
    expect(results.filter((r) => r === new PasswordBusyError().name)).toHaveLength(3);
    // and once the queue has drained, checks go through again
    expect(await verifyPassword(alice, "right")).toBe(true);
  });

  it("read the users file once per change: a user added or removed is so at the next read", async () => {
    const dir = tempDir("podwarden-pw-");
    const file = join(dir, "users.yaml");
    await setUser(file, "alice", ["operator"], "a");
    const users = new UsersFile(file);
    const first = users.read();
    expect(users.read()).toBe(first); // not parsed again
    await setUser(file, "bob", ["observer"], "b");
    expect(users.read().map((u) => u.name)).toEqual(["alice", "bob"]);
    writeFileSync(file, "users: [ { name: eve } ]\n");
    expect(() => users.read()).toThrow(ConfigError);
    expect(() => users.read()).toThrow(ConfigError); // and stays refused, not served from the old parse
  });
});

describe("a bounded HTTP server", () => {
  let server: BoundedServer | null = null;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets) s.destroy();
    sockets.length = 0;
    await closeHttp(server);
    server = null;
  });

  /** A connection from `localAddress`, once connected. */
  const dial = (port: number, localAddress: string): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const s = connect({ host: "127.0.0.1", port, localAddress });
      s.resume(); // read whatever the server says, so its close is seen
      sockets.push(s);
      s.once("connect", () => resolve(s));
      s.once("error", reject);
    });
  const closed = (s: Socket): Promise<void> => new Promise((r) => (s.closed ? r() : s.once("close", () => r())));

  it("closes a connection past its cap per address and past its cap in all, as it is accepted, and counts them", async () => {
    server = boundedServer({ maxHeaderBytes: 1024, limits: { maxConnections: 3, maxPerAddress: 2 } }, (_req, res) => res.end("ok"));
    const port = await listenHttp(server, { host: "127.0.0.1", port: 0 });
    const a1 = await dial(port, "127.0.4.1");
    const a2 = await dial(port, "127.0.4.1");
    const a3 = await dial(port, "127.0.4.1");
    a3.on("error", () => undefined);
    await closed(a3);
    await waitFor(() => server!.connectionCounts().open === 2, "two open");
    expect(server.connectionCounts().refusedPerAddress).toBe(1);
    const b1 = await dial(port, "127.0.4.2");
    const b2 = await dial(port, "127.0.4.2");
    b2.on("error", () => undefined);
    await closed(b2);
    expect(server.connectionCounts().refusedTotal).toBe(1);
    for (const s of [a1, a2, b1]) expect(s.closed).toBe(false);
  });

  it("closes a connection that never finishes its headers, and one that sends nothing", async () => {
    server = boundedServer({ maxHeaderBytes: 1024, limits: { maxConnections: 8, maxPerAddress: 8 } }, (_req, res) => res.end("ok"));
    const port = await listenHttp(server, { host: "127.0.0.1", port: 0 });
    const slow = await dial(port, "127.0.4.3");
    slow.write("GET / HTTP/1.1\r\nHost: x\r\n");
    const silent = await dial(port, "127.0.4.3");
    // bounded by the test's own timeout, not asserted as a duration: each closes by the server's hand
    await Promise.all([closed(slow), closed(silent)]);
    await waitFor(() => server!.connectionCounts().open === 0, "none open");
  });
});

describe("a reload's config, read in a worker", () => {
  it("is the same validated config as read in place, and an invalid one is refused with its problems", async () => {
    const dir = tempDir("podwarden-reload-");
    const file = join(dir, "agent.yaml");
    copyFileSync("configs/demo-pod.yaml", file);
    const off = await loadAgentConfigOffThread(file);
    expect(off).toEqual(loadAgentConfig(file));
    writeFileSync(file, "site: x\npod: y\nnot-a-key: 1\n");
    const err = await loadAgentConfigOffThread(file).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems.join("\n")).toContain("not-a-key: unknown key");
  });

  it("refuses a file still being read at its deadline", async () => {
    const dir = tempDir("podwarden-reload-");
    const file = join(dir, "agent.yaml");
    let s = "base: &a0 {k: 1}\n";
    for (let i = 1; s.length < 400 * 1024; i++) s += `n${i}: &a${i}\n  <<: *a${i - 1}\n  x${i}: [*a${i - 1}, *a${i - 1}]\n`;
    writeFileSync(file, s);
    const err = await loadAgentConfigOffThread(file, process.env, { deadlineMs: 20, heapMb: 256 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems[0]).toMatch(/not read within 0\.02 s/);
  });
});
