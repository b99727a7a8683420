// Broker failover (uplink.brokers): two real mosquitto brokers, the pod's list [A, B]. A hangs
// (SIGSTOP): the pod gives it up as silent and moves to B, with its spool, its sequence numbers and
// its replay guard; a command mission control re-sends on B after A took its answer runs once and
// is answered as the first was; when A comes back, what it had taken reaches mission control, so
// events counted over both brokers have no gap. Then B dies (SIGKILL) and the pod wraps round to A.
// The list itself (order, names with several addresses, wrapping) is tested without a network.
import { describe, expect, it } from "vitest";
import { signedCommand } from "../agent/commands/client.js";
import { validateAgentConfig } from "../agent/config/load.js";
import { BrokerList } from "../lib/broker-list.js";
import { demoConfigData } from "../cli/demo-config.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { waitFor } from "./helpers/processes.js";
import { expectEveryEvent, MissionControl, sharedSim, startUplinkPod } from "./helpers/uplink.js";
import { topicBase } from "../agent/uplink/uplink.js";

describe("the broker list", () => {
  it("goes through the URLs in order, each name's addresses one by one, and wraps round", async () => {
    const asked: string[] = [];
    const list = new BrokerList(["mqtt://cluster.site:1883", "mqtts://127.0.0.1:8883", "mqtt://gone.site:1883"], (host) => {
      asked.push(host);
      return host === "gone.site" ? Promise.reject(new Error("ENOTFOUND")) : Promise.resolve(["10.0.0.1", "fd00::2"]);
    });
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      const t = await list.current();
      seen.push(`${t.url} ${t.servername ?? "-"}`);
      expect(await list.current()).toBe(t); // no move without a failure
      list.failed();
    }
    expect(seen).toEqual([
      "mqtt://10.0.0.1:1883 cluster.site",
      "mqtt://[fd00::2]:1883 cluster.site",
      "mqtts://127.0.0.1:8883 -",
      // a name that does not resolve is one attempt that fails on its own
      "mqtt://gone.site:1883 -",
      "mqtt://10.0.0.1:1883 cluster.site",
    ]);
    // the name is resolved again each time the list comes back to it
    expect(asked).toEqual(["cluster.site", "gone.site", "cluster.site"]);
    expect(list.switches).toBe(5);
  });

  it("takes url or brokers, not both and not neither, and TLS only with every URL secure", () => {
    const check = (uplink: Record<string, unknown>): string => {
      const data = demoConfigData(() => 15020);
      data.uplink = uplink;
      try {
        validateAgentConfig(data, "test");
        return "ok";
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(check({ brokers: ["mqtt://127.0.0.1:1", "mqtt://127.0.0.1:2"] })).toBe("ok");
    expect(check({ url: "mqtt://127.0.0.1:1", brokers: ["mqtt://127.0.0.1:2"] })).toMatch(/give url \(one broker\) or brokers/);
    expect(check({ protocolVersion: 5 })).toMatch(/give url \(one broker\) or brokers/);
    expect(check({ brokers: [] })).toMatch(/brokers/);
    expect(check({ brokers: ["http://127.0.0.1:1"] })).toMatch(/brokers/);
    expect(check({ brokers: ["mqtts://127.0.0.1:1", "mqtt://127.0.0.1:2"], tls: {} })).toMatch(/TLS settings need mqtts:\/\/ URLs/);
  });
});

const sim = sharedSim();

describe("uplink failover between brokers", () => {
  it("moves from a hung broker to the next with nothing lost, runs a re-sent command once, and wraps round when the next dies", async () => {
    const a = await Mosquitto.start();
    const b = await Mosquitto.start();
    const base = topicBase("demo", "pod-a");
    // mission control on both brokers; the one on A keeps its connection through A's hang (a long
    // keepalive), so what A took before it stopped is delivered when it resumes
    const mcA = await MissionControl.connect(a.url, base, 5, { keepalive: 60 });
    const mcB = await MissionControl.connect(b.url, base, 5);
    const pod = await startUplinkPod({ brokerUrl: a.url, protocolVersion: 5, sim: sim(), uplink: { brokers: [a.url, b.url], keepaliveS: 1 } });
    let probes = 0;
    const probe = setInterval(() => pod.agent.audit({ action: "probe", by: "test", result: String(++probes) }), 20);
    try {
      expect(pod.uplink.stats().broker).toBe(a.url);
      // commands are QoS 0 (mission control re-sends without an answer): one sent before the
      // pod's subscription is acknowledged is not heard, so this one waits for it
      await waitFor(() => pod.uplink.stats().commandsLive, "the pod's command subscription on A");
      // a command on A, answered on A
      const spec = mcA.spec("setpoint", { loop: "rack-2.valve", value: 40, leaseS: 600 });
      const payload = signedCommand({ ...spec, transaction: "tx-failover" });
      await mcA.publishRaw("setpoint", payload);
      await waitFor(() => mcA.of("response/setpoint").some((r) => r.transaction === "tx-failover"), "the first answer, on A");

      a.pause();
      await waitFor(() => pod.uplink.stats().connected && pod.uplink.stats().broker === b.url, "the pod on B", 15_000);
      expect(pod.uplink.stats().brokerSwitches).toBeGreaterThanOrEqual(1);
      // B has the pod's retained state, from the pod itself
      await waitFor(() => mcB.messages.some((m) => m.topic === `${base}state` && m.body.state === "online"), "online on B");

      // mission control, not having heard on B, sends the same signed command again there
      await waitFor(() => pod.uplink.stats().commandsLive, "the pod's command subscription on B");
      await mcB.publishRaw("setpoint", payload);
      await waitFor(() => mcB.of("response/setpoint").some((r) => r.transaction === "tx-failover"), "the answer to the copy, on B");
      const again = mcB.of("response/setpoint").find((r) => r.transaction === "tx-failover")!;
      expect(again).toMatchObject({ status: "ok", duplicate: true, command: "setpoint" });
      expect(pod.uplink.stats().commands).toMatchObject({ accepted: 1, duplicates: 1 });

      a.resume();
      // what A took before it hung reaches mission control now; the rest went through B
      clearInterval(probe);
      await expectEveryEvent(pod, () => [...mcA.of("events"), ...mcB.of("events")]);
      // the command ran once: one accepted audit, one duplicate
      const audits = [...mcA.of("events"), ...mcB.of("events")].filter((e) => e.type === "command.audit" && e.transaction === "tx-failover");
      const bySeq = new Map(audits.map((e) => [e.seq as number, e.result as string]));
      expect([...bySeq.values()].sort()).toEqual(["accepted", "duplicate"]);
      expect(probes).toBeGreaterThan(20);

      // B dies outright: the list wraps round to A
      const switches = pod.uplink.stats().brokerSwitches;
      await b.kill("SIGKILL");
      await waitFor(() => pod.uplink.stats().connected && pod.uplink.stats().broker === a.url, "the pod back on A", 15_000);
      expect(pod.uplink.stats().brokerSwitches).toBeGreaterThan(switches);
    } finally {
      clearInterval(probe);
      a.resume();
      await pod.stop();
      await mcA.close();
      await mcB.close().catch(() => undefined);
      await a.stop();
      await b.stop();
    }
  }, 60_000);
});
