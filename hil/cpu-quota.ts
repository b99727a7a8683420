// A CPU quota on a process, through a cgroup of its own (v2 `cpu.max`, or v1 `cpu.cfs_quota_us`):
// how a HIL run's `cpu` step starves the daemon under test (docs/hil.md), and the process-fault
// test does. Needs root; says why when it cannot.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface CpuQuota {
  /** the quota as a share of one CPU (0.1 = 10 ms per 100 ms); null lifts it */
  set(share: number | null): void;
  /** how often, and how long in all, the group's processes were held back by the quota so far */
  throttled(): { periods: number; ms: number };
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
    throttled: () => {
      // v2: nr_throttled and throttled_usec; v1: nr_throttled and throttled_time (ns)
      const stat = Object.fromEntries(
        readFileSync(join(dir, "cpu.stat"), "utf8")
          .split("\n")
          .map((l) => l.split(" "))
          .filter((kv) => kv.length === 2)
          .map(([k, v]) => [k, Number(v)]),
      ) as Record<string, number | undefined>;
      return { periods: stat.nr_throttled ?? 0, ms: stat.throttled_usec !== undefined ? stat.throttled_usec / 1000 : (stat.throttled_time ?? 0) / 1e6 };
    },
    add: (pid) => {
      try {
        writeFileSync(join(dir, "cgroup.procs"), String(pid));
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        throw new Error(`process ${pid} cannot join the CPU-limited cgroup ${dir}: ${code ?? (err as Error).message}`, { cause: err });
      }
    },
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

/**
 * The threads of a process that run a real-time policy (SCHED_FIFO or SCHED_RR: field 41 of
 * /proc/<pid>/task/<tid>/stat), by thread id. A CFS quota does not bind them: on a kernel without
 * RT group scheduling they join a limited group and run on regardless, with it the group refuses
 * them, so a caller that means to starve a process checks first.
 */
export function realTimeThreads(pid: number): number[] {
  const out: number[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      // the fields after the command name, which may hold spaces and parentheses: up to the last ")"
      const policy = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[38]);
      if (policy === 1 || policy === 2) out.push(Number(tid));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}
