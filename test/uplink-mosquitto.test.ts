// The uplink against a real mosquitto: the example per-pod ACL from deploy/, MQTT 5 request/
// response correlation, credentials from a file, and TLS with mutual authentication.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import mqtt from "mqtt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedCommand } from "../agent/commands/client.js";
import { redactUrl } from "../lib/mqtt-connection.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { brokerPki, type TestPki } from "./helpers/pki.js";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { MissionControl, startUplinkPod, type UplinkPod } from "./helpers/uplink.js";
import { tempDir } from "./helpers/temp-dirs.js";

const USERS = { "pod-demo-pod-a": "secret-a", "pod-demo-pod-b": "secret-b", "mission-control": "secret-mc" };

describe("redactUrl", () => {
  it("hides a URL's password, keeps the rest, and shows no more than the scheme of what is not a URL", () => {
    expect(redactUrl("mqtts://user:s3cret@broker:8883/x")).toBe("mqtts://user:***@broker:8883/x");
    expect(redactUrl("mqtt://127.0.0.1:1883")).toBe("mqtt://127.0.0.1:1883");
    expect(redactUrl("mqtt://:pw@host")).toBe("mqtt://:***@host");
    expect(redactUrl("mqtt://user:pa ss@")).toBe("mqtt://…");
    expect(redactUrl("garbage s3cret")).toBe("(not a URL)");
  });
});

