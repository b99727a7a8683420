// `podwarden fleet watch` and `podwarden fleet command`: mission control's reference consumer
// (fleet/watch.ts) at a terminal. watch prints one summary line every --every seconds (or a JSON
// object per line with --json) until interrupted; command signs one command for each pod named,
// sends them at once, and prints each pod's answer.
import { readTextBounded } from "../lib/bounded-read.js";
import { parseParams } from "../agent/commands/client.js";
import { isCommandName } from "../agent/commands/schema.js";
import { parsePrivateKey } from "../agent/commands/signing.js";
import { FleetWatch, type FleetStats, type FleetWatchOptions } from "../fleet/watch.js";

export interface FleetCliOptions extends FleetWatchOptions {
  out: NodeJS.WritableStream;
}

/** One summary line: connections (and the share of messages each took), pods, events, gaps. */
export function summaryLine(s: FleetStats, gaps: number): string {
  const conns = s.connections.map((c) => `${c.connected ? "" : "DOWN "}${c.messages}`).join("/");
  const ev = s.events;
  const te = s.telemetry;
  return (
    `pods ${s.pods.online} online, ${s.pods.offline} offline${s.pods.unknown > 0 ? `, ${s.pods.unknown} unknown` : ""}; ` +
    `events ${ev.received} (${ev.duplicates} dup, ${ev.open} open, ${ev.lost} lost${ev.late > 0 ? `, ${ev.late} late` : ""}); ` +
    `telemetry ${te.received} (${te.open} open, ${te.lost} lost); ${s.unnumbered > 0 ? `unnumbered ${s.unnumbered}; ` : ""}alarms ${s.alarmEvents}; pods with gaps ${gaps}; ` +
    `messages per connection ${conns}${s.malformed + s.oversize > 0 ? `; dropped ${s.malformed} malformed, ${s.oversize} oversize` : ""}` +
    (s.sessionsLost > 0 ? `; broker lost the watch's session ${s.sessionsLost} times` : "")
  );
}

/** Runs until `stop` resolves (SIGINT at the terminal); resolves with the last stats. */
export async function fleetWatch(o: FleetCliOptions & { everyS: number; json: boolean; stop: Promise<void> }): Promise<FleetStats> {
  const w = await FleetWatch.start(o);
  const print = (): void => {
    const s = w.stats();
    const gaps = w.gaps();
    o.out.write(o.json ? `${JSON.stringify({ timestamp: new Date().toISOString(), ...s, gaps: gaps.slice(0, 50) })}\n` : `${new Date().toISOString()} ${summaryLine(s, gaps.length)}\n`);
  };
  const timer = setInterval(print, o.everyS * 1000);
  try {
    await o.stop;
  } finally {
    clearInterval(timer);
    print();
    await w.stop();
  }
  return w.stats();
}

export interface FleetCommandOptions extends FleetCliOptions {
  pods: string[];
  command: string;
  params: string;
  keyFile: string;
  keyId: string;
  timeoutMs: number;
}

/** Sends the command to every pod; resolves with the number that answered ok. */
export async function fleetCommand(o: FleetCommandOptions): Promise<number> {
  if (!isCommandName(o.command)) throw new Error(`no command "${o.command}"`);
  const params = parseParams(o.params);
  const privateKey = parsePrivateKey(readTextBounded(o.keyFile));
  // one number for every pod: each pod's replay guard counts per key on its own. Milliseconds
  // since the epoch, as `podwarden command` uses (mission-control software keeps its own
  // persisted counter per key instead)
  const seq = Date.now();
  const w = await FleetWatch.start({ ...o, persistent: false, consumers: 1, share: undefined });
  try {
    const answers = await w.command(o.pods, o.command, params, { keyId: o.keyId, privateKey, nextSeq: () => seq }, o.timeoutMs);
    let ok = 0;
    for (const a of answers) {
      if (a.response?.status === "ok") ok++;
      o.out.write(`${a.pod}: ${a.response === null ? `no answer within ${o.timeoutMs} ms` : JSON.stringify(a.response)}\n`);
    }
    return ok;
  } finally {
    await w.stop();
  }
}
