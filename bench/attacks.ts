// `npm run bench -- --only attacks`: issue #49's service-plane attacks against `podwarden run`
// (production flags, the demo pod against the simulator in its own process; tooling/attack-pod.ts),
// each beside a quiet window of the same run on the same daemon. Per phase: how late the 1 kHz
// ticks ran over the supervisor's recent window (10 s, ending as the phase ends), the actuator
// passes' lateness since the start (a phase that made them later moves its max), loops that left
// live control, alarms raised (control:overrun included here), and the daemon's CPU. The pod has an
// uplink and an MQTT sensor on a mosquitto of its own, for the forged-command flood and the
// oversized sensor payload.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stallMainThread } from "../hil/main-thread-stall.js";
import { adminStatus, burst, commandFlood, eight, hugePayload, hugeReload, login, redfishGet, slowloris, startAttackPod, type AttackPod } from "../tooling/attack-pod.js";
import { DAEMON_NODE_FLAGS } from "../tooling/sim-process.js";
import { cpuMeter, processRssMb } from "./agent.js";
import { fmt } from "./stats.js";

interface Phase {
  phase: string;
  seconds: number;
  /** what the attacker got: looked at, refused, ... */
  outcome: string;
  tickP99Us: number;
  tickMaxUs: number;
  overruns: number;
  ticks: number;
  passP99Us: number;
  passMaxUs: number;
  failsafeEntries: number;
  alarms: string[];
  cpuPct: number;
  rssMb: number;
}

export interface AttackBenchResult {
  phases: Phase[];
}

/** The supervisor's recent window: a phase is padded to it so its figures are the phase's own. */
const WINDOW_MS = 10_000;

async function phase(pod: AttackPod, name: string, attack: () => Promise<string>): Promise<Phase> {
  const pid = pod.daemon.child.pid!;
  // the recent window starts clean of the last phase
  await new Promise((r) => setTimeout(r, WINDOW_MS));
  const mark = await pod.mark();
  const cpu = cpuMeter(pid);
  const t0 = performance.now();
  const outcome = await attack();
  const took = performance.now() - t0;
  // an attack shorter than the window: the rest of it quiet, so the window holds all of the attack
  if (took < WINDOW_MS) await new Promise((r) => setTimeout(r, WINDOW_MS - took - 200));
  const cpuPct = cpu();
  const h = await pod.harm(mark);
  const c = h.status.control;
  return {
    phase: name,
    seconds: took / 1000,
    outcome,
    tickP99Us: c.recent.p99Us,
    tickMaxUs: c.recent.maxUs,
    overruns: c.recent.overruns,
    ticks: c.recent.ticks,
    passP99Us: c.actuatorPass.p99LateUs,
    passMaxUs: c.actuatorPass.maxLateUs,
    failsafeEntries: h.failsafeEntries,
    alarms: h.alarms,
    cpuPct,
    rssMb: processRssMb(pid),
  };
}

