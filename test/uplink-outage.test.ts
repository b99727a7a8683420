// Broker outages against a real mosquitto: 100 restarts during telemetry and events (a sixth in
// `npm test`, all under `npm run soak -- --full-counts`: helpers/counts.ts), a hung
// (SIGSTOPped) broker, a broker killed outright, and the daemon restarting mid-outage; and 100
// restarts of aedes in this process; and the reconnects themselves (backoff, retained topics). Nothing
// the pod says may be lost: every event and telemetry message is counted by its sequence number.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startEmbeddedBroker, type EmbeddedBroker } from "../lib/embedded-broker.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { PartitionProxy } from "../tooling/partition-proxy.js";
import { Prng } from "../sim/prng.js";
import { waitFor } from "./helpers/processes.js";
import { gaps, MissionControl, removeState, sharedSim, startUplinkPod, type UplinkPod } from "./helpers/uplink.js";
import { topicBase } from "../agent/uplink/uplink.js";
import { countWords, fullCount } from "./helpers/counts.js";

const seqsOf = (mc: MissionControl, topic: string): number[] => mc.of(topic).map((b) => b.seq as number);

// one simulator serves every pod in this file
const sim = sharedSim();

/**
 * `cycles` broker restarts (`restart`) while the pod audits a probe event every 10 ms; each waits for
 * the pod to reconnect, then lets it run 60-220 ms. Returns the number of probes, once the
 * spool has drained.
 */
async function restartsDuringProbes(pod: UplinkPod, restart: (cycle: number) => Promise<void>, cycles = 100): Promise<number> {
  let n = 0;
  const probe = setInterval(() => pod.agent.audit({ action: "probe", by: "test", result: String(++n) }), 10);
  try {
    for (let cycle = 0; cycle < cycles; cycle++) {
      const connects = pod.uplink.stats().connects;
      await restart(cycle);
      await waitFor(() => pod.uplink.stats().connects > connects, `pod reconnected (cycle ${cycle})`, 15_000, 10);
      await new Promise((r) => setTimeout(r, 60 + (cycle % 5) * 40));
    }
  } finally {
    clearInterval(probe);
  }
  await waitFor(() => pod.uplink.stats().spoolDepth.critical === 0 && pod.uplink.stats().spoolDepth.telemetry === 0, "spool drained", 30_000);
  return n;
}

/** Broker restarts in the first test: 100 under `npm run soak -- --full-counts`, a sixth in `npm test`. */
const RESTARTS = fullCount(100);

