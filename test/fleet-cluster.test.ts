// A pod on a real clustered broker: three nats-server nodes, JetStream-backed MQTT with its
// streams on all three (tooling/nats-cluster.ts), MQTT 3.1.1. The pod's broker list is the three
// nodes. Its node is killed outright (SIGKILL) mid-run and started again, then the whole cluster
// is restarted: mission control, on a persistent session, counts every event by its sequence
// number, and none may be missing; the pod's control runs throughout. Between the two, the node
// the pod moved to is cut off from its peers (its routes black-holed) and joined again: it keeps
// the pod's connection and answers its pings, and acknowledges nothing, so the pod gives it up
// (no PUBACK for 3 x keepalive) and moves on.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { topicBase } from "../agent/uplink/uplink.js";
import { NatsCluster } from "../tooling/nats-cluster.js";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { expectEveryEvent, MissionControl, startUplinkPod } from "./helpers/uplink.js";

let sim: TestSim;
let cluster: NatsCluster;
beforeAll(async () => {
  [sim, cluster] = await Promise.all([startTestSim(), NatsCluster.start({ nodes: 3, replicas: 3 })]);
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
  await sim?.stop();
});

describe("a pod on a NATS cluster (MQTT 3.1.1, streams replicated on 3 nodes)", () => {
  it("loses no event when its node is killed and restarted, cut off from its peers, or when the whole cluster restarts", async () => {
    const base = topicBase("demo", "pod-a");
    // mission control on the third node, on a persistent session kept in the cluster's streams:
    // it reconnects through the list itself when the whole cluster restarts
    const mc = await MissionControl.connect(cluster.url(2), base, 4, {
      clientId: `mc-fleet-${process.pid}`,
      clean: false,
      reconnectPeriod: 250,
      servers: [2, 1].map((i) => ({ host: "127.0.0.1", port: Number(new URL(cluster.url(i)).port) })),
    });
    const pod = await startUplinkPod({ brokerUrl: cluster.url(0), protocolVersion: 4, sim, uplink: { brokers: cluster.urls, keepaliveS: 2 } });
    let probes = 0;
    const probe = setInterval(() => pod.agent.audit({ action: "probe", by: "test", result: String(++probes) }), 20);
    const ticks0 = pod.agent.control.ticks;
    try {
      await waitFor(() => pod.uplink.stats().connected, "the pod on the cluster", 15_000);
      expect(pod.uplink.stats().broker).toBe(cluster.url(0));
      await waitFor(() => mc.of("events").length > 20, "events at mission control", 15_000);

      // the pod's node dies without a word; the pod moves to the next, and the node comes back
      await cluster.kill(0);
      await waitFor(() => pod.uplink.stats().connected && pod.uplink.stats().broker === cluster.url(1), "the pod on node 2", 20_000);
      const onTwo = probes;
      await waitFor(() => probes > onTwo + 25, "events while node 1 is down");
      await cluster.restart(0);

      // the pod's node (now node 2) cut off from its peers, then joined again
      const moves = pod.uplink.stats().brokerSwitches;
      cluster.partition(1);
      await waitFor(() => pod.uplink.stats().brokerSwitches > moves, "the pod leaving the cut-off node", 20_000);
      cluster.partition(1, false);
      await waitFor(() => pod.uplink.stats().connected && pod.uplink.stats().spoolDepth.critical < 5, "the pod sending again after the partition", 40_000);

      // every node down at once, then up: the pod spools, and sends it all when the cluster is back
      const connects = pod.uplink.stats().connects;
      await cluster.restartAll();
      await waitFor(() => pod.uplink.stats().connects > connects && pod.uplink.stats().connected, "the pod back on the restarted cluster", 30_000);

      clearInterval(probe);
      await expectEveryEvent(pod, () => mc.of("events"));
      expect(pod.uplink.stats().brokerSwitches).toBeGreaterThanOrEqual(1);
      // control never stopped: ticks went on (the tick figures are in the bench, not asserted here)
      expect(pod.agent.control.ticks).toBeGreaterThan(ticks0 + 1000);
      expect(pod.agent.healthy()).toBe(true);
    } finally {
      clearInterval(probe);
      await pod.stop();
      await mc.close();
    }
  }, 120_000);
});
