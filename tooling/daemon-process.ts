// `podwarden run` as a child process, its JSON log lines collected; optionally wrapped (a mount
// namespace, a preloaded library) with extra environment. For tests and benchmarks alike.
import { spawn, type ChildProcess } from "node:child_process";
import { waitFor } from "./processes.js";

export interface Daemon {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  exit: Promise<number | null>;
}

/** `nodeFlags`: node's own flags before the script (a benchmark gives the daemon's shebang flags, DAEMON_NODE_FLAGS). */
export function startDaemon(configFile: string, o: { wrap?: string[]; env?: NodeJS.ProcessEnv; nodeFlags?: string[]; args?: string[]; command?: string[] } = {}): Daemon {
  // `command`: another podwarden than this checkout's build (the installed package's /usr/bin/podwarden)
  const cmd = [...(o.wrap ?? []), ...(o.command ?? ["node", ...(o.nodeFlags ?? []), "dist/cli/podwarden.js"]), "run", "-c", configFile, ...(o.args ?? [])];
  const child = spawn(cmd[0], cmd.slice(1), { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...o.env } });
  const lines: Record<string, unknown>[] = [];
  let buf = "";
  child.stdout?.on("data", (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ raw: line });
      }
    }
  });
  child.stderr?.on("data", (d: Buffer) => lines.push({ stderr: d.toString() }));
  const exit = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  return { child, lines, exit };
}

/** Waits until the daemon's log says it runs (its uplink, HMI and metrics are up by then). */
export async function untilRunning(d: Daemon, timeoutMs = 30_000): Promise<Daemon> {
  await waitFor(() => d.lines.some((l) => l.msg === "podwarden running"), "daemon running", timeoutMs);
  return d;
}

