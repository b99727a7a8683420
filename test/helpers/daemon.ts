// `podwarden run` as a child process, its JSON log lines collected; optionally wrapped (a mount
// namespace, a preloaded library) with extra environment.
import { spawn, type ChildProcess } from "node:child_process";
import { waitFor } from "../../tooling/processes.js";

export interface Daemon {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  exit: Promise<number | null>;
}

export function startDaemon(configFile: string, o: { wrap?: string[]; env?: NodeJS.ProcessEnv } = {}): Daemon {
  const cmd = [...(o.wrap ?? []), "node", "dist/cli/podwarden.js", "run", "-c", configFile];
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

/** Ids of the alarms the daemon's log says were raised, in order. */
export function raisedAlarms(d: Daemon): string[] {
  return alarmEvents(d, "alarm.raised");
}

/** Ids of the alarms the daemon's log says were cleared, in order. */
export function clearedAlarms(d: Daemon): string[] {
  return alarmEvents(d, "alarm.cleared");
}

function alarmEvents(d: Daemon, type: string): string[] {
  return d.lines.filter((l) => (l.event as { type?: string } | undefined)?.type === type).map((l) => (l.event as { alarm: { id: string } }).alarm.id);
}