describe("broker outages (mosquitto)", () => {
  it(`loses no event and no telemetry across ${countWords(RESTARTS)} broker restarts`, async () => {
    // mission control keeps a persistent session, and the broker keeps it across restarts, so
    // what the broker acknowledged to the pod reaches mission control too
    const broker = await Mosquitto.start({ persistence: true, general: ["max_queued_messages 0", "max_inflight_messages 0"] });
    // mission control subscribes before the pod starts: events the pod sends at start (seq 1, 2,
    // ...) reach a subscriber that is there, not one that comes later (CI once lost the race)
    const mc = await MissionControl.connect(broker.url, topicBase("demo", "pod-a"), 4, { clientId: "mc-outage", clean: false, reconnectPeriod: 50 });
    const pod = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 5, sim: sim() });
    expect(pod.base).toBe(mc.base);
    try {
      const n = await restartsDuringProbes(pod, () => broker.restart("SIGTERM"), RESTARTS);
      const last = pod.uplink.stats().lastSeq;
      // on a timeout, say which sequence numbers never arrived rather than only that some did not
      await waitFor(() => gaps(seqsOf(mc, "events"), last.critical).length === 0 && gaps(seqsOf(mc, "telemetry"), last.telemetry).length === 0, "every event and telemetry message at mission control", 30_000).catch(() => undefined);
      expect({ events: gaps(seqsOf(mc, "events"), last.critical), telemetry: gaps(seqsOf(mc, "telemetry"), last.telemetry) }).toEqual({ events: [], telemetry: [] });
      // a probe every 10 ms: at least 5 per restart cycle
      expect(n).toBeGreaterThan(RESTARTS * 5);
      expect(pod.uplink.stats().spoolDropped).toEqual({ critical: 0, telemetry: 0 });
      expect(pod.uplink.stats().connects).toBeGreaterThanOrEqual(RESTARTS + 1);
      const probes = new Set(mc.of("events").filter((e) => e.action === "probe").map((e) => e.result));
      expect(probes.size).toBe(n);
      // some of it was spooled across an outage, and says so
      expect(mc.of("events").some((e) => e.historical === true)).toBe(true);
    } finally {
      await mc.close();
      await pod.stop();
      await broker.stop();
    }
  }, 240_000);

  it("loses nothing over a slow, lossy link (+20 ms each way, 2 % of segments stalled 200 ms), with no false hung-broker detection", async () => {
    const broker = await Mosquitto.start({ persistence: false, general: ["max_queued_messages 0"] });
    const link = new PartitionProxy(broker.port);
    await link.listen();
    const prng = new Prng(12);
    link.impair({ delayMs: 20, lossShare: 0.02, stallMs: 200, random: () => prng.next() });
    const pod = await startUplinkPod({ brokerUrl: `mqtt://127.0.0.1:${link.port}`, protocolVersion: 5, sim: sim(), uplink: { keepaliveS: 2, telemetryMs: 200 } });
    const mc = await MissionControl.connect(broker.url, pod.base, 4, { reconnectPeriod: 50 });
    let n = 0;
    const probe = setInterval(() => pod.agent.audit({ action: "lossy-link", by: "test", result: String(++n) }), 10);
    try {
      await waitFor(() => pod.uplink.stats().connected, "connected over the impaired link", 10_000);
      const firstEvent = pod.uplink.stats().lastSeq.critical + 1;
      const firstTelemetry = pod.uplink.stats().lastSeq.telemetry + 1;
      await new Promise((r) => setTimeout(r, 8000));
      // and on until 500 are sent: the probe's 10 ms timer fired only 479 times in 8 s on a loaded
      // CI machine (2026-12-06); the link's load, not the machine's speed, is what is tested
      await waitFor(() => n > 500, "500 events sent over the impaired link", 30_000);
      clearInterval(probe);
      await waitFor(() => pod.uplink.stats().spoolDepth.critical === 0 && pod.uplink.stats().spoolDepth.telemetry === 0, "spool drained", 30_000);
      const last = pod.uplink.stats().lastSeq;
      await waitFor(() => gaps(seqsOf(mc, "events"), last.critical, firstEvent).length === 0 && gaps(seqsOf(mc, "telemetry"), last.telemetry, firstTelemetry).length === 0, "every event and telemetry message at mission control", 30_000);
      expect(n).toBeGreaterThan(500);
      expect(new Set(mc.of("events").filter((e) => e.action === "lossy-link").map((e) => e.result)).size).toBe(n);
      expect(pod.uplink.stats().spoolDropped).toEqual({ critical: 0, telemetry: 0 });
      // stalls of 200 ms are far from 1.5 x keepalive: the connection was never given up (and a
      // reordered or damaged byte stream would have broken it)
      expect(pod.uplink.stats().connects).toBe(1);
      // the link really was impaired: no PUBACK can come back in less than the 40 ms round trip
      expect(pod.uplink.stats().ackUs.p50).toBeGreaterThanOrEqual(40_000);
    } finally {
      clearInterval(probe);
      await mc.close();
      await pod.stop();
      await link.close();
      await broker.stop();
    }
  }, 90_000);

  it("detects a hung broker (SIGSTOP) by its own silence watchdog, spools, and delivers everything after SIGCONT, events first", async () => {
    const broker = await Mosquitto.start({ persistence: false });
    const pod = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 5, sim: sim(), uplink: { keepaliveS: 2 } });
    const mc = await MissionControl.connect(broker.url, pod.base, 4, { reconnectPeriod: 50 });
    try {
      await waitFor(() => mc.of("telemetry").length >= 2, "telemetry flowing");
      broker.pause();
      await waitFor(() => !pod.uplink.stats().connected, "hung broker detected", 10_000, 10);
      // said as the uplink's silence watchdog (1.45 x keepalive) says it, whether it or mqtt.js's
      // 1.5 x timeout came first (lib/mqtt-connection.ts); how long that takes is a benchmark
      // figure (BENCHMARKS.md), not a test's
      expect(pod.logs.lines.some((l) => l.msg === "broker silent: giving up the connection")).toBe(true);
      // telemetry spooled first, then the events: replay still sends the events first
      await waitFor(() => pod.uplink.stats().spoolDepth.telemetry >= 2, "telemetry spooled");
      for (let i = 0; i < 20; i++) pod.agent.audit({ action: "during-hang", by: "test", result: String(i) });
      await waitFor(() => pod.uplink.stats().spoolDepth.critical >= 20, "events spooled");
      const beforeResume = mc.messages.length;
      broker.resume();
      await waitFor(() => pod.uplink.stats().connected && pod.uplink.stats().spoolDepth.critical === 0 && pod.uplink.stats().spoolDepth.telemetry === 0, "reconnected and drained", 20_000);
      await waitFor(() => mc.of("events").filter((e) => e.action === "during-hang").length === 20, "events from the hang delivered", 10_000);
      expect(mc.of("events").filter((e) => e.action === "during-hang").every((e) => e.historical === true)).toBe(true);
      // alarms first: no spooled telemetry arrived before the last spooled event
      const replay = mc.messages.slice(beforeResume).filter((m) => m.body.historical === true);
      const lastEvent = replay.map((m) => m.topic).lastIndexOf(`${pod.base}events`);
      const firstTelemetry = replay.findIndex((m) => m.topic === `${pod.base}telemetry`);
      expect(firstTelemetry, "historical telemetry replayed").toBeGreaterThanOrEqual(0);
      expect(lastEvent, "historical events replayed").toBeGreaterThanOrEqual(0);
      expect(lastEvent).toBeLessThan(firstTelemetry);
      const last = pod.uplink.stats().lastSeq;
      await waitFor(() => gaps(seqsOf(mc, "events"), last.critical, Math.min(...seqsOf(mc, "events"))).length === 0, "no event gap");
    } finally {
      await mc.close();
      await pod.stop();
      await broker.stop();
    }
  }, 60_000);

  it("keeps what it spooled through a daemon restart in the middle of an outage, and numbering continues", async () => {
    const broker = await Mosquitto.start({ persistence: false });
    const first = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 5, sim: sim() });
    await waitFor(() => first.uplink.stats().connected, "connected");
    await broker.kill("SIGKILL"); // outright: no goodbye to anyone
    await waitFor(() => !first.uplink.stats().connected, "outage noticed");
    for (let i = 0; i < 30; i++) first.agent.audit({ action: "before-restart", by: "test", result: String(i) });
    const lastBefore = first.uplink.stats().lastSeq.critical;
    await first.stop({ keepState: true });

    // the broker comes back; mission control subscribes; then the daemon starts again
    await broker.restart();
    const mc = await MissionControl.connect(broker.url, first.base, 4);
    const second = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 5, sim: sim(), stateDir: first.stateDir });
    try {
      await waitFor(() => mc.of("events").filter((e) => e.action === "before-restart").length === 30, "events spooled before the restart delivered", 20_000);
      expect(mc.of("events").filter((e) => e.action === "before-restart").every((e) => e.historical === true)).toBe(true);
      second.agent.audit({ action: "after-restart", by: "test", result: "x" });
      await waitFor(() => mc.of("events").some((e) => e.action === "after-restart"), "a live event after the restart");
      const after = mc.of("events").find((e) => e.action === "after-restart")!;
      expect(after.seq as number).toBeGreaterThan(lastBefore);
      expect(after.historical).toBe(false);
    } finally {
      await mc.close();
      await second.stop();
      removeState(first.stateDir);
      await broker.stop();
    }
  }, 60_000);

  it("starts with a damaged spool: salvages the file, counts what was lost without reusing its seq, raises the alarm until acknowledged, and still delivers the intact records", async () => {
    const broker = await Mosquitto.start({ persistence: false });
    const first = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 5, sim: sim() });
    await broker.kill("SIGKILL");
    await waitFor(() => !first.uplink.stats().connected, "outage noticed");
    for (let i = 0; i < 10; i++) first.agent.audit({ action: "before-damage", by: "test", result: String(i) });
    await first.stop({ keepState: true });
    // damage the newest critical segment: flip bytes in its last record
    const dir = join(first.stateDir, "spool", "critical");
    const seg = join(dir, readdirSync(dir).filter((f) => f.endsWith(".seg")).sort().pop()!);
    const bytes = readFileSync(seg);
    bytes.fill(0x55, bytes.length - 20, bytes.length - 10);
    writeFileSync(seg, bytes);

    await broker.restart();
    const mc = await MissionControl.connect(broker.url, first.base, 4);
    const second = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 5, sim: sim(), stateDir: first.stateDir });
    try {
      await waitFor(() => second.agent.supervisor.alarms.get("uplink:spool-corrupt") !== undefined, "the spool-corrupt alarm", 10_000);
      expect(second.agent.supervisor.alarms.get("uplink:spool-corrupt")?.severity).toBe("Critical");
      expect(readdirSync(join(first.stateDir, "spool", "quarantine"))).toHaveLength(1);
      // the records before the damage still arrive; the pod runs and reports
      await waitFor(() => mc.of("events").filter((e) => e.action === "before-damage").length >= 9, "intact records delivered", 20_000);
      await waitFor(() => ((mc.of("alarms").pop()?.alarms as { id: string }[] | undefined) ?? []).some((a) => a.id === "uplink:spool-corrupt"), "alarm published");
      // the damaged record is counted lost, and its seq is never given to another event
      expect(second.agent.supervisor.alarms.get("uplink:spool-corrupt")?.message).toMatch(/spool damaged: \d+ events and 0 telemetry messages lost/);
      expect(second.uplink.stats().spoolLost.critical).toBeGreaterThanOrEqual(1);
      second.agent.audit({ action: "after-damage", by: "test", result: "x" });
      await waitFor(() => mc.of("events").some((e) => e.action === "after-damage"), "a live event after the damage");
      // what was spooled before the restart (historical) against what the restarted pod said
      const highestSpooled = Math.max(...mc.of("events").filter((e) => e.historical === true).map((e) => e.seq as number));
      const firstLive = Math.min(...mc.of("events").filter((e) => e.historical === false).map((e) => e.seq as number));
      expect(firstLive).toBeGreaterThan(highestSpooled + 1); // the lost record's seq is skipped
      // a one-off event: it holds until an operator has acknowledged it, then clears
      expect(second.agent.acknowledgeAlarm("uplink:spool-corrupt", "test")).toBe(true);
      await waitFor(() => second.agent.supervisor.alarms.get("uplink:spool-corrupt") === undefined, "alarm cleared after acknowledgement", 15_000);
      await waitFor(() => !((mc.of("alarms").pop()?.alarms as { id: string }[] | undefined) ?? []).some((a) => a.id === "uplink:spool-corrupt"), "clearance published");
    } finally {
      await mc.close();
      await second.stop();
      await broker.stop();
    }
  }, 60_000);
});

