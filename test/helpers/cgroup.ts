// A CPU quota on a process, through a cgroup of its own (v2 `cpu.max`, or v1 `cpu.cfs_quota_us`):
// for starving the daemon in tests. Needs root; says why when it cannot.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface CpuQuota {
  /** the quota as a share of one CPU (0.1 = 10 ms per 100 ms); null lifts it */
  set(share: number | null): void;
  /** moves the process (all its threads) into the group */
  add(pid: number): void;
  remove(): void;
}

export function cpuQuotaGroup(name: string): CpuQuota {
  const v2 = existsSync("/sys/fs/cgroup/cgroup.controllers");
  const root = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/cpu";
  if (!existsSync(root)) throw new Error(`no cgroup cpu controller at ${root}`);
  if (v2 && !readFileSync(join(root, "cgroup.subtree_control"), "utf8").includes("cpu")) writeFileSync(join(root, "cgroup.subtree_control"), "+cpu");
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const period = 100_000;
  return {
    set: (share) => {
      if (v2) writeFileSync(join(dir, "cpu.max"), share === null ? `max ${period}` : `${Math.round(share * period)} ${period}`);
      else {
        writeFileSync(join(dir, "cpu.cfs_period_us"), String(period));
        writeFileSync(join(dir, "cpu.cfs_quota_us"), share === null ? "-1" : String(Math.round(share * period)));
      }
    },
    add: (pid) => writeFileSync(join(dir, "cgroup.procs"), String(pid)),
    remove: () => {
      // the group must be empty to go: move whatever is left back to the root
      for (const pid of readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n").filter((x) => x !== "")) {
        try {
          writeFileSync(join(root, "cgroup.procs"), pid);
        } catch {
          // it exited meanwhile
        }
      }
      rmdirSync(dir);
    },
  };
}
