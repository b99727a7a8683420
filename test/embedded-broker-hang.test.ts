// The embedded broker's hang (the HIL runner's `broker: hang|resume`): a broker stopped with
// SIGSTOP, as its clients see it. Nothing is read or answered while it hangs, a client finds out
// only from its keepalive, and what waited is answered once it goes on. And its partition
// (`broker: partition|heal`): one client cut off while the broker runs on for the others.
import mqtt from "mqtt";
import { afterEach, describe, expect, it } from "vitest";
import { startEmbeddedBroker, type EmbeddedBroker } from "../lib/embedded-broker.js";
import { waitFor } from "./helpers/processes.js";

describe("embedded broker hang", () => {
  let broker: EmbeddedBroker | undefined;
  const clients: mqtt.MqttClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.endAsync(true);
    await broker?.close();
    broker = undefined;
  });

  it("answers nothing while it hangs, so a client finds out from its keepalive, and answers what waited once it goes on", async () => {
    broker = await startEmbeddedBroker();
    const got: string[] = [];
    const sub = await mqtt.connectAsync(broker.url, { clientId: `hang-sub-${process.pid}`, keepalive: 60, reconnectPeriod: 0 });
    clients.push(sub);
    sub.on("message", (_t, p) => got.push(p.toString()));
    await sub.subscribeAsync("hang/t", { qos: 1 });
    const pub = await mqtt.connectAsync(broker.url, { clientId: `hang-pub-${process.pid}`, keepalive: 1, reconnectPeriod: 0 });
    clients.push(pub);
    let closed = false;
    pub.on("close", () => (closed = true));
    let acked = false;

    broker.hang();
    // (on its close mqtt.js ends the wait with an error: only a callback without one is a PUBACK)
    pub.publish("hang/t", "sent into the hang", { qos: 1 }, (err) => (acked ||= err === undefined || err === null));
    // the connection stays open: only the client's keepalive ends it (a killed broker would close it at once)
    await waitFor(() => closed, "the publisher's keepalive to give up on the hung broker", 10_000, 20);
    expect(acked).toBe(false);
    expect(got).toEqual([]);
    // nor is a new connection answered
    const late = mqtt.connect(broker.url, { clientId: `hang-late-${process.pid}`, reconnectPeriod: 0, connectTimeout: 60_000 });
    clients.push(late);
    let lateConnected = false;
    late.on("connect", () => (lateConnected = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(lateConnected).toBe(false);

    broker.resume();
    // once it goes on, it answers what waited (the late connection) and carries messages again.
    // (What the dead connection sent into the hang is read too, but aedes ends a client on its
    // stream's end before its PUBLISH is through: a pod's safety is that it re-sends what was
    // never acknowledged, docs/hil.md's leak-during-broker-hang.)
    await waitFor(() => lateConnected, "the connection made during the hang to be answered", 10_000, 20);
    await late.publishAsync("hang/t", "after", { qos: 1 });
    await waitFor(() => got.includes("after"), "a message through the broker once it goes on", 10_000, 20);
    expect(sub.connected).toBe(true);
  }, 30_000);

  it("cuts a client off in a partition while the rest carry on: the broker publishes its Will, it learns nothing but from its keepalive, and is answered once the partition heals", async () => {
    broker = await startEmbeddedBroker();
    const got: { topic: string; text: string }[] = [];
    const watcher = await mqtt.connectAsync(broker.url, { clientId: `part-watch-${process.pid}`, keepalive: 60, reconnectPeriod: 0 });
    clients.push(watcher);
    watcher.on("message", (topic, p) => got.push({ topic, text: p.toString() }));
    await watcher.subscribeAsync("part/#", { qos: 1 });
    const cut = await mqtt.connectAsync(broker.url, { clientId: `part-cut-${process.pid}`, keepalive: 1, reconnectPeriod: 0, will: { topic: "part/will", payload: Buffer.from("gone"), qos: 1, retain: false } });
    clients.push(cut);
    let cutClosed = false;
    cut.on("close", () => (cutClosed = true));
    const watcherPort = (watcher.stream as unknown as { localPort: number }).localPort;

    broker.partition((c) => c.remotePort === watcherPort);
    cut.publish("part/t", "sent into the partition", { qos: 1 });
    // the broker's keepalive (1.5 x 1 s) ends the cut-off session and publishes its Will to the rest
    await waitFor(() => got.some((m) => m.topic === "part/will"), "the cut-off client's Will at the watcher", 10_000, 20);
    expect(got.map((m) => m.text)).not.toContain("sent into the partition");
    // the watcher's own traffic carries on through the running broker
    await watcher.publishAsync("part/t", "the rest carry on", { qos: 1 });
    await waitFor(() => got.some((m) => m.text === "the rest carry on"), "the watcher's own message", 10_000, 20);
    // the cut-off client finds out from its own keepalive only
    await waitFor(() => cutClosed, "the cut-off client's keepalive to give up", 10_000, 20);
    // a new connection from the far side is not answered while the partition lasts
    const late = mqtt.connect(broker.url, { clientId: `part-late-${process.pid}`, reconnectPeriod: 0, connectTimeout: 60_000 });
    clients.push(late);
    let lateConnected = false;
    late.on("connect", () => (lateConnected = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(lateConnected).toBe(false);

    broker.heal();
    await waitFor(() => lateConnected, "the connection made during the partition to be answered once it heals", 10_000, 20);
    await late.publishAsync("part/t", "after", { qos: 1 });
    await waitFor(() => got.some((m) => m.text === "after"), "a message across the healed partition", 10_000, 20);
    expect(watcher.connected).toBe(true);
  }, 30_000);
});
