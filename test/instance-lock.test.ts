// The daemon's claims on its pod and state directory (agent/ops/instance-lock.ts), in process.
// test/agent-daemon.test.ts runs the same through `podwarden run`.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { daemonClaims, InstanceLock, InstanceLockError } from "../agent/ops/instance-lock.js";

const me = { pid: process.pid, pod: "t/p", config: "/etc/podwarden/pod.yaml" };
// unique per run: abstract socket names are host-wide (per network namespace)
const site = `test-${process.pid}-${Date.now()}`;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("instance lock", () => {
  it("takes every claim or none, and names the holder of the one it could not take", async () => {
    const held = await InstanceLock.acquire(daemonClaims(site, "a", undefined), me);
    const both = [...daemonClaims(site, "b", undefined), ...daemonClaims(site, "a", undefined)];
    const err = await InstanceLock.acquire(both, me).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(InstanceLockError);
    expect((err as Error).message).toContain(`another podwarden (pid ${process.pid}, config /etc/podwarden/pod.yaml) is already running pod ${site}/a`);
    // the claim on pod b, taken before the failure, was given back
    const b = await InstanceLock.acquire(daemonClaims(site, "b", undefined), me);
    await b.release();
    await held.release();
    // and a released claim can be taken again
    const again = await InstanceLock.acquire(daemonClaims(site, "a", undefined), me);
    await again.release();
  });

  it("runs unguarded, saying why, when the platform refuses the claim's socket (here: no descriptors left)", () => {
    // a child with a small descriptor limit, every descriptor used before it claims
    const script = `
      import { openSync } from "node:fs";
      import { daemonClaims, InstanceLock } from "./dist/agent/ops/instance-lock.js";
      try { for (;;) openSync("/dev/null", "r"); } catch {}
      const lock = await InstanceLock.acquire(daemonClaims(${JSON.stringify(site)}, "e", undefined), { pid: process.pid, pod: "x", config: "y" });
      process.stdout.write(JSON.stringify(lock.unguarded));
    `;
    const r = spawnSync("sh", ["-c", 'ulimit -n 64 && exec node --input-type=module -e "$0"', script], { encoding: "utf8", timeout: 30_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([`pod ${site}/e: the claim's socket was refused (EMFILE)`]);
  });

  it("sees one state directory reached by two paths (a symlink) as one claim", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pw-lock-"));
    const other = mkdtempSync(join(tmpdir(), "pw-lock-"));
    dirs.push(dir, other);
    const link = join(other, "state");
    symlinkSync(dir, link);
    const held = await InstanceLock.acquire(daemonClaims(site, "c", dir), me);
    await expect(InstanceLock.acquire(daemonClaims(site, "d", link), me)).rejects.toThrow(/already running state directory/);
    await held.release();
  });
});