describe("the example per-pod ACL, with a real mosquitto", () => {
  let broker: Mosquitto;
  let sim: TestSim;
  let pod: UplinkPod;
  let mc: MissionControl;
  let credDir: string;

  beforeAll(async () => {
    broker = await Mosquitto.start({ users: USERS, general: [`acl_file ${resolve("deploy/mosquitto/podwarden.acl")}`] });
    sim = await startTestSim();
    credDir = tempDir("pw-cred-");
    writeFileSync(join(credDir, "mqtt-password"), "secret-a\n");
    pod = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 5, sim, uplink: { username: "pod-demo-pod-a", passwordFile: join(credDir, "mqtt-password") } });
    mc = await MissionControl.connect(broker.url, pod.base, 5, { username: "mission-control", password: "secret-mc" });
  }, 60_000);
  afterAll(async () => {
    await mc?.close();
    await pod?.stop();
    await sim?.stop();
    await broker?.stop();
    rmSync(credDir, { recursive: true, force: true });
  });

  it("lets the pod publish its own topics (password from a credentials file)", async () => {
    await waitFor(() => mc.of("telemetry").length >= 2, "telemetry through the ACL", 10_000);
    await waitFor(() => mc.of("state").some((s) => s.state === "online"), "state through the ACL");
    expect(pod.uplink.stats().connected).toBe(true);
  });

  it("stops a pod publishing into another pod's tree, or publishing requests or acknowledgements, even to itself", async () => {
    const rogue = await mqtt.connectAsync(broker.url, { protocolVersion: 5, username: "pod-demo-pod-a", password: "secret-a", clientId: "rogue-a", reconnectPeriod: 0 });
    try {
      for (const topic of ["podwarden/demo/pod-b/telemetry", "podwarden/demo/pod-b/state", "podwarden/demo/pod-a/request/setpoint", "podwarden/demo/pod-b/request/reset-leak", "podwarden/demo/pod-a/ack", "podwarden/demo/pod-b/ack", "podwarden/other/x/events"]) {
        // MQTT 5: mosquitto answers a denied QoS 1 publish with "not authorized"
        await expect(rogue.publishAsync(topic, JSON.stringify({ forged: true }), { qos: 1 }), topic).rejects.toThrow(/not authori[sz]ed/i);
      }
    } finally {
      await rogue.endAsync(true);
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(mc.messages.some((m) => m.body.forged === true)).toBe(false);
    // mission control may acknowledge a pod's events (uplink.consumerAck), and nothing else of the pod's
    const missionControl = await mqtt.connectAsync(broker.url, { protocolVersion: 5, username: "mission-control", password: "secret-mc", clientId: "mc-ack", reconnectPeriod: 0 });
    try {
      await missionControl.publishAsync("podwarden/demo/pod-a/ack", JSON.stringify({ events: 0 }), { qos: 1 });
      await expect(missionControl.publishAsync("podwarden/demo/pod-a/events", JSON.stringify({ forged: true }), { qos: 1 })).rejects.toThrow(/not authori[sz]ed/i);
    } finally {
      await missionControl.endAsync(true);
    }
  });

  it("refuses a wrong password, and an anonymous client", async () => {
    await expect(mqtt.connectAsync(broker.url, { protocolVersion: 5, username: "pod-demo-pod-a", password: "wrong", reconnectPeriod: 0, connectTimeout: 3000 })).rejects.toThrow(/bad user name or password|not authori[sz]ed/i);
    await expect(mqtt.connectAsync(broker.url, { protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 3000 })).rejects.toThrow(/not authori[sz]ed|bad user name or password/i);
  });

  it("answers on the MQTT 5 responseTopic with the request's correlationData", async () => {
    const spec = mc.spec("snapshot", {}, "observer");
    const replyTo = `${pod.base}response/mc-console-7`;
    const correlation = Buffer.from("corr-1234");
    await mc.publishRaw("snapshot", signedCommand({ ...spec, transaction: "tx-v5" }), { properties: { responseTopic: replyTo, correlationData: correlation } });
    await waitFor(() => mc.messages.some((m) => m.topic === replyTo), "response on the responseTopic");
    const r = mc.messages.find((m) => m.topic === replyTo)!;
    expect(r.body).toMatchObject({ status: "ok", transaction: "tx-v5" });
    expect(r.correlationData?.toString()).toBe("corr-1234");
    // a responseTopic outside the pod's tree is not used (the ACL would refuse it anyway)
    await mc.publishRaw("snapshot", signedCommand({ ...mc.spec("snapshot", {}, "observer"), transaction: "tx-out" }), { properties: { responseTopic: "elsewhere/replies", correlationData: correlation } });
    await waitFor(() => mc.of("response/snapshot").some((b) => b.transaction === "tx-out"), "response on the default topic");
  });

  it("never answers on a responseTopic with a wildcard, outside its tree or too long: the default topic instead, and the connection stays up", async () => {
    const connects = pod.uplink.stats().connects;
    const bad = [`${pod.base}response/#`, `${pod.base}response/+/x`, `${pod.base}response/${"z".repeat(600)}`, `${pod.base}response/`, "podwarden/demo/pod-b/response/x"];
    for (const [k, responseTopic] of bad.entries()) {
      await mc.publishRaw("snapshot", signedCommand({ ...mc.spec("snapshot", {}, "observer"), transaction: `tx-bad-reply-${k}` }), { properties: { responseTopic, correlationData: Buffer.from(`c${k}`) } });
    }
    for (const k of bad.keys()) await waitFor(() => mc.of("response/snapshot").some((b) => b.transaction === `tx-bad-reply-${k}`), `answer ${k} on the default topic`);
    expect(pod.uplink.stats().connects, "connections: none dropped by the broker").toBe(connects);
    expect(pod.uplink.stats().connected).toBe(true);
  });

  it("never logs a password given in the broker URL", async () => {
    const second = await startUplinkPod({ brokerUrl: broker.url.replace("mqtt://", "mqtt://pod-demo-pod-a:secret-a@"), protocolVersion: 5, sim, uplink: { clientId: "podwarden-demo-pod-a-url-creds", commands: { enabled: false } } });
    try {
      await waitFor(() => second.uplink.stats().connected, "connected with the URL's credentials");
      await waitFor(() => second.logs.lines.some((l) => l.msg === "uplink connected"), "the connect log line");
      const line = second.logs.lines.find((l) => l.msg === "uplink connected")!;
      expect(line.url).toBe(broker.url.replace("mqtt://", "mqtt://pod-demo-pod-a:***@"));
      expect(JSON.stringify(second.logs.lines)).not.toContain("secret-a");
    } finally {
      await second.stop();
    }
  });

  it("tells the broker its maximumPacketSize (MQTT 5): a request beyond uplink.maxPacketBytes never reaches the pod, one within does", async () => {
    const received = (): number => pod.uplink.stats().commands.accepted + pod.uplink.stats().commands.rejected + pod.uplink.stats().commands.suppressed;
    const before = received();
    // 1 MB: far beyond the default 256 KiB; mosquitto drops it for the pod's session
    await mc.publishRaw("snapshot", Buffer.alloc(1_000_000, 0x20));
    const spec = mc.spec("snapshot", {}, "observer");
    await mc.publishRaw("snapshot", signedCommand({ ...spec, transaction: "tx-after-big" }));
    await waitFor(() => mc.of("response/snapshot").some((b) => b.transaction === "tx-after-big"), "the small request answered");
    expect(received() - before, "requests that reached the command service").toBe(1);
    expect(pod.uplink.stats().connected).toBe(true);
  });
});

