// The Debian package (issue #51 item 1), as a site installs it: `npm run package`'s .deb passes
// lintian with no errors; `apt-get install ./…deb` on this machine installs it offline, with its
// user, directories and the config template; the installed podwarden prints its version and
// commit, checks the template, runs a pod against the simulator as the service's user; its unit
// passes systemd-analyze verify; its health window records it good. An upgrade to a deliberately
// broken build (its Modbus driver dials the wrong port) keeps the config and the state and the
// version it replaced, fails its health window saying why, and `podwarden rollback` returns to
// the last good version with the config it ran with (issue #51 item 2). A removal keeps the
// config and the state, a purge deletes both. The offline bundle's signature checks with the
// fleet's public key and openssl alone, and fails for a changed package.
//
// It installs on this machine (as CI does, as root): a podwarden package already installed here
// is someone's, and the test refuses to touch it.
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keygen } from "../agent/commands/send-command.js";
import { demoConfigFor, TEST_POD } from "./helpers/agent.js";
import { startDaemon, untilRunning, type Daemon } from "./helpers/daemon.js";
import { run, stopProcess, waitFor } from "./helpers/processes.js";
import type { ReleaseRecord } from "../agent/release/release-feature.js";
import { startTestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

const arch = execFileSync("dpkg", ["--print-architecture"], { encoding: "utf8" }).trim();
const V1 = "0.1.0~test1";
const V2 = "0.1.0~test2";
/** The installed package's version, or null; "config-files" for one removed with its config kept. */
const installed = (): string | null => {
  let status: string;
  try {
    status = execFileSync("dpkg-query", ["-W", "-f", "$" + "{Status} $" + "{Version}", "podwarden"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  } catch {
    return null;
  }
  if (status.startsWith("install ok installed ")) return status.slice("install ok installed ".length);
  return status.includes("config-files") ? "config-files" : null;
};
const apt = async (...args: string[]): Promise<void> => {
  const r = await run("apt-get", ["-y", "-q", "--no-install-recommends", ...args], 180_000, { ...process.env, DEBIAN_FRONTEND: "noninteractive" });
  expect(r.code, `apt-get ${args.join(" ")}\n${r.stdout}\n${r.stderr}`).toBe(0);
};
const hasUser = (): boolean => {
  try {
    execFileSync("getent", ["passwd", "podwarden"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};

describe("the Debian package", () => {
  const dir = tempDir("podwarden-deb-");
  const out = join(dir, "out");
  const deb1 = join(out, `podwarden_${V1}_${arch}.deb`);
  const deb2 = join(dir, `podwarden_${V2}_${arch}.deb`);
  let userBefore = false;
  let mine = false;

  beforeAll(async () => {
    expect(process.getuid?.(), "the package test installs with apt-get: run npm test as root, as CI does").toBe(0);
    const was = installed();
    expect(was, `a podwarden package is on this machine (${was}): the package test will not touch it`).toBeNull();
    userBefore = hasUser();
    mine = true;
    // the fleet's key for the offline bundle, as `podwarden keygen` makes it
    keygen(dir, "fleet");
    const r = await run("bash", ["scripts/package-deb.sh", "--version", V1, "--out", out, "--sign", join(dir, "fleet.key")], 300_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim().split("\n")).toEqual([deb1, join(out, "bundle", "SHA256SUMS.sig")]);
    // the upgrade: a later version, deliberately broken: repacked from the first with its version
    // raised and its Modbus TCP transport dialling port 9, where no device answers
    const x = join(dir, "repack");
    execFileSync("dpkg-deb", ["-R", deb1, x]);
    const edit = (f: string, from: string, to: string): void => {
      const text = readFileSync(join(x, f), "utf8");
      expect(text).toContain(from);
      writeFileSync(join(x, f), text.replace(from, to));
    };
    edit("DEBIAN/control", `Version: ${V1}`, `Version: ${V2}`);
    edit("usr/lib/podwarden/dist/build-info.json", `"version":"${V1}"`, `"version":"${V2}"`);
    edit("usr/lib/podwarden/dist/drivers/modbus/transports.js", "port: dc.tcp.port,", "port: 9,");
    execFileSync("fakeroot", ["dpkg-deb", "-Zgzip", "-z1", "--build", x, deb2], { stdio: "ignore" });
  }, 400_000);

  afterAll(async () => {
    if (!mine) return;
    if (installed() !== null) await run("apt-get", ["-y", "-q", "purge", "podwarden"], 180_000, { ...process.env, DEBIAN_FRONTEND: "noninteractive" });
    if (!userBefore && hasUser()) await run("userdel", ["podwarden"]);
    rmSync("/etc/podwarden", { recursive: true, force: true });
    rmSync("/var/lib/podwarden", { recursive: true, force: true });
  }, 200_000);

  it("passes lintian with no errors, and holds production dependencies only, with this architecture's serial binding", async () => {
    const l = await run("lintian", ["--fail-on", "error", deb1], 300_000);
    expect(l.stdout.split("\n").filter((x) => x.startsWith("E:")), l.stdout).toEqual([]);
    expect(l.code, l.stdout + l.stderr).toBe(0);
    const files = execFileSync("dpkg-deb", ["-c", deb1], { encoding: "utf8", maxBuffer: 64 << 20 });
    for (const dev of ["vitest", "typescript", "assemblyscript", "playwright-core", "eslint"]) expect(files).not.toContain(`/node_modules/${dev}/`);
    for (const need of ["./usr/lib/podwarden/dist/cli/podwarden.js", "./usr/lib/podwarden/build/hotpath.release.wasm", "./usr/lib/podwarden/node_modules/modbus-serial/", "./usr/lib/podwarden/agent/hmi/static/", "./lib/systemd/system/podwarden.service", "./usr/share/podwarden/pod-template.yaml", "./usr/share/man/man1/podwarden.1.gz", "./usr/bin/podwarden -> ../lib/podwarden/dist/cli/podwarden.js"]) expect(files).toContain(need);
    const bindings = files.split("\n").filter((f) => f.endsWith(".node")).map((f) => f.split(/\s+/).pop());
    const prebuild = { amd64: "linux-x64", arm64: "linux-arm64", armhf: "linux-arm" }[arch];
    expect(bindings.length).toBeGreaterThan(0);
    for (const b of bindings) expect(b).toMatch(new RegExp(`/prebuilds/${prebuild}/.*glibc\\.node$`));
    const info = execFileSync("dpkg-deb", ["-f", deb1, "Depends", "Architecture"], { encoding: "utf8" });
    expect(info).toContain("nodejs (>= 20.19)");
    expect(info).toContain(`Architecture: ${arch}`);
  }, 300_000);

  it("rollback puts the config in place back when the kept version cannot be installed", async () => {
    // a state directory with a good build kept aside whose package apt-get refuses (a dependency
    // no repository has): nothing on the machine changes, and the config is the one it found
    const state = join(dir, "rollback-state");
    const root = join(state, "releases", "previous", "root");
    mkdirSync(join(root, "DEBIAN"), { recursive: true });
    mkdirSync(join(root, "usr/lib/podwarden/dist"), { recursive: true });
    writeFileSync(join(root, "usr/lib/podwarden/dist/build-info.json"), JSON.stringify({ commit: "0123456789abcdef", dirty: false, version: "0.0.9~kept" }));
    writeFileSync(join(root, "DEBIAN/control"), `Package: podwarden\nVersion: 0.0.9~kept\nArchitecture: ${arch}\nMaintainer: test <test@podwarden.invalid>\nDepends: podwarden-test-no-such-package\nDescription: kept aside\n a rollback test\n`);
    writeFileSync(join(state, "releases", "previous", "pod.yaml"), "site: kept\n");
    writeFileSync(join(state, "release.json"), JSON.stringify({ good: { version: "0.0.9~kept", commit: "0123456789abcdef", at: "2026-12-01T00:00:00Z", devices: [], criticals: [] }, trial: null, failed: null }));
    const config = join(dir, "rollback-pod.yaml");
    writeFileSync(config, "site: in-place\n");
    const r = await run("node", ["dist/cli/podwarden.js", "rollback", "--state-dir", state, "-c", config], 180_000);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toContain("rollback: apt-get could not install");
    expect(r.stdout).toContain(`${config} is the one in place again`);
    expect(readFileSync(config, "utf8")).toBe("site: in-place\n");
    expect(installed()).toBeNull();
  }, 200_000);

  it("signs the offline bundle: its SHA256SUMS checks with the fleet's public key and openssl, and a changed package does not", async () => {
    const b = join(out, "bundle");
    const verify = async (): Promise<number | null> => (await run("openssl", ["pkeyutl", "-verify", "-pubin", "-inkey", join(dir, "fleet.pub"), "-rawin", "-in", join(b, "SHA256SUMS"), "-sigfile", join(b, "SHA256SUMS.sig")])).code;
    expect(await verify()).toBe(0);
    expect(execFileSync("sha256sum", ["-c", "SHA256SUMS"], { cwd: b, encoding: "utf8" })).toContain(`podwarden_${V1}_${arch}.deb: OK`);
    // a package swapped in the bundle fails its sum; sums rewritten for it fail the signature
    const sumsText = readFileSync(join(b, "SHA256SUMS"), "utf8");
    writeFileSync(join(b, "SHA256SUMS"), sumsText.replace(/^[0-9a-f]{64}/, "0".repeat(64)));
    expect(await verify()).not.toBe(0);
    writeFileSync(join(b, "SHA256SUMS"), sumsText);
    expect(await verify()).toBe(0);
  });

  it("installs offline with apt-get, runs as its user, verifies its unit; a broken upgrade fails its health window and rolls back; removed, the config and the state kept", async () => {
    await apt("install", deb1);
    expect(installed()).toBe(V1);
    // its version and the commit it was built from
    const built = (JSON.parse(readFileSync("dist/build-info.json", "utf8")) as { commit: string }).commit;
    const v = await run("/usr/bin/podwarden", ["--version"]);
    expect(v.stdout.trim()).toMatch(new RegExp(`^podwarden ${V1.replace(/[.~]/g, "\\$&")} \\(commit ${built}(-dirty)?\\)$`));
    // the user, its directories, and the template as the config
    expect(hasUser()).toBe(true);
    expect(readFileSync("/etc/podwarden/pod.yaml", "utf8")).toBe(readFileSync("configs/pod-template.yaml", "utf8"));
    expect(statSync("/etc/podwarden/pod.yaml").mode & 0o777).toBe(0o640);
    const podwardenUid = Number(execFileSync("id", ["-u", "podwarden"], { encoding: "utf8" }));
    expect(statSync("/var/lib/podwarden").uid).toBe(podwardenUid);
    const check = await run("runuser", ["-u", "podwarden", "--", "/usr/bin/podwarden", "check-config", "-c", "/etc/podwarden/pod.yaml"], 60_000, { ...process.env, MQTT_PASSWORD: "x" });
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain("/etc/podwarden/pod.yaml: valid");
    const unit = await run("systemd-analyze", ["verify", "/lib/systemd/system/podwarden.service"], 60_000);
    expect(unit.stderr.trim()).toBe("");
    expect(unit.code).toBe(0);
    expect(readFileSync("/lib/systemd/system/podwarden.service", "utf8")).toMatch(/^ExecStart=\/usr\/bin\/env node .* \/usr\/lib\/podwarden\/dist\/cli\/podwarden\.js run -c \/etc\/podwarden\/pod\.yaml$/m);

    // the installed podwarden runs a pod, as the service's user, against the simulator, with the
    // service's state directory; its first run here is recorded good after its health window
    const t = await startTestSim();
    const run1 = join(dir, "run");
    mkdirSync(run1, { recursive: true });
    const data = demoConfigFor(t.sim, (c) => {
      c.pod = `${TEST_POD}-deb`;
      c.stateDir = "/var/lib/podwarden";
      c.hmi = { ...(c.hmi as object | undefined), port: 0 };
      c.metrics = { ...(c.metrics as object | undefined), port: 0 };
      c.release = { healthWindowS: 1 };
    });
    writeFileSync(join(run1, "agent.yaml"), stringify(data));
    for (const p of [dir, run1, join(run1, "agent.yaml")]) chownSync(p, podwardenUid, podwardenUid);
    const installedPod = async (until: string, check?: (d: Daemon) => Promise<void>): Promise<Daemon> => {
      const d = startDaemon(join(run1, "agent.yaml"), { command: ["runuser", "-u", "podwarden", "--", "/usr/bin/podwarden"] });
      try {
        await untilRunning(d, 60_000);
        const said = (): string => JSON.stringify(d.lines.filter((l) => /window|trial|release/.test(String(l.msg)) || l.stderr !== undefined));
        await waitFor(() => d.lines.some((l) => l.msg === until), until, 60_000).catch((err: Error) => {
          throw new Error(`${err.message}: ${said()}`);
        });
        await check?.(d);
      } finally {
        await stopProcess(d.child);
      }
      return d;
    };
    const release = (): ReleaseRecord => JSON.parse(readFileSync("/var/lib/podwarden/release.json", "utf8")) as ReleaseRecord;
    try {
      await installedPod("health window passed: this build is recorded good", async (d) => {
        // its HMI with the page's chart library (from the package's node_modules) and its health
        const hmi = d.lines.find((l) => l.msg === "hmi served")?.url as string | undefined;
        expect(hmi, JSON.stringify(d.lines.slice(-20))).toBeDefined();
        expect((await fetch(hmi!)).status).toBe(200);
        expect((await fetch(new URL("/uplot.js", hmi)).then((r) => r.text())).length).toBeGreaterThan(10_000);
        const metrics = d.lines.find((l) => l.msg === "metrics and health on /metrics, /healthz, /readyz") as { port: number } | undefined;
        expect([200, 503]).toContain((await fetch(`http://127.0.0.1:${metrics!.port}/healthz`)).status);
        expect(d.lines.filter((l) => /could not start/.test(String(l.msg)))).toEqual([]);
      });
      expect(release().good?.version).toBe(V1);

      // the operator's config and the pod's state, then the upgrade to the broken build
      const edited = `${readFileSync("/etc/podwarden/pod.yaml", "utf8")}# edited at the pod\n`;
      writeFileSync("/etc/podwarden/pod.yaml", edited);
      writeFileSync("/var/lib/podwarden/marker", "kept\n");
      await apt("install", deb2);
      expect(installed()).toBe(V2);
      expect(readFileSync("/etc/podwarden/pod.yaml", "utf8")).toBe(edited);
      expect(readFileSync("/var/lib/podwarden/marker", "utf8")).toBe("kept\n");
      // the version it replaced, kept aside whole with the config it ran with
      expect(readFileSync("/var/lib/podwarden/releases/previous/pod.yaml", "utf8")).toBe(edited);
      expect(readFileSync("/var/lib/podwarden/releases/previous/root/DEBIAN/control", "utf8")).toContain(`Version: ${V1}`);
      // its window fails: no device answers as under V1
      await installedPod("health window failed");
      expect(release().good?.version).toBe(V1);
      expect(release().failed?.version).toBe(V2);
      expect(release().failed?.why.join("; ")).toMatch(new RegExp(`devices cdu, rack-1, .*rack-8(#leak)? answered under ${V1.replace(/[.~]/g, "\\$&")} \\(commit [0-9a-f]{12}\\) and do not now`));

      // the operator changed the config for the new version; rollback: the status first, then back
      const forV2 = `${edited}# changed for ${V2}\n`;
      writeFileSync("/etc/podwarden/pod.yaml", forV2);
      const status = await run("/usr/bin/podwarden", ["rollback", "--status", "--state-dir", "/var/lib/podwarden"]);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toContain(`failed:      ${V2}`);
      expect(status.stdout).toContain(`rollback would install ${V1}, with the config it ran with`);
      expect(installed()).toBe(V2);
      const back = await run("/usr/bin/podwarden", ["rollback", "--state-dir", "/var/lib/podwarden"], 180_000);
      expect(back.code, back.stdout + back.stderr).toBe(0);
      expect(installed()).toBe(V1);
      expect(readFileSync("/etc/podwarden/pod.yaml", "utf8")).toBe(edited);
      const kept = readdirSync("/etc/podwarden").filter((f) => f.startsWith("pod.yaml.rolled-back-"));
      expect(kept).toHaveLength(1);
      expect(readFileSync(join("/etc/podwarden", kept[0]), "utf8")).toBe(forV2);
      // V1 again: the last good build, no window; and a second rollback has nothing to do
      const again = await installedPod("podwarden running");
      expect(again.lines.some((l) => typeof l.msg === "string" && l.msg.startsWith("on trial"))).toBe(false);
      const none = await run("/usr/bin/podwarden", ["rollback", "--state-dir", "/var/lib/podwarden"]);
      expect(none.code).toBe(1);
      expect(none.stdout).toContain(`rollback: the last good build, ${V1}`);
    } finally {
      await t.stop();
    }

    // removed: the program goes, the config and the state stay
    const config = readFileSync("/etc/podwarden/pod.yaml", "utf8");
    await apt("remove", "podwarden");
    expect(installed()).toBe("config-files");
    expect(existsSync("/usr/lib/podwarden")).toBe(false);
    expect(existsSync("/usr/bin/podwarden")).toBe(false);
    expect(readFileSync("/etc/podwarden/pod.yaml", "utf8")).toBe(config);
    expect(readFileSync("/var/lib/podwarden/marker", "utf8")).toBe("kept\n");
    expect(release().good?.version).toBe(V1);
    // reinstalled, it takes them up again; purged, both go
    await apt("install", deb1);
    expect(readFileSync("/etc/podwarden/pod.yaml", "utf8")).toBe(config);
    await apt("purge", "podwarden");
    expect(installed()).toBeNull();
    expect(existsSync("/etc/podwarden")).toBe(false);
    expect(existsSync("/var/lib/podwarden")).toBe(false);
  }, 400_000);
});
