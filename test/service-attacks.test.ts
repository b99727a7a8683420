// The service plane against the attacks of issue #49, on `podwarden run` against the simulator in
// a process of its own (tooling/attack-pod.ts): a burst of HMI logins from one address and from
// eight, the same against Redfish's Basic auth, a slowloris on the HMI, the main thread held, a
// SIGHUP with a large alias-heavy config, a flood of 30,000 forged commands at up to 10k a second, and a 100 MB
// payload on the pod's MQTT sensor topic. The control plane must not notice any of them: no loop
// leaves live control for fail-safe (the control worker counts each entry,
// `status.control.failsafeEntries`), the pod stays Running, no alarm is raised but the machine's
// own timing, and the service still serves a genuine user afterwards. None asserts a duration:
// how late the ticks and actuator passes ran under each attack is a benchmark figure
// (`npm run bench -- --only attacks`).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetch as undiciFetch } from "undici";
import { stallMainThread } from "../hil/main-thread-stall.js";
import mqtt from "mqtt";
import { adminStatus, burst, commandFlood, eight, genuineCommand, hugePayload, hugeReload, login, MACHINE_TIMING, redfishGet, slowloris, startAttackPod, type AttackPod, type Mark } from "../tooling/attack-pod.js";
import { waitFor } from "../tooling/processes.js";
import { TEST_POD } from "./helpers/agent.js";
import { tempDir } from "./helpers/temp-dirs.js";

/**
 * No loop left live control, the pod is not in Failsafe, and no alarm was raised but the
 * machine's own timing and those the attack is answered with (`expected`: a rejected reload's).
 */
async function unharmed(pod: AttackPod, since: Mark, expected: readonly string[] = []): Promise<void> {
  const h = await pod.harm(since);
  expect(h.failsafeEntries, "loops that went to fail-safe during the attack").toBe(0);
  expect(h.allLive).toBe(true);
  expect(h.mode).not.toBe("Failsafe");
  expect(h.alarms.filter((id) => !MACHINE_TIMING.has(id) && !expected.includes(id)), "alarms raised during the attack").toEqual([]);
}

const attackPod = (name: string, o: { mqtt?: boolean } = {}): Promise<AttackPod> => startAttackPod(tempDir("podwarden-attacks-"), `${TEST_POD}-${name}`, o);

describe("a burst of HMI logins from eight addresses (issue #49)", () => {
  let pod: AttackPod;
  beforeAll(async () => {
    pod = await attackPod("logins8");
  }, 120_000);
  afterAll(async () => pod?.stop());

  it("400 wrong logins from eight addresses at once: at most the limiter's 20 are looked at, and no loop leaves Auto", async () => {
    const before = await pod.mark();
    const b = await burst(pod, eight("127.0.1"), 400, (c) => login(pod.hmi, c, "alice", "wrong"));
    expect(b.looked).toBeLessThanOrEqual(20);
    expect(b.unexpected).toEqual([]);
    await unharmed(pod, before);
  });

  it("failed logins under other names from eight addresses fill the ceiling in all: a new address waits, but a user with the right password from her own address logs in (issue #54)", async () => {
    expect(await login(pod.hmi, pod.client("127.0.2.1"), "carol", "carol-password")).toBe(200); // her workstation, before
    // one at a time, so that each is looked at (a burst is mostly refused as busy, unlooked)
    let held = false;
    for (let i = 0; i < 40 && !held; i++) held = (await login(pod.hmi, pod.client(`127.0.1.${1 + (i % 8)}`), `guess-${i}`, "wrong")) === 429;
    expect(held, "the ceiling in all was reached").toBe(true);
    expect(await login(pod.hmi, pod.client("127.0.2.2"), "carol", "carol-password")).toBe(429); // an address new to her
    expect(await login(pod.hmi, pod.client("127.0.2.1"), "carol", "carol-password")).toBe(200);
  });
});

