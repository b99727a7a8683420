// `podwarden fleet emulate`: a fleet's load without a daemon per pod. Runs --count emulated pods
// (fleet/emulator.ts) in this process, playing a recorded session, each pod's broker list the
// brokers given rotated by its index (pod k starts on broker k mod n), so a cluster's nodes share
// the pods. Prints the pods' totals every --every seconds (a JSON object per line with --json)
// until SIGINT/SIGTERM, then stops each pod as a pod stops ("stopped", DISCONNECT).
//
// Faults on cue, for mission control's tests: --alarm-every <s> has each pod raise an alarm once
// per that period (the pods in turn, evenly spread), and a line on stdin drives the pods:
// `alarm <k>|all`, `disconnect <k>|all`, `silent <k>|all`, `resume <k>|all`.
import { createInterface } from "node:readline";
import { readTextBounded } from "../lib/bounded-read.js";
import { EmulatedPod, type EmulatorFault } from "../fleet/emulator.js";
import { readSession } from "../fleet/session.js";

export interface FleetEmulateOptions {
  urls: string[];
  protocolVersion: 4 | 5;
  sessionFile: string;
  site: string;
  count: number;
  /** the first pod's number: pods are <site>/emu-<first> ... (several processes, one fleet) */
  first: number;
  telemetryEvery: number;
  alarmEveryS: number | null;
  keepaliveS: number;
  key: { id: string; publicKeyFile: string } | null;
  everyS: number;
  json: boolean;
  out: NodeJS.WritableStream;
  stop: Promise<void>;
}

export interface FleetEmulateTotals {
  pods: number;
  connected: number;
  queued: number;
  connects: number;
  brokerSwitches: number;
  events: number;
  telemetry: number;
  commands: { answered: number; rejected: number };
}

export function totals(pods: EmulatedPod[]): FleetEmulateTotals {
  const t: FleetEmulateTotals = { pods: pods.length, connected: 0, queued: 0, connects: 0, brokerSwitches: 0, events: 0, telemetry: 0, commands: { answered: 0, rejected: 0 } };
  for (const p of pods) {
    const s = p.stats();
    if (s.connected) t.connected++;
    t.queued += s.queued;
    t.connects += s.connects;
    t.brokerSwitches += s.brokerSwitches;
    t.events += s.lastSeq.events;
    t.telemetry += s.lastSeq.telemetry;
    t.commands.answered += s.commands.answered;
    t.commands.rejected += s.commands.rejected;
  }
  return t;
}

const FAULTS: readonly string[] = ["alarm", "disconnect", "silent", "resume"];

/** Runs the pods until `stop` resolves; resolves with their last totals. */
export async function fleetEmulate(o: FleetEmulateOptions): Promise<FleetEmulateTotals> {
  const session = readSession(o.sessionFile);
  const keys = o.key === null ? [] : [{ id: o.key.id, publicKey: readTextBounded(o.key.publicKeyFile, 4096).trim() }];
  const pods = Array.from({ length: o.count }, (_, i) => {
    const k = o.first + i;
    const brokers = o.urls.map((_, j) => o.urls[(k + j) % o.urls.length] ?? "");
    return new EmulatedPod({ session, site: o.site, pod: `emu-${k}`, brokers, protocolVersion: o.protocolVersion, keepaliveS: o.keepaliveS, keys, telemetryEvery: o.telemetryEvery, phaseMs: (k * 7919) % session.durationMs });
  });
  for (const p of pods) p.start();
  const print = (): void => {
    const t = totals(pods);
    o.out.write(o.json ? `${JSON.stringify({ timestamp: new Date().toISOString(), ...t })}\n` : `${new Date().toISOString()} pods ${t.connected}/${t.pods} connected, ${t.queued} queued; events ${t.events}, telemetry ${t.telemetry}; connects ${t.connects}, broker switches ${t.brokerSwitches}; commands ${t.commands.answered} answered, ${t.commands.rejected} refused\n`);
  };
  const timer = setInterval(print, o.everyS * 1000);
  // the alarms in turn: one pod every period/count, so the fleet's alarm rate is even
  let next = 0;
  const alarms = o.alarmEveryS === null ? null : setInterval(() => pods[next++ % pods.length]?.fault("alarm"), Math.max(1, (o.alarmEveryS * 1000) / pods.length));
  const lines = createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    const [what, who] = line.slice(0, 200).trim().split(/\s+/);
    if (what === undefined || !FAULTS.includes(what)) return void o.out.write(`? ${FAULTS.join(", ")} <k>|all\n`);
    const targets = who === "all" ? pods : pods.filter((_, i) => String(o.first + i) === who);
    for (const p of targets) p.fault(what as EmulatorFault);
  });
  try {
    await o.stop;
  } finally {
    clearInterval(timer);
    if (alarms !== null) clearInterval(alarms);
    lines.close();
    print();
    await Promise.all(pods.map((p) => p.stop()));
  }
  return totals(pods);
}
