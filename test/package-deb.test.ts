// The Debian package (issue #51 item 1), as a site installs it: `npm run package`'s .deb passes
// lintian with no errors; `apt-get install ./…deb` on this machine installs it offline, with its
// user, directories and the config template; the installed podwarden prints its version and
// commit, checks the template, runs a pod against the simulator as the service's user; its unit
// passes systemd-analyze verify; an upgrade over itself keeps the config and the state; a
// removal keeps both, a purge deletes both. The offline bundle's signature checks with the
// fleet's public key and openssl alone, and fails for a changed package.
//
// It installs on this machine (as CI does, as root): a podwarden package already installed here
// is someone's, and the test refuses to touch it.
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keygen } from "../agent/commands/send-command.js";
import { demoConfigFor, TEST_POD } from "./helpers/agent.js";
import { startDaemon, untilRunning } from "./helpers/daemon.js";
import { run, stopProcess } from "./helpers/processes.js";
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
    // the upgrade: the same package as a later version (repacked: a second build would only
    // measure the packaging again)
    const x = join(dir, "repack");
    execFileSync("dpkg-deb", ["-R", deb1, x]);
    const control = join(x, "DEBIAN", "control");
    writeFileSync(control, readFileSync(control, "utf8").replace(`Version: ${V1}`, `Version: ${V2}`));
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
    for (const need of ["./usr/lib/podwarden/dist/cli/podwarden.js", "./usr/lib/podwarden/build/hotpath.release.wasm", "./usr/lib/podwarden/node_modules/modbus-serial/", "./usr/lib/podwarden/agent/hmi/static/", "./lib/systemd/system/podwarden.service", "./usr/share/podwarden/pod-template.yaml", "./usr/bin/podwarden -> ../lib/podwarden/dist/cli/podwarden.js"]) expect(files).toContain(need);
    const bindings = files.split("\n").filter((f) => f.endsWith(".node")).map((f) => f.split(/\s+/).pop());
    const prebuild = { amd64: "linux-x64", arm64: "linux-arm64", armhf: "linux-arm" }[arch];
    expect(bindings.length).toBeGreaterThan(0);
    for (const b of bindings) expect(b).toMatch(new RegExp(`/prebuilds/${prebuild}/.*glibc\\.node$`));
    const info = execFileSync("dpkg-deb", ["-f", deb1, "Depends", "Architecture"], { encoding: "utf8" });
    expect(info).toContain("nodejs (>= 20.19)");
    expect(info).toContain(`Architecture: ${arch}`);
  }, 300_000);

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

  it("installs offline with apt-get, runs as its user, verifies its unit, upgrades over itself and is removed, the config and the state kept", async () => {
    await apt("install", deb1);
    expect(installed()).toBe(V1);
    // its version and the commit it was built from
    const built = (JSON.parse(readFileSync("dist/build-info.json", "utf8")) as { commit: string }).commit;
    const v = await run("/usr/bin/podwarden", ["--version"]);
    expect(v.stdout.trim()).toMatch(new RegExp(`^podwarden 0\\.1\\.0 \\(commit ${built}(-dirty)?\\)$`));
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

    // the installed podwarden runs a pod, as the service's user, against the simulator
    const t = await startTestSim();
    const run1 = join(dir, "run");
    mkdirSync(join(run1, "state"), { recursive: true });
    const data = demoConfigFor(t.sim, (c) => {
      c.pod = `${TEST_POD}-deb`;
      c.stateDir = join(run1, "state");
      c.hmi = { ...(c.hmi as object | undefined), port: 0 };
      c.metrics = { ...(c.metrics as object | undefined), port: 0 };
    });
    writeFileSync(join(run1, "agent.yaml"), stringify(data));
    for (const p of [dir, run1, join(run1, "state"), join(run1, "agent.yaml")]) chownSync(p, podwardenUid, podwardenUid);
    const d = startDaemon(join(run1, "agent.yaml"), { command: ["runuser", "-u", "podwarden", "--", "/usr/bin/podwarden"] });
    try {
      await untilRunning(d, 60_000);
      // its HMI with the page's chart library (from the package's node_modules) and its health
      const hmi = d.lines.find((l) => l.msg === "hmi served")?.url as string | undefined;
      expect(hmi, JSON.stringify(d.lines.slice(-20))).toBeDefined();
      expect((await fetch(hmi!)).status).toBe(200);
      expect((await fetch(new URL("/uplot.js", hmi)).then((r) => r.text())).length).toBeGreaterThan(10_000);
      const metrics = d.lines.find((l) => l.msg === "metrics and health on /metrics, /healthz, /readyz") as { port: number } | undefined;
      expect([200, 503]).toContain((await fetch(`http://127.0.0.1:${metrics!.port}/healthz`)).status);
      expect(d.lines.filter((l) => /could not start/.test(String(l.msg)))).toEqual([]);
    } finally {
      await stopProcess(d.child);
      await t.stop();
    }
    expect(d.lines.some((l) => l.msg === "podwarden running")).toBe(true);

    // the operator's config and the pod's state, then an upgrade over itself
    const edited = `${readFileSync("/etc/podwarden/pod.yaml", "utf8")}# edited at the pod\n`;
    writeFileSync("/etc/podwarden/pod.yaml", edited);
    writeFileSync("/var/lib/podwarden/latches.json", '{"kept":true}\n');
    await apt("install", deb2);
    expect(installed()).toBe(V2);
    expect(readFileSync("/etc/podwarden/pod.yaml", "utf8")).toBe(edited);
    expect(readFileSync("/var/lib/podwarden/latches.json", "utf8")).toBe('{"kept":true}\n');
    expect((await run("/usr/bin/podwarden", ["--version"])).code).toBe(0);

    // removed: the program goes, the config and the state stay
    await apt("remove", "podwarden");
    expect(installed()).toBe("config-files");
    expect(existsSync("/usr/lib/podwarden")).toBe(false);
    expect(existsSync("/usr/bin/podwarden")).toBe(false);
    expect(readFileSync("/etc/podwarden/pod.yaml", "utf8")).toBe(edited);
    expect(readFileSync("/var/lib/podwarden/latches.json", "utf8")).toBe('{"kept":true}\n');
    // reinstalled, it takes them up again; purged, both go
    await apt("install", deb2);
    expect(readFileSync("/etc/podwarden/pod.yaml", "utf8")).toBe(edited);
    await apt("purge", "podwarden");
    expect(installed()).toBeNull();
    expect(existsSync("/etc/podwarden")).toBe(false);
    expect(existsSync("/var/lib/podwarden")).toBe(false);
  }, 400_000);
});
