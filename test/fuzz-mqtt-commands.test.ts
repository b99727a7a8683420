// Command fuzzing at the MQTT level, through a real mosquitto (MQTT 5): random request topics
// (known, unknown, long, odd), MQTT 5 properties (reply topics with wildcards, in other pods'
// trees, too long; correlation data of every size; user properties) and payload sizes on both
// sides of the pod's maxPacketBytes, mixed with genuine signed commands. Oracles that do not
// trust the code: the pod's connection never drops (no unsigned flap), it publishes only inside
// its own tree and answers only where the documented rule allows, every genuine command is
// answered and accepted, nothing else is, nothing moves, and control keeps ticking.
// Then the same at MQTT 3.1.1, where nothing but the pod's own bounds stands between a large
// request and its parser.
import mqtt from "mqtt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedCommand } from "../agent/commands/client.js";
import { COMMANDS } from "../agent/commands/schema.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { fuzzSeed, Prng } from "./helpers/fuzz.js";
import { waitFor } from "./helpers/processes.js";
import { MissionControl, startUplinkPod, type UplinkPod } from "./helpers/uplink.js";

const CASES = Number(process.env.FUZZ_CASES ?? 2000);
const SMALL_MAX = 100 * 1024; // clearly under the pod's 256 KiB maxPacketBytes, with topic and properties
const LARGE_MIN = 300 * 1024; // clearly over it

/**
 * A pod and mission control on a mosquitto of their own, at one MQTT version, for the enclosing
 * describe block: up (and out of Starting) before its tests, stopped after them. The fields are
 * read inside the tests, once beforeAll has filled them.
 */
function podOnMosquitto(protocolVersion: 4 | 5): { readonly broker: Mosquitto; readonly pod: UplinkPod; readonly mc: MissionControl } {
  let broker: Mosquitto | undefined;
  let pod: UplinkPod | undefined;
  let mc: MissionControl | undefined;
  beforeAll(async () => {
    broker = await Mosquitto.start();
    const p = await startUplinkPod({ brokerUrl: broker.url, protocolVersion });
    pod = p;
    mc = await MissionControl.connect(broker.url, p.base, protocolVersion);
    await waitFor(() => p.uplink.stats().connected && p.agent.supervisor.mode !== "Starting", "pod up", 60_000);
  }, 90_000);
  afterAll(async () => {
    await mc?.close();
    await pod?.stop();
    await broker?.stop();
  });
  return {
    get broker(): Mosquitto {
      if (broker === undefined) throw new Error("the broker is not up");
      return broker;
    },
    get pod(): UplinkPod {
      if (pod === undefined) throw new Error("the pod is not up");
      return pod;
    },
    get mc(): MissionControl {
      if (mc === undefined) throw new Error("mission control is not connected");
      return mc;
    },
  };
}