// The same restarts against aedes in this process (MQTT 3.1.1). aedes keeps its sessions in
// memory, so a restarted instance has forgotten mission control's subscription and anything it
// had queued for it: what a broker without persistence loses is not the pod's to count. The
// count is therefore taken where the pod's responsibility ends, at the broker: every sequence
// number must reach some broker instance, which then acknowledged it.
describe("broker outages (aedes in-process)", () => {
  it("loses no event and no telemetry across 25 broker restarts", async () => {
    // every publish kept by topic, and sorted out once the pod's topic base is known: the pod's
    // first telemetry can reach the broker before startUplinkPod returns it (seq 1 was lost so)
    const published: { topic: string; seq: number; historical: boolean }[] = [];
    const start = async (port = 0): Promise<EmbeddedBroker> => {
      const b = await startEmbeddedBroker(port);
      b.aedes.on("publish", (packet, client) => {
        if (client === null || !/\/(events|telemetry)$/.test(packet.topic)) return; // the broker's own $SYS messages, retained topics
        const body = JSON.parse(packet.payload.toString()) as { seq: number; historical: boolean };
        published.push({ topic: packet.topic, seq: body.seq, historical: body.historical });
      });
      return b;
    };
    let broker = await start();
    const port = broker.port;
    const pod = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 4, sim: sim() });
    const of = (kind: string) => published.filter((m) => m.topic === `${pod.base}${kind}`);
    try {
      const n = await restartsDuringProbes(pod, async (cycle) => {
        await broker.close(); // every connection dropped at once, no goodbye
        await new Promise((r) => setTimeout(r, (cycle % 4) * 30)); // down for 0-90 ms
        broker = await start(port);
      }, 25);
      const last = pod.uplink.stats().lastSeq;
      expect(n).toBeGreaterThan(125);
      expect(last.critical).toBeGreaterThanOrEqual(n);
      expect(gaps(of("events").map((m) => m.seq), last.critical)).toEqual([]);
      expect(gaps(of("telemetry").map((m) => m.seq), last.telemetry)).toEqual([]);
      expect(pod.uplink.stats().spoolDropped).toEqual({ critical: 0, telemetry: 0 });
      expect(pod.uplink.stats().connects).toBeGreaterThanOrEqual(26);
      // some of it was spooled across an outage, and says so
      expect([...of("events"), ...of("telemetry")].filter((m) => m.historical).length).toBeGreaterThan(0);
    } finally {
      await pod.stop();
      await broker.close();
    }
  }, 240_000);
});

