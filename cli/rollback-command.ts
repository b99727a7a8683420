// `podwarden rollback [--status] [--state-dir <dir>]` (issue #51 item 2): back to the last good
// build, with its config. The package keeps the version it replaces aside at each upgrade
// (deploy/deb/preinst: /var/lib/podwarden/releases/previous, its files, its maintainer scripts
// and the config it ran with); the health window records which build was last good
// (agent/release/, release.json). Rollback rebuilds the kept version's package, puts its config
// back (the one in place kept beside it as pod.yaml.rolled-back-<time>), and installs the package
// with apt-get: its postinst restarts the service if it was running. It refuses, saying why,
// when the version kept aside is not the last good one, or the last good one already runs.
// `--status` prints the record and what rollback would do, and changes nothing.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, statSync, chownSync, chmodSync } from "node:fs";
import { join } from "node:path";
import { checkReleaseRecord, currentRelease, RELEASE_FILE, type ReleaseRecord } from "../agent/release/release-feature.js";
import { releaseName, sameRelease, type ReleaseId } from "../agent/release/health-window.js";
import { readTextBounded } from "../lib/bounded-read.js";
import { readBuildInfo } from "../agent/version.js";

export interface RollbackOptions {
  stateDir: string;
  statusOnly: boolean;
  /** the config the service runs with */
  configFile?: string;
  log: (line: string) => void;
}

/** The build kept aside: its identity (build-info.json) and its Debian version (control). */
function kept(dir: string): { id: ReleaseId; deb: string; arch: string } | null {
  const root = join(dir, "root");
  const control = join(root, "DEBIAN/control");
  const b = readBuildInfo(join(root, "usr/lib/podwarden"));
  if (b === null || !existsSync(control)) return null;
  const fields = readTextBounded(control);
  const deb = /^Version: (\S+)$/m.exec(fields)?.[1];
  const arch = /^Architecture: (\S+)$/m.exec(fields)?.[1];
  if (b.version === null || deb === undefined || arch === undefined) return null;
  return { id: { version: b.version, commit: b.commit }, deb, arch };
}

export function rollbackCommand(o: RollbackOptions): number {
  const configFile = o.configFile ?? "/etc/podwarden/pod.yaml";
  const recordFile = join(o.stateDir, RELEASE_FILE);
  let record: ReleaseRecord | null = null;
  if (existsSync(recordFile)) {
    try {
      record = checkReleaseRecord(JSON.parse(readTextBounded(recordFile)));
    } catch (err) {
      o.log(`rollback: ${recordFile} cannot be read (${(err as Error).message}): which build was good is unknown`);
      return 1;
    }
  }
  const running = currentRelease();
  const previous = join(o.stateDir, "releases", "previous");
  const aside = kept(previous);
  o.log(`installed:   ${releaseName(running)}`);
  o.log(`last good:   ${record?.good ? `${releaseName(record.good)}, recorded ${record.good.at}` : "none recorded"}`);
  if (record?.trial) o.log(`on trial:    ${releaseName(record.trial)} since ${record.trial.since} (${record.trial.starts} start${record.trial.starts === 1 ? "" : "s"})`);
  if (record?.failed) o.log(`failed:      ${releaseName(record.failed)} at ${record.failed.at}: ${record.failed.why.join("; ")}`);
  o.log(`kept aside:  ${aside === null ? "nothing" : `${releaseName(aside.id)}, package ${aside.deb}`}`);

  const refuse = (why: string): number => {
    o.log(`rollback: ${why}`);
    return o.statusOnly ? 0 : 1;
  };
  if (record === null || record.good === null) return refuse("no build is recorded good here (release.json): nothing to return to");
  if (sameRelease(running, record.good)) return refuse(`the last good build, ${releaseName(record.good)}, is the one installed`);
  if (aside === null) return refuse(`no earlier version is kept aside in ${previous} (the package keeps the one it replaces at each upgrade)`);
  if (!sameRelease(aside.id, record.good)) return refuse(`the version kept aside, ${releaseName(aside.id)}, is not the last good one, ${releaseName(record.good)}`);
  const savedConfig = join(previous, "pod.yaml");
  const configBack = existsSync(savedConfig) && existsSync(configFile) && readTextBounded(savedConfig) !== readTextBounded(configFile);
  o.log(`rollback ${o.statusOnly ? "would install" : "installs"} ${aside.deb}${configBack ? `, with the config it ran with (${configFile} kept as ${configFile}.rolled-back-<time>)` : ""}`);
  if (o.statusOnly) return 0;
  if (process.getuid?.() !== 0) return refuse("run it as root: it installs a package");

  // the package first: built before anything changes, so a failure leaves all as it was
  const deb = join(o.stateDir, "releases", `podwarden_${aside.deb}_${aside.arch}.deb`);
  const build = spawnSync("dpkg-deb", ["--root-owner-group", "-Zgzip", "-z1", "--build", join(previous, "root"), deb], { encoding: "utf8" });
  if (build.status !== 0) return refuse(`the kept version's package could not be built: ${build.stderr.trim()}`);
  let was: string | null = null;
  if (configBack) {
    was = `${configFile}.rolled-back-${new Date().toISOString().replace(/[:.]/g, "-")}`;
    copyFileSync(configFile, was);
    const st = statSync(configFile);
    copyFileSync(savedConfig, configFile);
    chownSync(configFile, st.uid, st.gid);
    chmodSync(configFile, st.mode & 0o7777);
    o.log(`config: ${configFile} is the one ${releaseName(aside.id)} ran with; the one in place was kept as ${was}`);
  }
  const install = spawnSync("apt-get", ["install", "-y", "-q", "--allow-downgrades", "--no-install-recommends", deb], { encoding: "utf8", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  if (install.status !== 0) {
    // the config goes back to the one in place: the program did not change
    if (was !== null) copyFileSync(was, configFile);
    return refuse(`apt-get could not install ${deb}: ${install.stderr.trim() || install.stdout.trim()}${was === null ? "" : `; ${configFile} is the one in place again`}`);
  }
  o.log(`rolled back to ${releaseName(aside.id)} (package ${aside.deb}); the service restarted on it if it was running`);
  return 0;
}