describe("service inputs cannot reach the control plane (issue #49)", () => {
  let pod: AttackPod;
  beforeAll(async () => {
    pod = await attackPod("attacks");
  }, 120_000);
  afterAll(async () => pod?.stop());

  it("400 wrong logins from one address at once: at most its 5 are looked at, no loop leaves Auto, and the right user still logs in from her own address", async () => {
    expect(await login(pod.hmi, pod.client("127.0.0.2"), "alice", "alice-password")).toBe(200); // her workstation, before
    const before = await pod.mark();
    const b = await burst(pod, ["127.0.0.1"], 400, (c) => login(pod.hmi, c, "alice", "wrong"));
    expect(b.looked).toBeLessThanOrEqual(5);
    expect(b.unexpected).toEqual([]);
    await unharmed(pod, before);
    expect(await login(pod.hmi, pod.client("127.0.0.2"), "alice", "alice-password")).toBe(200);
  });

  it("400 wrong Basic credentials at Redfish from eight addresses: no loop leaves Auto, and a poller verified before still reads", async () => {
    const url = `${pod.redfish}/Chassis`;
    const poller = pod.client("127.0.2.100");
    expect(await redfishGet(url, poller, "alice", "alice-password")).toBe(200);
    const before = await pod.mark();
    const b = await burst(pod, eight("127.0.2"), 400, (c, i) => redfishGet(url, c, "alice", `wrong-${i}`));
    expect(b.looked).toBeGreaterThan(0);
    expect(b.looked).toBeLessThanOrEqual(20);
    expect(b.unexpected).toEqual([]);
    await unharmed(pod, before);
    expect(await redfishGet(url, poller, "alice", "alice-password")).toBe(200);
  });

  it("a slowloris of 16k connections on the HMI, held past node's own 30 s sweep: no loop leaves Auto, and a page from another address still loads", async () => {
    const before = await pod.mark();
    // a header line every 2 s on whatever is still open, for 35 s: past the 30 s interval at which
    // node checks every connection's header and request timeouts on the main thread by default
    const held = slowloris(pod.hmi, "127.0.3.1", 16_000, 35_000);
    // a genuine page while the attack holds its connections
    await new Promise((r) => setTimeout(r, 30_000));
    expect((await undiciFetch(pod.hmi, { dispatcher: pod.client("127.0.3.2") })).status).toBe(200);
    const s = await held;
    await unharmed(pod, before);
    expect(s.refused + s.open).toBeGreaterThan(0);
  }, 120_000);

  it("the daemon's main thread held for 6 s, twice its inputs' staleMs: control goes on, on its own thread, and no loop leaves Auto", async () => {
    const before = await pod.mark();
    const status0 = await adminStatus(pod.admin);
    const stall = await stallMainThread(pod.daemon.child.pid!);
    // the main thread serves the admin socket too: the truth while it is held is the plant's
    await new Promise((r) => setTimeout(r, 6000));
    const truth = (await (await fetch(`${pod.sim.controlUrl}/truth`)).json()) as { devices: { name: string; leaseExpired: boolean }[] };
    await stall.release();
    // every device's lease was kept while the main thread was held: the control plane heartbeat it
    expect(truth.devices.filter((d) => d.leaseExpired).map((d) => d.name)).toEqual([]);
    expect((await adminStatus(pod.admin)).control.ticks).toBeGreaterThan(status0.control.ticks);
    await unharmed(pod, before);
  }, 60_000);

  it("a SIGHUP with a 700 KB alias-heavy config: the reload is rejected and no loop leaves Auto", async () => {
    const before = await pod.mark();
    await hugeReload(pod);
    // the refusal is the answer, and says so: config:rejected (Warning) is raised by the control
    // plane's next supervisor pass, so it is waited for, not raced (a CI run saw it logged before
    // the check, the runs before it after)
    await waitFor(async () => (await pod.harm(before)).alarms.includes("config:rejected"), "config:rejected raised", 10_000, 100);
    await unharmed(pod, before, ["config:rejected"]);
  }, 90_000);
});

describe("MQTT inputs cannot reach the control plane (issue #49)", () => {
  let pod: AttackPod;
  beforeAll(async () => {
    pod = await attackPod("mqtt", { mqtt: true });
    await waitFor(async () => (await pod.metric("podwarden_mqtt_ingest_connected")) === 1, "the sensor connection up", 20_000, 200);
  }, 120_000);
  afterAll(async () => pod?.stop());

  it("30,000 forged commands at up to 10k a second: none carried out, every one refused or dropped unread, no loop leaves Auto, and a genuine command afterwards is", async () => {
    const before = await pod.mark();
    const accepted0 = await pod.metric("podwarden_commands_total", { result: "accepted" });
    const total0 = await pod.metric("podwarden_commands_total");
    const { sent } = await commandFlood(pod, 10_000, 30_000);
    // what the pod counted of the flood: refused (bad signature), or beyond its rate, dropped unread
    await waitFor(async () => (await pod.metric("podwarden_commands_total")) > total0, "the flood counted", 10_000, 200);
    const refused = (await pod.metric("podwarden_commands_total", { result: "rejected" })) + (await pod.metric("podwarden_commands_total", { result: "dropped" }));
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThanOrEqual(sent);
    expect(await pod.metric("podwarden_commands_total", { result: "accepted" })).toBe(accepted0);
    await unharmed(pod, before);
    // mission control's genuine command, sent again without an answer as it would be
    let answer: Record<string, unknown> | null = null;
    for (let i = 0; i < 5 && answer === null; i++) answer = await genuineCommand(pod, 1, 3000);
    expect(answer, JSON.stringify(answer)).toMatchObject({ status: "ok", command: "setpoint" });
  }, 90_000);

  it("a 100 MB payload on the pod's sensor topic: ended on its header, unread; the sensor read again after it, and no loop leaves Auto", async () => {
    const before = await pod.mark();
    const m = pod.mqtt!;
    const messages0 = await pod.metric("podwarden_mqtt_ingest_messages_total", { outcome: "messages" });
    const oversized0 = await pod.metric("podwarden_mqtt_ingest_messages_total", { outcome: "oversized" });
    await hugePayload(pod, m.sensorTopic, 100 * 1024 * 1024);
    await waitFor(async () => (await pod.metric("podwarden_mqtt_ingest_messages_total", { outcome: "oversized" })) > oversized0, "the payload refused", 30_000, 200);
    // the connection is made again, and a genuine reading arrives on it
    const sensor = await mqtt.connectAsync(m.url, { protocolVersion: 4, clientId: `sensor-${process.pid}`, reconnectPeriod: 0 });
    try {
      await waitFor(
        async () => {
          await sensor.publishAsync(m.sensorTopic, "21.5", { qos: 0 });
          return (await pod.metric("podwarden_mqtt_ingest_messages_total", { outcome: "messages" })) > messages0;
        },
        "a reading taken after the payload",
        30_000,
        500,
      );
    } finally {
      await sensor.endAsync();
    }
    await unharmed(pod, before);
  }, 90_000);
});