describe("TLS and mutual TLS, with a real mosquitto", () => {
  let pki: TestPki;
  let broker: Mosquitto;
  let sim: TestSim;
  const f = (n: string): string => pki.file(n);

  beforeAll(async () => {
    pki = await brokerPki(["pod", "mc"]);
    broker = await Mosquitto.start({ conf: pki.mosquittoTls() });
    sim = await startTestSim();
  }, 60_000);
  afterAll(async () => {
    await sim?.stop();
    await broker?.stop();
    pki?.remove();
  });

  it("connects with a verified broker certificate and its own client certificate", async () => {
    const url = `mqtts://127.0.0.1:${broker.port}`;
    const pod = await startUplinkPod({ brokerUrl: url, protocolVersion: 5, sim, uplink: { tls: { caFile: f("ca.pem"), certFile: f("pod.pem"), keyFile: f("pod.key") } } });
    const mc = await MissionControl.connect(url, pod.base, 5, { ca: readFileSync(f("ca.pem")), cert: readFileSync(f("mc.pem")), key: readFileSync(f("mc.key")), rejectUnauthorized: true });
    try {
      await waitFor(() => mc.of("telemetry").length >= 1, "telemetry over mutual TLS", 10_000);
      const r = await mc.send("snapshot", {}, "observer");
      expect(r.status).toBe("ok");
    } finally {
      await mc.close();
      await pod.stop();
    }
  });

  it("is refused with an expired client certificate, and refuses a broker whose certificate has expired", async () => {
    await pki.issue("pod-expired", "pod", "ca", undefined, -1);
    await pki.issue("broker-expired", "127.0.0.1", "ca", "IP:127.0.0.1", -1);
    const staleBroker = await Mosquitto.start({ conf: pki.mosquittoTls("broker-expired") });
    const expiredPod = await startUplinkPod({ brokerUrl: `mqtts://127.0.0.1:${broker.port}`, protocolVersion: 5, sim, uplink: { clientId: "pod-expired", tls: { caFile: f("ca.pem"), certFile: f("pod-expired.pem"), keyFile: f("pod-expired.key") } } });
    const toStaleBroker = await startUplinkPod({ brokerUrl: `mqtts://127.0.0.1:${staleBroker.port}`, protocolVersion: 5, sim, uplink: { clientId: "pod-to-expired", tls: { caFile: f("ca.pem"), certFile: f("pod.pem"), keyFile: f("pod.key") } } });
    try {
      await new Promise((r) => setTimeout(r, 1500));
      expect(expiredPod.uplink.stats()).toMatchObject({ connected: false, connects: 0 });
      expect(toStaleBroker.uplink.stats()).toMatchObject({ connected: false, connects: 0 });
    } finally {
      await expiredPod.stop();
      await toStaleBroker.stop();
      await staleBroker.stop();
    }
  });

  it("is refused without a client certificate, and refuses a broker its CA did not sign", async () => {
    const url = `mqtts://127.0.0.1:${broker.port}`;
    const noCert = await startUplinkPod({ brokerUrl: url, protocolVersion: 5, sim, uplink: { tls: { caFile: f("ca.pem") } } });
    const wrongCa = await startUplinkPod({ brokerUrl: url, protocolVersion: 5, sim, uplink: { clientId: "pod-wrong-ca", tls: { caFile: f("rogue-ca.pem"), certFile: f("pod.pem"), keyFile: f("pod.key") } } });
    try {
      await new Promise((r) => setTimeout(r, 1500));
      expect(noCert.uplink.stats()).toMatchObject({ connected: false, connects: 0 });
      expect(wrongCa.uplink.stats()).toMatchObject({ connected: false, connects: 0 });
      // both keep spooling: nothing is lost while they cannot connect
      expect(noCert.uplink.stats().spoolDepth.telemetry).toBeGreaterThan(0);
    } finally {
      await noCert.stop();
      await wrongCa.stop();
    }
  });
});

describe("the retained state at a stop, with a real mosquitto", () => {
  /** What a newcomer sees: the broker's retained state for the pod, and only that. */
  async function retainedState(url: string, topic: string): Promise<Record<string, unknown>[]> {
    const c = await mqtt.connectAsync(url, { protocolVersion: 5, clientId: `look-${process.pid}-${Math.random().toString(16).slice(2)}` });
    const got: Record<string, unknown>[] = [];
    c.on("message", (_t, p, packet) => got.push({ ...(JSON.parse(p.toString()) as Record<string, unknown>), retained: packet.retain }));
    await c.subscribeAsync(topic, { qos: 1 });
    await new Promise((r) => setTimeout(r, 300));
    await c.endAsync();
    return got;
  }

  it("a clean stop leaves 'offline, stopped' with its mode and time, and the Will does not overwrite it", async () => {
    const broker = await Mosquitto.start({ persistence: false });
    const sim = await startTestSim();
    const pod = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 5, sim, uplink: { clientId: "pod-clean-stop" } });
    try {
      const topic = `${pod.base}state`;
      await waitFor(async () => (await retainedState(broker.url, topic)).some((m) => m.state === "online"), "retained online", 20_000, 200);
      const before = Date.now();
      await pod.stop();
      // give a Will every chance to arrive: mosquitto publishes it as soon as the socket drops
      await new Promise((r) => setTimeout(r, 1000));
      const kept = await retainedState(broker.url, topic);
      expect(kept).toHaveLength(1);
      expect(kept[0]).toMatchObject({ state: "offline", reason: "stopped", retained: true, mode: expect.stringMatching(/^(Starting|Running|Degraded|Failsafe)$/) as unknown, maintenance: false });
      expect(Date.parse(String(kept[0].timestamp))).toBeGreaterThanOrEqual(before - 1000);
    } finally {
      await pod.stop();
      await sim.stop();
      await broker.stop();
    }
  }, 60_000);
});