describe("command fuzzing at the MQTT level (mosquitto, MQTT 5)", () => {
  const env = podOnMosquitto(5);

  it("survives random topics, properties and sizes: no flap, no reply outside the rule, only genuine commands accepted, nothing moved", async () => {
    const { broker, pod, mc } = env;
    const seed = fuzzSeed(0x4d515454);
    const rng = new Prng(seed);
    const base = pod.base;
    // the documented rule (docs/mqtt.md), written out here rather than imported
    const allowedReply = (t: string): boolean => t.startsWith(`${base}response/`) && t.length > `${base}response/`.length && t.length <= 512 && !/[+#\0]/.test(t);
    const attacker = await mqtt.connectAsync(broker.url, { protocolVersion: 5, clientId: `fuzz-${process.pid}` });
    const seen: { topic: string; body: string }[] = [];
    // (what the attacker itself sent comes back too: only the start of those is kept)
    attacker.on("message", (topic, payload) => seen.push({ topic, body: topic.startsWith(`${base}request/`) ? "" : payload.toString("utf8") }));
    await attacker.subscribeAsync("#", { qos: 0 });
    let attackerClosed = false;
    attacker.on("close", () => (attackerClosed = true));

    const connects0 = pod.uplink.stats().connects;
    const commands0 = pod.uplink.stats().commands;
    const ticks0 = pod.agent.control.ticks;
    const before = pod.agent.status();
    const asked = new Set<string>();
    const genuine = new Map<string, string>(); // transaction -> the reply topic it may use
    const counts = { cases: 0, genuine: 0, large: 0, unknownName: 0, badReplyTopic: 0, bigCorrelation: 0, deliverable: 0 };
    const handled = (): number => pod.uplink.stats().commands.accepted + pod.uplink.stats().commands.rejected - commands0.accepted - commands0.rejected;
    // (no wildcard in a name: a topic with one is not publishable, the broker would drop the sender)
    const names = [...COMMANDS, "", "x", "setpoint ", "Setpoint", "request", "..", "ü", "$x", "a".repeat(rng.int(65, 10_000))];

    for (let i = 0; i < CASES; i++) {
      counts.cases++;
      const isGenuine = rng.chance(0.05);
      let name = isGenuine ? "snapshot" : rng.chance(0.7) ? rng.pick(COMMANDS) : rng.pick(names);
      if (!isGenuine && rng.chance(0.05)) name = `${name}/${rng.pick(["x", "", "y/z"])}`;
      if (!(COMMANDS as readonly string[]).includes(name)) counts.unknownName++;
      const replyChoices = [`${base}response/mine-${i}`, `${base}response/#`, `${base}response/+/x`, "podwarden/other/pod/response/x", `${base}state`, "", `${base}response/${"r".repeat(300)}`, "#"];
      const properties: mqtt.IClientPublishOptions["properties"] = {};
      if (rng.chance(0.6)) {
        properties.responseTopic = rng.pick(replyChoices);
        if (properties.responseTopic === "") delete properties.responseTopic;
        else {
          asked.add(properties.responseTopic);
          if (!allowedReply(properties.responseTopic)) counts.badReplyTopic++;
        }
      }
      if (rng.chance(0.5)) {
        const n = rng.pick([0, 1, 16, 255, 256, 257, 4000]);
        properties.correlationData = Buffer.alloc(n, i & 0xff);
        if (n > 256) counts.bigCorrelation++;
      }
      if (rng.chance(0.3)) properties.userProperties = { k: "v".repeat(rng.int(0, 2000)) };
      if (rng.chance(0.2)) properties.contentType = "application/json";
      if (rng.chance(0.1)) properties.payloadFormatIndicator = true;
      let payload: Buffer;
      if (isGenuine) {
        counts.genuine++;
        const transaction = `fuzz-${i}`;
        payload = Buffer.from(signedCommand(mc.spec("snapshot", {}, "observer", { transaction })));
        genuine.set(transaction, properties.responseTopic !== undefined && allowedReply(properties.responseTopic) ? properties.responseTopic : `${base}response/snapshot`);
      } else if (rng.chance(0.08)) {
        counts.large++;
        payload = Buffer.alloc(rng.int(LARGE_MIN, LARGE_MIN * 2), 0x7b);
      } else {
        const size = rng.pick([0, 1, 2, 100, 1000, 16 * 1024, 16 * 1024 + 1, rng.int(0, SMALL_MAX)]);
        payload = rng.chance(0.5) ? Buffer.from(Array.from({ length: size }, () => rng.int(0, 255))) : Buffer.from(`{"keyId":"ops","signature":"${"A".repeat(Math.max(0, size - 40))}","body":"{}"}`);
      }
      // genuine commands at QoS 1: MQTT keeps order only per topic and QoS, and a seq overtaken by
      // a later one is (rightly) refused as replayed
      await attacker.publishAsync(`${base}request/${name}`, payload, { qos: isGenuine ? 1 : rng.pick([0, 1] as const), properties });
      // the pod subscribes request/+ and a 256 KiB maxPacketBytes: this one reaches it
      if (!name.includes("/") && payload.length < LARGE_MIN) counts.deliverable++;
      // paced: mosquitto drops what a subscriber's queue cannot hold (max_queued_messages, 1000),
      // which would be the broker losing messages, not the pod
      if (attackerClosed) throw new Error(`the broker dropped the fuzzer's own connection at case ${i} (${name.slice(0, 40)}, ${JSON.stringify(properties).slice(0, 200)}): the case is not one a broker delivers`);
      if (counts.deliverable - handled() > 300) {
        await waitFor(() => counts.deliverable - handled() <= 100, "the pod keeping up", 30_000, 5).catch((err: unknown) => {
          throw new Error(`${String(err)} at case ${i}: ${counts.deliverable} deliverable, ${handled()} handled: the pod stopped receiving requests`);
        });
      }
    }

    // every genuine command answered, where it may be, and accepted
    // (the audit event on events carries the transaction too: an answer is on a response topic)
    const answerOf = (tx: string): { topic: string; body: string } | undefined => seen.find((m) => m.topic.startsWith(`${base}response/`) && m.body.includes(`"transaction":"${tx}"`));
    await waitFor(() => [...genuine.keys()].every((tx) => answerOf(tx) !== undefined), "every genuine command answered", 60_000, 100).catch((err: unknown) => {
      const missing = [...genuine.keys()].filter((tx) => answerOf(tx) === undefined);
      const audits = seen.filter((m) => m.topic === `${base}events` && missing.some((tx) => m.body.includes(`"transaction":"${tx}"`))).map((m) => m.body);
      const logs = pod.logs.lines.filter((l) => (l.level as number) >= 40).slice(-8).map((l) => JSON.stringify(l).slice(0, 400));
      throw new Error(`${String(err)}: ${missing.join(", ")}; their audits: ${audits.join(" | ") || "none"}; uplink ${JSON.stringify(pod.uplink.stats()).slice(0, 600)}; logs ${logs.join("\n")}`);
    });
    for (const [tx, topic] of genuine) {
      const answer = answerOf(tx)!;
      expect(answer.topic, tx).toBe(topic);
      expect(JSON.parse(answer.body)).toMatchObject({ status: "ok", command: "snapshot" });
    }
    await new Promise((r) => setTimeout(r, 500));
    const s = pod.uplink.stats();
    // no flap: the pod's one connection held through all of it
    expect(s.connects).toBe(connects0);
    expect(s.connected).toBe(true);
    expect(s.commands.accepted - commands0.accepted).toBe(counts.genuine);
    // and every message that reached the pod was counted: accepted or rejected, none lost silently
    await waitFor(() => handled() === counts.deliverable, "every deliverable case handled", 10_000);
    // everything the pod published is in its own tree; replies only on its own response topics
    // or on a reply topic a requester asked for that the rule allows
    for (const m of seen) {
      if (m.topic.startsWith(`${base}request/`)) continue; // the attacker's own
      expect(m.topic.startsWith(base), m.topic).toBe(true);
      if (m.topic.startsWith(`${base}response/`)) {
        const own = /^response\/([a-z-]+|unknown)$/.test(m.topic.slice(base.length));
        expect(own || (asked.has(m.topic) && allowedReply(m.topic)), m.topic).toBe(true);
      }
    }
    // nothing moved, and control kept ticking
    const after = pod.agent.status();
    expect(after.racks.map((r) => [r.setpointC, r.isolation, r.isolatedByOperator])).toEqual(before.racks.map((r) => [r.setpointC, r.isolation, r.isolatedByOperator]));
    expect(pod.agent.control.ticks).toBeGreaterThan(ticks0 + 1000);
    expect(pod.agent.healthy()).toBe(true);
    console.log(
      `MQTT command fuzzing, FUZZ_SEED=${seed}: ${counts.cases} cases (${counts.genuine} genuine, ${counts.large} over maxPacketBytes, ${counts.unknownName} unknown names, ${counts.badReplyTopic} disallowed reply topics, ${counts.bigCorrelation} correlation data over 256 B); ` +
        `pod: ${s.commands.accepted - commands0.accepted} accepted, ${s.commands.rejected - commands0.rejected} rejected (${s.commands.suppressed - commands0.suppressed} beyond the audit rate), connections ${s.connects - connects0 + 1}`,
    );
    await attacker.endAsync(true);
  }, 300_000);
});

// The same at MQTT 3.1.1: no properties, and no maximumPacketSize the broker would honour, so
// every request up to HARD_PACKET_FACTOR × maxPacketBytes is delivered and the pod's own bounds
// must refuse it (the size check before any parse). Above that factor the pod ends its connection
// unread, by design (docs/security.md): those sizes are not sent here.
describe("command fuzzing at the MQTT level (mosquitto, MQTT 3.1.1)", () => {
  const env = podOnMosquitto(4);

  it("survives random topics and sizes up to 4 × maxPacketBytes: no flap, every request counted, only genuine commands accepted, nothing moved", async () => {
    const { broker, pod, mc } = env;
    const seed = fuzzSeed(0x33313131);
    const rng = new Prng(seed);
    const base = pod.base;
    const maxPacket = 256 * 1024; // the pod's default maxPacketBytes
    const attacker = await mqtt.connectAsync(broker.url, { protocolVersion: 4, clientId: `fuzz311-${process.pid}` });
    const seen: { topic: string; body: string }[] = [];
    attacker.on("message", (topic, payload) => seen.push({ topic, body: topic.startsWith(`${base}request/`) ? "" : payload.toString("utf8") }));
    await attacker.subscribeAsync("#", { qos: 0 });

    const connects0 = pod.uplink.stats().connects;
    const commands0 = pod.uplink.stats().commands;
    const ticks0 = pod.agent.control.ticks;
    const before = pod.agent.status();
    const counts = { cases: 0, genuine: 0, overCommandLimit: 0, overPacketLimit: 0, unknownName: 0 };
    const handled = (): number => pod.uplink.stats().commands.accepted + pod.uplink.stats().commands.rejected - commands0.accepted - commands0.rejected;
    const names = [...COMMANDS, "", "x", "setpoint ", "Setpoint", "request", "..", "ü", "$x", "a".repeat(rng.int(65, 10_000))];
    const transactions: string[] = [];

    for (let i = 0; i < CASES; i++) {
      counts.cases++;
      const isGenuine = rng.chance(0.05);
      const name = isGenuine ? "snapshot" : rng.chance(0.7) ? rng.pick(COMMANDS) : rng.pick(names);
      if (!(COMMANDS as readonly string[]).includes(name)) counts.unknownName++;
      let payload: Buffer;
      if (isGenuine) {
        counts.genuine++;
        const transaction = `fuzz311-${i}`;
        transactions.push(transaction);
        payload = Buffer.from(signedCommand(mc.spec("snapshot", {}, "observer", { transaction })));
      } else {
        // between the command limit (16 KiB) and the packet guard's hard limit, both sides of maxPacketBytes
        const size = rng.pick([0, 1, 100, 16 * 1024, 16 * 1024 + 1, rng.int(0, 64 * 1024), rng.int(maxPacket - 100, maxPacket + 100), rng.int(maxPacket, 3 * maxPacket)]);
        if (size > 16 * 1024) counts.overCommandLimit++;
        if (size > maxPacket) counts.overPacketLimit++;
        payload = rng.chance(0.5) ? Buffer.alloc(size, rng.int(0, 255)) : Buffer.from(`{"keyId":"ops","signature":"${"A".repeat(Math.max(0, size - 40))}","body":"{}"}`);
      }
      await attacker.publishAsync(`${base}request/${name}`, payload, { qos: isGenuine ? 1 : rng.pick([0, 1] as const) });
      if (i - handled() > 100) await waitFor(() => counts.cases - handled() <= 20, "the pod keeping up", 30_000, 5);
    }

    // every request the broker delivered was counted, accepted or rejected: none lost, no flap
    await waitFor(() => handled() === counts.cases, "every case handled", 30_000).catch((err: unknown) => {
      throw new Error(`${String(err)}: ${counts.cases} sent, ${handled()} handled; uplink ${JSON.stringify(pod.uplink.stats()).slice(0, 600)}`);
    });
    const answered = (tx: string): { topic: string; body: string } | undefined => seen.find((m) => m.topic.startsWith(`${base}response/`) && m.body.includes(`"transaction":"${tx}"`));
    await waitFor(() => transactions.every((tx) => answered(tx) !== undefined), "every genuine command answered", 30_000);
    for (const tx of transactions) {
      const a = answered(tx)!;
      expect(a.topic, tx).toBe(`${base}response/snapshot`); // 3.1.1 has no reply topic of the requester's
      expect(JSON.parse(a.body)).toMatchObject({ status: "ok", command: "snapshot" });
    }
    const s = pod.uplink.stats();
    expect(s.connects).toBe(connects0);
    expect(s.connected).toBe(true);
    expect(s.commands.accepted - commands0.accepted).toBe(counts.genuine);
    for (const m of seen) expect(m.topic.startsWith(base), m.topic).toBe(true);
    const after = pod.agent.status();
    expect(after.racks.map((r) => [r.setpointC, r.isolation, r.isolatedByOperator])).toEqual(before.racks.map((r) => [r.setpointC, r.isolation, r.isolatedByOperator]));
    expect(pod.agent.control.ticks).toBeGreaterThan(ticks0 + 1000);
    expect(pod.agent.healthy()).toBe(true);
    console.log(
      `MQTT 3.1.1 command fuzzing, FUZZ_SEED=${seed}: ${counts.cases} cases (${counts.genuine} genuine, ${counts.overCommandLimit} over the 16 KiB command limit, ${counts.overPacketLimit} over maxPacketBytes, ${counts.unknownName} unknown names); ` +
        `pod: ${s.commands.accepted - commands0.accepted} accepted, ${s.commands.rejected - commands0.rejected} rejected, connections ${s.connects - connects0 + 1}`,
    );
    await attacker.endAsync(true);
  }, 300_000);
});
