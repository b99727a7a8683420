// A command subscription the broker refuses without closing the connection (a NATS cluster
// whose JetStream is still recovering; an authorisation that is fixed later): the pod asks
// again until it is granted, and is never left connected and deaf to commands.
import type { Client, Subscription } from "aedes";
import { describe, expect, it } from "vitest";
import { startEmbeddedBroker } from "../lib/embedded-broker.js";
import { waitFor } from "./helpers/processes.js";
import { MissionControl, startUplinkPod } from "./helpers/uplink.js";

describe("a command subscription the broker refuses", () => {
  it("is asked for again, with a backoff, until it is granted; then the pod answers commands, on the same connection", async () => {
    const broker = await startEmbeddedBroker(0);
    let refuse = true;
    const asked: string[] = [];
    broker.aedes.authorizeSubscribe = (client: Client | null, sub: Subscription, done: (err: Error | null, sub?: Subscription | null) => void): void => {
      const ours = sub.topic.endsWith("/request/+");
      if (ours) asked.push(sub.topic);
      // a null subscription: aedes answers the SUBACK with failure (128) and keeps the connection
      // (an error would end the connection, which the pod's reconnect already handles)
      done(null, ours && refuse ? null : sub);
    };
    const pod = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 4, pod: "sub-refused" });
    const mc = await MissionControl.connect(broker.url, pod.base, 4);
    try {
      await waitFor(() => asked.length >= 3, "the subscription asked for again", 15_000);
      expect(pod.logs.lines.filter((l) => l.msg === "broker refused the command subscription: asking again").length).toBeGreaterThanOrEqual(2);
      expect(pod.uplink.stats().connected).toBe(true);
      await expect(mc.send("snapshot", {}, "observer", { pod: "sub-refused" })).rejects.toThrow(/response to snapshot/);
      refuse = false;
      await waitFor(async () => {
        try {
          return (await mc.send("snapshot", {}, "observer", { pod: "sub-refused" })).status === "ok";
        } catch {
          return false;
        }
      }, "a command answered once the subscription is granted", 30_000, 200);
      expect(pod.uplink.stats().connects).toBe(1); // heard without a reconnect
      const n = asked.length;
      await new Promise((r) => setTimeout(r, 1500));
      expect(asked.length).toBe(n); // granted: not asked again
    } finally {
      await mc.close();
      await pod.stop();
      await broker.close();
    }
  }, 90_000);
});
