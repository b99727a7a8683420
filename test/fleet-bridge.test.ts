// The classic site topology, with real brokers: a mosquitto per site, bridged to a central
// mosquitto (deploy/mosquitto/site-bridge.conf is the example this test runs). The pod talks to its
// site broker only; mission control, on the central broker, reaches it through the bridge both
// ways. The bridge is killed (its link reset and refused) mid-run and comes back: the site broker
// queues for it, and mission control counts every event by its sequence number, none missing.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { topicBase } from "../agent/uplink/uplink.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { PartitionProxy } from "../tooling/partition-proxy.js";
import { waitFor } from "./helpers/processes.js";
import { expectEveryEvent, MissionControl, sharedSim, startUplinkPod } from "./helpers/uplink.js";

/** The example bridge's lines, with the central broker's address and the bridge's name put in. */
function bridgeConf(centralPort: number): string[] {
  return readFileSync("deploy/mosquitto/site-bridge.conf", "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "" && !l.startsWith("#"))
    .map((l) => l.replace("central.example:8883", `127.0.0.1:${centralPort}`).replace("<site>", "fleet-test"))
    // the example's TLS lines need certificates; the loopback test runs the bridge in the clear
    .filter((l) => !l.startsWith("bridge_cafile") && !l.startsWith("bridge_certfile") && !l.startsWith("bridge_keyfile"));
}

const sim = sharedSim();

describe("site brokers bridged to a central broker (mosquitto)", () => {
  it("carries events out and commands in through the bridge, and loses no event when the bridge is killed", async () => {
    const central = await Mosquitto.start({ persistence: true, general: ["max_queued_messages 0"] });
    const link = new PartitionProxy(central.port);
    await link.listen();
    const site = await Mosquitto.start({ persistence: true, general: ["max_queued_messages 0"], conf: bridgeConf(link.port) });
    const base = topicBase("demo", "pod-a");
    const mc = await MissionControl.connect(central.url, base, 4, { clientId: `mc-bridge-${process.pid}`, clean: false });
    const pod = await startUplinkPod({ brokerUrl: site.url, protocolVersion: 4, sim: sim(), uplink: { keepaliveS: 2 } });
    let probes = 0;
    const probe = setInterval(() => pod.agent.audit({ action: "probe", by: "test", result: String(++probes) }), 20);
    try {
      // the pod's retained state and its events reach the centre; a command goes in and is answered
      await waitFor(() => mc.messages.some((m) => m.topic === `${base}state` && m.body.state === "online"), "the pod's state at the centre", 15_000);
      const answer = await mc.send("snapshot", {}, "observer");
      expect(answer.status).toBe("ok");

      // the bridge dies: its connection reset, and refused while it retries
      link.setMode("reject");
      const cut = probes;
      // what was past the link already (at the centre, on its way to mission control) lands in
      // the first moments: counted from 25 events on (a loaded CI run had 10 still landing)
      await waitFor(() => probes > cut + 25, "events after the cut", 10_000);
      const during = probes;
      const atCut = mc.of("events").length;
      await waitFor(() => probes > during + 100, "events while the bridge is down", 10_000);
      // the link was down: those events waited at the site
      expect(mc.of("events").length).toBeLessThan(atCut + 10);
      expect(pod.uplink.stats().connected).toBe(true); // the pod never noticed: its broker is the site's
      link.setMode("pass");

      await new Promise((r) => setTimeout(r, 500));
      clearInterval(probe);
      await expectEveryEvent(pod, () => mc.of("events"));
      // and commands go in again once the bridge is back
      expect((await mc.send("snapshot", {}, "observer")).status).toBe("ok");
    } finally {
      clearInterval(probe);
      await pod.stop();
      await mc.close();
      await site.stop();
      await link.close();
      await central.stop();
    }
  }, 90_000);
});
