// `podwarden run` as a child process (tooling/daemon-process.ts), and what its log says of its alarms.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { startDaemon, untilRunning, type Daemon } from "../../tooling/daemon-process.js";

export { startDaemon, untilRunning, type Daemon } from "../../tooling/daemon-process.js";

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

/** `podwarden run` on `data` written as `<dir>/agent.yaml`, once it says it runs. */
export async function runningDaemon(dir: string, data: unknown): Promise<Daemon> {
  const f = join(dir, "agent.yaml");
  writeFileSync(f, stringify(data));
  const d = startDaemon(f);
  await untilRunning(d);
  return d;
}