export async function runAttackBench(quick: boolean): Promise<AttackBenchResult> {
  const pod = await startAttackPod(mkdtempSync(join(tmpdir(), "podwarden-bench-attacks-")), `bench-attacks-${process.pid}`, { nodeFlags: DAEMON_NODE_FLAGS, mqtt: true });
  const phases: Phase[] = [];
  try {
    phases.push(await phase(pod, "quiet (baseline)", () => Promise.resolve("—")));
    phases.push(
      await phase(pod, "400 wrong HMI logins, 1 address", async () => {
        const b = await burst(pod, ["127.0.0.1"], 400, (c) => login(pod.hmi, c, "alice", "wrong"));
        return `${b.looked} looked at`;
      }),
    );
    phases.push(
      await phase(pod, "400 wrong HMI logins, 8 addresses", async () => {
        const b = await burst(pod, eight("127.0.1"), 400, (c) => login(pod.hmi, c, "alice", "wrong"));
        return `${b.looked} looked at`;
      }),
    );
    phases.push(
      await phase(pod, "400 wrong Redfish Basic credentials, 8 addresses", async () => {
        const b = await burst(pod, eight("127.0.2"), 400, (c, i) => redfishGet(`${pod.redfish}/Chassis`, c, "alice", `wrong-${i}`));
        return `${b.looked} looked at`;
      }),
    );
    const n = quick ? 2000 : 16_000;
    phases.push(
      await phase(pod, `slowloris, ${n} connections held ${quick ? 10 : 35} s`, async () => {
        const s = await slowloris(pod.hmi, "127.0.3.1", n, quick ? 10_000 : 35_000);
        return `${n - s.refused} accepted, ${s.open} still open at the end`;
      }),
    );
    phases.push(
      await phase(pod, "SIGHUP, 700 KB alias-heavy config", async () => {
        await hugeReload(pod);
        return "rejected";
      }),
    );
    phases.push(
      await phase(pod, "forged commands, 30,000 at up to 10k/s", async () => {
        const before = await pod.metric("podwarden_commands_total");
        const { sent, ms } = await commandFlood(pod, 10_000, 30_000);
        await new Promise((r) => setTimeout(r, 1000));
        const counted = (await pod.metric("podwarden_commands_total")) - before;
        return `${sent} sent in ${(ms / 1000).toFixed(1)} s, ${counted} counted, ${await pod.metric("podwarden_commands_total", { result: "accepted" })} accepted ever`;
      }),
    );
    // the same 100 MB, first where the daemon does not subscribe (the broker's and the harness's
    // own work on the same cores), then on its sensor topic: the ratio of the two is the cost to it
    const mb = quick ? 20 : 100;
    phases.push(
      await phase(pod, `${mb} MB payload, a topic the daemon does not read`, async () => {
        await hugePayload(pod, `attack/elsewhere/${process.pid}`, mb * 1024 * 1024);
        return "delivered to no one";
      }),
    );
    phases.push(
      await phase(pod, `${mb} MB payload on the daemon's sensor topic`, async () => {
        const before = await pod.metric("podwarden_mqtt_ingest_messages_total", { outcome: "oversized" });
        await hugePayload(pod, pod.mqtt!.sensorTopic, mb * 1024 * 1024);
        await new Promise((r) => setTimeout(r, 1000));
        return `${(await pod.metric("podwarden_mqtt_ingest_messages_total", { outcome: "oversized" })) - before} refused on its header`;
      }),
    );
    phases.push(
      await phase(pod, "main thread held 6 s (strace)", async () => {
        const stall = await stallMainThread(pod.daemon.child.pid!);
        await new Promise((r) => setTimeout(r, 6000));
        await stall.release();
        return `ticks went on: ${(await adminStatus(pod.admin)).control.ticks > 0}`;
      }),
    );
  } finally {
    await pod.stop();
  }
  return { phases };
}

export function printAttacks(r: AttackBenchResult): void {
  console.log("\n## Service-plane attacks (issue #49; podwarden run, production flags, 8-rack demo pod against the simulator)");
  console.log("| phase | attack s | outcome | tick p99 µs (10 s window) | tick max µs | overruns / ticks | actuator pass p99 / max µs (since start) | loops to fail-safe | alarms raised | daemon CPU % of one core | RSS MB |");
  console.log("|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|");
  for (const p of r.phases)
    console.log(
      `| ${p.phase} | ${fmt(p.seconds, 1)} | ${p.outcome} | ${fmt(p.tickP99Us, 0)} | ${fmt(p.tickMaxUs, 0)} | ${p.overruns} / ${p.ticks} | ${fmt(p.passP99Us, 0)} / ${fmt(p.passMaxUs, 0)} | ${p.failsafeEntries} | ${p.alarms.length === 0 ? "none" : p.alarms.join(", ")} | ${fmt(p.cpuPct, 1)} | ${fmt(p.rssMb, 1)} |`,
    );
}
