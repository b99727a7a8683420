// Mission control's reference consumer (fleet/watch.ts, `podwarden fleet watch`): its sequence
// ledger on its own, then against two real pods on a real mosquitto through a shared
// subscription with two connections: the load split between them, every event counted by seq
// over both, online/offline from the Wills, and one signed command to both pods with both answers
// collected, by the library and by the CLI.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parsePrivateKey } from "../agent/commands/signing.js";
import { SeqLedger } from "../fleet/seq-ledger.js";
import { FleetWatch } from "../fleet/watch.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { PartitionProxy } from "../tooling/partition-proxy.js";
import { run, waitFor } from "./helpers/processes.js";
import { KEYS, startUplinkPod, type UplinkPod } from "./helpers/uplink.js";
import { tempDir } from "./helpers/temp-dirs.js";

describe("the sequence ledger", () => {
  it("counts first copies, duplicates, gaps that fill, gaps given up as lost, and late arrivals", () => {
    const l = new SeqLedger({ lossAfterMs: 1000, baseline: "one" });
    for (const s of [1, 2, 2, 5, 3]) l.record("a/p", "events", s, 0);
    expect(l.counts("a/p", "events")).toMatchObject({ received: 4, duplicates: 1, highest: 5, upTo: 3, open: 1, lost: 0 });
    expect(l.missing("a/p", "events")).toEqual([4]);
    l.expire(999);
    expect(l.counts("a/p", "events").lost).toBe(0);
    l.expire(1000);
    expect(l.counts("a/p", "events")).toMatchObject({ upTo: 5, open: 0, lost: 1 });
    expect(l.missing("a/p", "events")).toEqual([4]);
    // it came after all: late, not lost, and not a duplicate
    expect(l.record("a/p", "events", 4, 2000)).toBe("late");
    expect(l.counts("a/p", "events")).toMatchObject({ received: 5, lost: 0, late: 1 });
    expect(l.record("a/p", "events", 4, 2001)).toBe("duplicate");
    // each pod and class is its own stream
    expect(l.counts("a/q", "events").received).toBe(0);
    expect(l.totals("events")).toMatchObject({ received: 5, duplicates: 2, late: 1, lost: 0 });
  });

  it("starts a stream where it is first met, or at 1; and bounds what a wild jump can cost", () => {
    const joined = new SeqLedger({ lossAfterMs: 1000 });
    joined.record("a/p", "telemetry", 500, 0);
    joined.record("a/p", "telemetry", 501, 0);
    expect(joined.counts("a/p", "telemetry")).toMatchObject({ upTo: 501, open: 0, lost: 0 });
    const fromOne = new SeqLedger({ lossAfterMs: 1000, baseline: "one" });
    fromOne.record("a/p", "telemetry", 3, 0);
    expect(fromOne.missing("a/p", "telemetry")).toEqual([1, 2]);
    const small = new SeqLedger({ lossAfterMs: 1000, baseline: "one", maxPending: 10 });
    small.record("a/p", "events", 1, 0);
    small.record("a/p", "events", 1e12, 0); // a pod that claims a huge number: counted, not tracked one by one
    expect(small.counts("a/p", "events")).toMatchObject({ upTo: 1e12, open: 0, lost: 1e12 - 2 });
  });
});

