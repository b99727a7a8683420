// `podwarden fleet watch`, `podwarden fleet command` and `podwarden fleet config push`: mission
// control's reference consumer (fleet/watch.ts) at a terminal. watch prints one summary line every
// --every seconds (or a JSON object per line with --json) until interrupted; command signs one
// command for each pod named, sends them at once, and prints each pod's answer; config push
// stages a config across pods (fleet/config-push.ts) and prints each pod's outcome.
import { readTextBounded } from "../lib/bounded-read.js";
import { parseParams } from "../agent/commands/client.js";
import { isCommandName } from "../agent/commands/schema.js";
import { parsePrivateKey } from "../agent/commands/signing.js";
import { FleetWatch, type FleetStats, type FleetWatchOptions } from "../fleet/watch.js";
import { pushConfig, selectPods, type PodPushOutcome } from "../fleet/config-push.js";
import { MAX_PUSHED_CONFIG_CHARS } from "../agent/commands/schema.js";

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
    (s.sessionsLost > 0 ? `; broker lost the watch's session ${s.sessionsLost} times` : "") +
    (s.acksSent > 0 ? `; acknowledgements sent ${s.acksSent}` : "") +
    (Object.values(s.configPushes).some((n) => n > 0) ? `; config pushes ${s.configPushes.trial} on trial, ${s.configPushes.applied} kept, ${s.configPushes.reverted} put back, ${s.configPushes.refused} refused` : "")
  );
}

/** Runs until `stop` resolves (SIGINT at the terminal); resolves with the last stats. */
export async function fleetWatch(o: FleetCliOptions & { everyS: number; json: boolean; stop: Promise<void> }): Promise<FleetStats> {
  const w = await FleetWatch.start(o);
  const print = (): void => {
    const s = w.stats();
    const gaps = w.gaps();
    o.out.write(o.json ? `${JSON.stringify({ timestamp: new Date().toISOString(), ...s, gaps: gaps.slice(0, 50), pushes: Object.fromEntries(w.pushes) })}\n` : `${new Date().toISOString()} ${summaryLine(s, gaps.length)}\n`);
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

export interface FleetConfigPushOptions extends FleetCliOptions {
  file: string;
  selectors: string[];
  varsFile?: string;
  keyFile: string;
  keyId: string;
  canary?: string;
  batchSize: number;
  windowS?: number;
  timeoutMs: number;
}

/** `fleet config push`: resolves with every pod's outcome; the caller exits 0 only if every pod kept it. */
export async function fleetConfigPush(o: FleetConfigPushOptions): Promise<PodPushOutcome[]> {
  const template = readTextBounded(o.file, MAX_PUSHED_CONFIG_CHARS);
  const vars = o.varsFile === undefined ? {} : parseVars(readTextBounded(o.varsFile), o.varsFile);
  const privateKey = parsePrivateKey(readTextBounded(o.keyFile));
  // the wall clock in ms, as `podwarden command` numbers, and never the same twice: each pod's
  // replay guard wants every request from this key above the last (the polls come every 2 s)
  let seq = 0;
  const w = await FleetWatch.start({ ...o, persistent: false, consumers: 1, share: undefined });
  try {
    // a pattern is matched against the pods that have said their state (retained): give them a moment
    if (o.selectors.some((s) => s.includes("*"))) await new Promise((r) => setTimeout(r, 2000));
    const pods = selectPods(o.selectors, w.states.keys());
    if (pods.length === 0) throw new Error(`no pod matches ${o.selectors.join(",")}`);
    o.out.write(`pushing ${o.file} to ${pods.length} pods: canary ${o.canary ?? pods[0]}, then batches of ${o.batchSize}\n`);
    return await pushConfig(w, {
      template,
      pods,
      vars,
      canary: o.canary,
      batchSize: o.batchSize,
      windowS: o.windowS,
      answerMs: o.timeoutMs,
      verdictSlackMs: 30_000 + o.timeoutMs,
      signer: { keyId: o.keyId, privateKey, nextSeq: () => (seq = Math.max(seq + 1, Date.now())) },
      progress: (p, stage) => o.out.write(`${stage} ${p.pod}: ${p.result}${p.why === null ? "" : ` (${p.why})`}\n`),
    });
  } finally {
    await w.stop();
  }
}

/** The inventory: {"<site/pod>" | "*": {"<name>": string | number}}. */
function parseVars(text: string, file: string): Record<string, Record<string, string | number>> {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: not JSON (${(err as Error).message})`, { cause: err });
  }
  const bad = (why: string): Error => new Error(`${file}: ${why}; give {"<site/pod>" or "*": {"<name>": string or number}}`);
  if (typeof data !== "object" || data === null || Array.isArray(data)) throw bad("not an object");
  for (const [pod, vs] of Object.entries(data as Record<string, unknown>)) {
    if (typeof vs !== "object" || vs === null || Array.isArray(vs)) throw bad(`${pod} is not an object`);
    for (const [k, v] of Object.entries(vs)) if (typeof v !== "string" && typeof v !== "number") throw bad(`${pod}.${k} is neither a string nor a number`);
  }
  return data as Record<string, Record<string, string | number>>;
}