describe("reconnecting", () => {
  it("backs off exponentially with jitter while the broker refuses, and starts from the base again once connected", async () => {
    // a broker that takes each connection and drops it before CONNACK, noting when it came
    const attempts: number[] = [];
    const refusing = createServer((s) => {
      attempts.push(performance.now());
      s.destroy();
    });
    await new Promise<void>((r) => refusing.listen(0, "127.0.0.1", () => r()));
    const port = (refusing.address() as AddressInfo).port;
    const pod = await startUplinkPod({ brokerUrl: `mqtt://127.0.0.1:${port}`, protocolVersion: 4, sim: sim(), uplink: { reconnect: { baseMs: 40, maxMs: 320 } } });
    let broker: EmbeddedBroker | null = null;
    try {
      await waitFor(() => attempts.length >= 12, "a dozen attempts", 20_000, 10);
      await new Promise<void>((r) => refusing.close(() => r()));
      const retries = pod.logs.lines.filter((l) => l.msg === "uplink disconnected; spooling").map((l) => ({ ms: l.retryInMs as number, attempt: l.attempt as number }));
      // the uplink's own draws: attempt k waits in [c/2, c], c = min(320, 40 * 2^(k-1))
      for (const r of retries.slice(0, 11)) {
        const ceiling = Math.min(320, 40 * 2 ** (r.attempt - 1));
        expect(r.ms, `attempt ${r.attempt}`).toBeGreaterThanOrEqual(ceiling / 2 - 1);
        expect(r.ms, `attempt ${r.attempt}`).toBeLessThanOrEqual(ceiling + 1);
      }
      expect(retries.slice(0, 11).map((r) => r.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      // the broker saw them spaced at least as far apart as drawn (a timer never fires early)
      for (let k = 1; k < 11; k++) expect(attempts[k] - attempts[k - 1], `gap before attempt ${k + 1}`).toBeGreaterThanOrEqual(retries[k - 1].ms - 2);
      // jitter: once at the cap, the waits are not all the same
      const capped = retries.slice(4, 11).map((r) => r.ms);
      expect(Math.max(...capped) - Math.min(...capped)).toBeGreaterThan(5);

      // a real broker on that port: connected, and the next loss retries from the base
      broker = await startEmbeddedBroker(port);
      await waitFor(() => pod.uplink.stats().connected, "connected to the real broker", 10_000, 10);
      const before = pod.logs.lines.length;
      broker.dropClients();
      await waitFor(() => pod.logs.lines.slice(before).some((l) => l.msg === "uplink disconnected; spooling"), "the loss noticed");
      const next = pod.logs.lines.slice(before).find((l) => l.msg === "uplink disconnected; spooling")!;
      expect(next.attempt).toBe(1);
      expect(next.retryInMs as number).toBeLessThanOrEqual(40 + 1);
      await waitFor(() => pod.uplink.stats().connected, "reconnected", 10_000, 10);
    } finally {
      refusing.close();
      await pod.stop();
      await broker?.close();
    }
  }, 60_000);

  it("republishes retained state, info and alarms on every connect (a broker restarted without persistence forgot them)", async () => {
    const broker = await Mosquitto.start({ persistence: false });
    const pod = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 5, sim: sim() });
    try {
      await waitFor(() => pod.uplink.stats().connected, "connected");
      for (let cycle = 0; cycle < 3; cycle++) {
        const connects = pod.uplink.stats().connects;
        await broker.restart("SIGKILL");
        await waitFor(() => pod.uplink.stats().connects > connects, `reconnected (cycle ${cycle})`, 15_000, 10);
        // a subscriber that arrives after the reconnect gets the pod's retained topics from the broker
        const mc = await MissionControl.connect(broker.url, pod.base, 5);
        try {
          await waitFor(() => ["state", "info", "alarms"].every((t) => mc.messages.some((m) => m.topic === pod.base + t && m.retain)), "retained state, info and alarms", 10_000);
          expect(mc.of("state").at(-1)?.state).toBe("online");
          expect(mc.of("info").at(-1)?.pod).toBe("pod-a");
          expect(Array.isArray(mc.of("alarms").at(-1)?.alarms)).toBe(true);
        } finally {
          await mc.close();
        }
      }
    } finally {
      await pod.stop();
      await broker.stop();
    }
  }, 60_000);
});
