// The daemon's claims on its pod and state directory (agent/ops/instance-lock.ts), in process.
// test/agent-daemon.test.ts runs the same through `podwarden run`.
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, copyFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { daemonClaims, InstanceLock, InstanceLockError, lockDirectory, removeStale } from "../agent/ops/instance-lock.js";
import { tempDir } from "./helpers/temp-dirs.js";

const me = { pid: process.pid, pod: "t/p", config: "/etc/podwarden/pod.yaml" };
const site = `test-${process.pid}-${Date.now()}`;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
/** A lock directory of this test's own, so a daemon running on the host cannot interfere. */
function lockDir(): string {
  const parent = tempDir("pw-lockdir-");
  dirs.push(parent);
  return join(parent, "locks");
}
const isRoot = process.getuid?.() === 0;

describe("instance lock", () => {
  it("takes every claim or none, and names the holder of the one it could not take", async () => {
    const dir = lockDir();
    const held = await InstanceLock.acquire(daemonClaims(site, "a", undefined), me, dir);
    const both = [...daemonClaims(site, "b", undefined), ...daemonClaims(site, "a", undefined)];
    const err = await InstanceLock.acquire(both, me, dir).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(InstanceLockError);
    expect((err as Error).message).toContain(`another podwarden (pid ${process.pid}, config /etc/podwarden/pod.yaml) is already running pod ${site}/a`);
    // the claim on pod b, taken before the failure, was given back
    const b = await InstanceLock.acquire(daemonClaims(site, "b", undefined), me, dir);
    await b.release();
    await held.release();
    // and a released claim can be taken again
    const again = await InstanceLock.acquire(daemonClaims(site, "a", undefined), me, dir);
    await again.release();
  });

  it("runs unguarded, saying why, when the platform refuses the claim's socket (here: no descriptors left)", () => {
    // a child with a small descriptor limit, every descriptor used before it claims
    const script = `
      import { openSync } from "node:fs";
      import { daemonClaims, InstanceLock } from "./dist/agent/ops/instance-lock.js";
      try { for (;;) openSync("/dev/null", "r"); } catch {}
      const lock = await InstanceLock.acquire(daemonClaims(${JSON.stringify(site)}, "e", undefined), { pid: process.pid, pod: "x", config: "y" }, ${JSON.stringify(lockDir())});
      process.stdout.write(JSON.stringify(lock.unguarded));
    `;
    const r = spawnSync("sh", ["-c", 'ulimit -n 64 && exec node --input-type=module -e "$0"', script], { encoding: "utf8", timeout: 30_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([`pod ${site}/e: the claim's socket was refused (EMFILE)`]);
  });

  it("sees one state directory reached by two paths (a symlink) as one claim", async () => {
    const dir = tempDir("pw-lock-");
    const other = tempDir("pw-lock-");
    dirs.push(dir, other);
    const link = join(other, "state");
    symlinkSync(dir, link);
    const locks = lockDir();
    const held = await InstanceLock.acquire(daemonClaims(site, "c", dir), me, locks);
    await expect(InstanceLock.acquire(daemonClaims(site, "d", link), me, locks)).rejects.toThrow(/already running state directory/);
    await held.release();
  });

  it("replaces the claim of a daemon that was SIGKILLed, and of a file planted at a claim's path", async () => {
    const dir = lockDir();
    const script = `
      import { daemonClaims, InstanceLock } from "./dist/agent/ops/instance-lock.js";
      await InstanceLock.acquire(daemonClaims(${JSON.stringify(site)}, "k", undefined), { pid: process.pid, pod: "x", config: "victim" }, ${JSON.stringify(dir)});
      process.stdout.write("held\\n");
      setInterval(() => undefined, 1000);
    `;
    const child = spawn("node", ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((ok) => child.stdout.once("data", () => ok()));
    await expect(InstanceLock.acquire(daemonClaims(site, "k", undefined), me, dir)).rejects.toThrow(/config victim\) is already running pod/);
    child.kill("SIGKILL");
    await new Promise((ok) => child.once("exit", ok));
    const sock = readdirSync(dir);
    expect(sock).toHaveLength(1); // the dead daemon's socket file is still there
    const lock = await InstanceLock.acquire(daemonClaims(site, "k", undefined), me, dir);
    expect(lock.unguarded).toEqual([]);
    await lock.release();
    // a plain file where a claim's socket would be: nobody listens there, so it is stale too
    const held = await InstanceLock.acquire(daemonClaims(site, "k", undefined), me, dir);
    await held.release();
    writeFileSync(join(dir, sock[0]), "not a socket");
    const again = await InstanceLock.acquire(daemonClaims(site, "k", undefined), me, dir);
    expect(again.unguarded).toEqual([]);
    await again.release();
  });

  it("never removes a live claim as stale, though another daemon took it between the probe and the removal", async () => {
    // the race this guards: daemons A and B both find a dead daemon's claim stale; A replaces it
    // first; B, acting on its older probe, then removes what is now A's live claim
    const dir = lockDir();
    const a = await InstanceLock.acquire(daemonClaims(site, "race", undefined), me, dir);
    const path = join(dir, readdirSync(dir)[0]);
    await removeStale(path); // B's removal, after A took the claim
    expect(readdirSync(dir)).toEqual([basename(path)]); // A's claim is back in place, nothing left aside
    await expect(InstanceLock.acquire(daemonClaims(site, "race", undefined), me, dir)).rejects.toThrow(InstanceLockError);
    await a.release();
  });

  it("cannot be squatted: another user can neither claim in the lock directory nor stop the daemon's start", async () => {
    // the lock directory is created private (0700, this user's)
    const dir = lockDir();
    const held = await InstanceLock.acquire(daemonClaims(site, "s", undefined), me, dir);
    expect(held.unguarded).toEqual([]);
    await held.release();
    if (isRoot) {
      // another local user (nobody) tries to claim the pod first in the daemon's lock directory:
      // refused by the directory's permissions, so the daemon's own claim still works
      // nobody may not be able to read the checkout (a clone under a 0700 mktemp directory in CI):
      // it gets its own copy of the module, which imports only node: built-ins
      const moduleCopy = join(dir, "..", "instance-lock.js");
      copyFileSync("dist/agent/ops/instance-lock.js", moduleCopy);
      chmodSync(moduleCopy, 0o644);
      const script = `
        import { daemonClaims, InstanceLock } from ${JSON.stringify(moduleCopy)};
        const lock = await InstanceLock.acquire(daemonClaims(${JSON.stringify(site)}, "s", undefined), { pid: 1, pod: "forged", config: "forged" }, ${JSON.stringify(dir)});
        process.stdout.write(JSON.stringify(lock.unguarded));
      `;
      chmodSync(join(dir, ".."), 0o755); // mkdtemp's parent is 0700: let nobody reach the lock directory's entry
      const r = spawnSync("node", ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 30_000, uid: 65534, gid: 65534 });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual([expect.stringMatching(/belongs to uid 0, not to this user \(uid 65534\)/)]);
      const mine = await InstanceLock.acquire(daemonClaims(site, "s", undefined), me, dir);
      expect(mine.unguarded).toEqual([]);
      await mine.release();
      // a lock directory another user owns: the daemon does not use it, and starts, unguarded
      chownSync(dir, 65534, 65534);
      const foreign = await InstanceLock.acquire(daemonClaims(site, "s", undefined), me, dir);
      expect(foreign.unguarded).toEqual([expect.stringMatching(/belongs to uid 65534, not to this user/)]);
      chownSync(dir, 0, 0);
    }
    // a lock directory others can write: not used, the daemon starts, and says why
    chmodSync(dir, 0o777);
    const open = await InstanceLock.acquire(daemonClaims(site, "s", undefined), me, dir);
    expect(open.unguarded).toEqual([`pod ${site}/s: ${dir} has mode 777: other users could hold its claims (it must be 700)`]);
  });

  it("finds the lock directory: systemd's RuntimeDirectory first, then /run/podwarden as root", () => {
    expect(lockDirectory({ PODWARDEN_LOCK_DIR: "/x", RUNTIME_DIRECTORY: "/run/podwarden" })).toBe("/x");
    expect(lockDirectory({ RUNTIME_DIRECTORY: "/run/pw:/run/other" })).toBe("/run/pw");
    if (isRoot) expect(lockDirectory({})).toBe("/run/podwarden");
    else expect(lockDirectory({ XDG_RUNTIME_DIR: "/run/user/1000" })).toMatch(/^\/run\/(podwarden|user\/1000\/podwarden)$/);
  });
});