describe("fleet watch against real pods (mosquitto, shared subscription)", () => {
  it("splits the load over two connections, counts every event by seq, follows the Wills, and collects a command's answers", async () => {
    const broker = await Mosquitto.start();
    // the second pod reaches the broker through a link the test can cut: the broker then
    // publishes that pod's Will
    const link = new PartitionProxy(broker.port);
    await link.listen();
    const w = await FleetWatch.start({ urls: [broker.url], protocolVersion: 5, share: "mc", consumers: 2, baseline: "one", clientId: `fleet-watch-${process.pid}`, lossAfterMs: 60_000 });
    const pods: UplinkPod[] = [];
    const probes: NodeJS.Timeout[] = [];
    const dir = tempDir("pw-fleet-");
    try {
      pods.push(await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 5, pod: "fleet-1", uplink: { keepaliveS: 1 } }));
      pods.push(await startUplinkPod({ brokerUrl: `mqtt://127.0.0.1:${link.port}`, protocolVersion: 5, pod: "fleet-2", uplink: { keepaliveS: 1 } }));
      for (const p of pods) probes.push(setInterval(() => p.agent.audit({ action: "probe", by: "test", result: "x" }), 20));
      await waitFor(() => w.states.get("demo/fleet-1")?.state === "online" && w.states.get("demo/fleet-2")?.state === "online", "both pods online at the watch", 15_000);

      // a signed command to both pods, both answers collected (matched on their transactions)
      const answers = await w.command(["demo/fleet-1", "demo/fleet-2"], "snapshot", {}, { keyId: "view", privateKey: parsePrivateKey(KEYS.observer.privatePem), nextSeq: () => Date.now() });
      expect(answers.map((a) => [a.pod, a.response?.status])).toEqual([
        ["demo/fleet-1", "ok"],
        ["demo/fleet-2", "ok"],
      ]);
      // the same through the CLI
      const keyFile = join(dir, "view.key");
      writeFileSync(keyFile, KEYS.observer.privatePem);
      const cli = await run("node", ["dist/cli/podwarden.js", "fleet", "command", "snapshot", "--url", broker.url, "--pods", "demo/fleet-1,demo/fleet-2", "--key", keyFile, "--key-id", "view", "--timeout", "10"]);
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toMatch(/^demo\/fleet-1: \{"status":"ok"/m);
      expect(cli.stdout).toMatch(/^demo\/fleet-2: \{"status":"ok"/m);

      // the second pod's connection cut: its Will makes it offline; back, it is online again
      link.setMode("reject");
      await waitFor(() => w.states.get("demo/fleet-2")?.state === "offline", "the Will at the watch", 15_000);
      expect(w.states.get("demo/fleet-2")).toMatchObject({ reason: "connection lost", wills: 1 });
      link.setMode("pass");
      await waitFor(() => w.states.get("demo/fleet-2")?.state === "online", "back online", 15_000);
      expect(w.states.get("demo/fleet-1")?.offlines).toBe(0);

      for (const t of probes) clearInterval(t);
      for (const p of pods) await waitFor(() => p.uplink.stats().spoolDepth.critical === 0, "spool drained", 15_000);
      const last = pods.map((p) => p.uplink.stats().lastSeq.critical);
      await waitFor(() => w.ledger.counts("demo/fleet-1", "events").upTo >= last[0] && w.ledger.counts("demo/fleet-2", "events").upTo >= last[1], "every event at the watch", 15_000).catch(() => undefined);
      expect(w.gaps()).toEqual([]);
      expect(w.ledger.counts("demo/fleet-2", "events")).toMatchObject({ upTo: last[1], lost: 0, open: 0 });
      // the broker split the pods' messages between the two connections
      const [c0, c1] = w.stats().connections;
      expect(c0.messages).toBeGreaterThan(20);
      expect(c1.messages).toBeGreaterThan(20);
    } finally {
      for (const t of probes) clearInterval(t);
      for (const p of pods) await p.stop();
      await w.stop();
      await link.close();
      await broker.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe("fleet watch against what is not a pod's message (mosquitto)", () => {
  it("bounds a message before parsing it, counts and drops what a pod does not send, and takes an unnumbered message without a gap", async () => {
    const broker = await Mosquitto.start();
    const w = await FleetWatch.start({ urls: [broker.url], protocolVersion: 5, baseline: "one", clientId: `fleet-bad-${process.pid}`, persistent: false, maxMessageBytes: 4096 });
    const mqtt = (await import("mqtt")).default;
    const c = await mqtt.connectAsync(broker.url, { protocolVersion: 5, clientId: `fleet-bad-pub-${process.pid}` });
    try {
      const send = (topic: string, body: string | Buffer): Promise<unknown> => c.publishAsync(topic, body, { qos: 1 });
      await send("podwarden/s/p/events", JSON.stringify({ seq: 1, timestamp: new Date().toISOString(), type: "alarm.raised" }));
      await send("podwarden/s/p/events", Buffer.alloc(5000, 0x20)); // over the bound: never parsed
      await send("podwarden/s/p/events", "{not json");
      await send("podwarden/s/p/events", JSON.stringify({ seq: "2" }));
      await send("podwarden/s/p/events", JSON.stringify([1, 2]));
      await send("podwarden/s/p%/events", JSON.stringify({ seq: 2 })); // not a pod id
      // what a pod whose spool's disk refused sends: live, without a number
      await send("podwarden/s/p/events", JSON.stringify({ seq: null, timestamp: new Date().toISOString(), historical: false, type: "command.audit" }));
      await send("podwarden/s/p/events", JSON.stringify({ seq: 2, timestamp: new Date().toISOString(), type: "alarm.cleared" }));
      await waitFor(() => w.stats().events.received === 2 && w.stats().unnumbered === 1 && w.stats().malformed === 4 && w.stats().oversize === 1, "every message judged", 10_000);
      expect(w.stats()).toMatchObject({ unnumbered: 1, malformed: 4, oversize: 1, alarmEvents: 2 });
      expect(w.gaps("events")).toEqual([]);
    } finally {
      await c.endAsync();
      await w.stop();
      await broker.stop();
    }
  });
});
