// The pod emulator (fleet/emulator.ts): it plays the session recorded from a real daemon
// (configs/fleet/demo-pod-session.json), and that session still says what today's daemon says
// (the same topics, the same telemetry keys); fifty emulated pods on a real mosquitto are seen by
// the fleet watch as pods: online, every event counted by seq with no gap, alarms on cue, signed
// commands answered (and forged or replayed ones refused), a dropped connection's Will.
import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { parsePrivateKey } from "../agent/commands/signing.js";
import { EmulatedPod } from "../fleet/emulator.js";
import { readSession, recordSession, type PodSession } from "../fleet/session.js";
import { FleetWatch } from "../fleet/watch.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { stopProcess } from "../tooling/processes.js";
import { waitFor } from "./helpers/processes.js";
import { KEYS, sharedSim, startUplinkPod } from "./helpers/uplink.js";
import { tempDir } from "./helpers/temp-dirs.js";

const SESSION = "configs/fleet/demo-pod-session.json";
const sim = sharedSim();

/** The keys of a session's periodic telemetry and of its info, sorted: what a consumer relies on. */
function shape(s: PodSession): { periodic: string[]; info: string[]; state: string[] } {
  const periodic = s.messages.find((m) => m.kind === "telemetry" && m.body.kind === "periodic");
  return { periodic: Object.keys(periodic?.body ?? {}).sort(), info: Object.keys(s.retained.info ?? {}).sort(), state: Object.keys(s.retained.state ?? {}).sort() };
}

describe("the pod emulator", () => {
  it("plays a session that still matches what a real daemon says", async () => {
    const recorded = readSession(SESSION);
    expect(recorded.messages.filter((m) => m.body.kind === "periodic").length).toBeGreaterThanOrEqual(5);
    const broker = await Mosquitto.start();
    const pod = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 5, sim: sim(), pod: "fleet-rec", uplink: { telemetryMs: 1000 } });
    try {
      const fresh = await recordSession({ url: broker.url, protocolVersion: 5, pod: "demo/fleet-rec", durationMs: 2500 });
      expect(shape(fresh)).toEqual(shape(recorded));
    } finally {
      await pod.stop();
      await broker.stop();
    }
  });

  it("runs fifty pods that the fleet watch sees as pods: online, counted, alarmed on cue, commanded, and gone by their Wills", async () => {
    const session = readSession(SESSION);
    const broker = await Mosquitto.start();
    const w = await FleetWatch.start({ urls: [broker.url], protocolVersion: 5, share: "mc", consumers: 2, baseline: "one", clientId: `emu-watch-${process.pid}`, lossAfterMs: 60_000 });
    const pods = Array.from(
      { length: 50 },
      (_, k) =>
        new EmulatedPod({
          session,
          site: "emu",
          pod: `pod-${k}`,
          brokers: [broker.url],
          protocolVersion: 5,
          keepaliveS: 2,
          reconnect: { baseMs: 100, maxMs: 1000 },
          keys: [{ id: "view", publicKey: KEYS.observer.publicRaw }],
          phaseMs: (k * session.durationMs) / 50,
        }),
    );
    try {
      for (const p of pods) p.start();
      await waitFor(() => w.stats().pods.online === 50, "fifty pods online at the watch", 20_000);
      await waitFor(() => w.stats().telemetry.received > 500, "their telemetry", 20_000);
      for (const p of pods) p.fault("alarm");
      await waitFor(() => w.stats().alarmEvents === 50, "an alarm from each", 15_000);

      // signed commands: answered by the pods addressed; a replay is refused
      const key = { keyId: "view", privateKey: parsePrivateKey(KEYS.observer.privatePem), nextSeq: () => Date.now() };
      const answers = await w.command(["emu/pod-1", "emu/pod-2", "emu/pod-3"], "snapshot", {}, key);
      expect(answers.map((a) => a.response?.status)).toEqual(["ok", "ok", "ok"]);
      const again = await w.command(["emu/pod-1"], "snapshot", {}, { ...key, nextSeq: () => 1 });
      expect(again[0].response).toMatchObject({ status: "rejected", error: { code: "replayed" } });

      // one pod's connection dropped without a goodbye: the broker publishes its Will
      pods[7].fault("disconnect");
      await waitFor(() => w.states.get("emu/pod-7")?.wills === 1, "pod-7's Will at the watch", 15_000);
      await waitFor(() => w.states.get("emu/pod-7")?.state === "online", "pod-7 back", 15_000);

      // every event and telemetry message of every pod, by seq, with no gap
      await waitFor(() => pods.every((p) => p.stats().queued === 0), "every queue drained", 15_000);
      await waitFor(() => pods.every((p) => w.ledger.counts(p.id, "events").upTo === p.stats().lastSeq.events && w.ledger.counts(p.id, "telemetry").upTo === p.stats().lastSeq.telemetry), "the watch caught up", 15_000).catch(() => undefined);
      expect(w.gaps("events")).toEqual([]);
      expect(w.gaps("telemetry")).toEqual([]);
      expect(pods.every((p) => w.ledger.counts(p.id, "events").upTo === p.stats().lastSeq.events)).toBe(true);
      expect(w.stats().malformed).toBe(0);
    } finally {
      await Promise.all(pods.map((p) => p.stop()));
      await w.stop();
      await broker.stop();
    }
  }, 90_000);

  it("runs from the CLI (podwarden fleet emulate): pods numbered from --first, faults from stdin, signed commands under --public-key, a clean stop on SIGTERM", async () => {
    const broker = await Mosquitto.start();
    const dir = tempDir("pw-emulate-");
    const pub = join(dir, "view.pub");
    writeFileSync(pub, `${KEYS.observer.publicRaw}\n`);
    const w = await FleetWatch.start({ urls: [broker.url], protocolVersion: 5, clientId: `emu-cli-${process.pid}`, baseline: "one", persistent: false });
    const child = spawn("node", ["dist/cli/podwarden.js", "fleet", "emulate", "--url", broker.url, "--site", "cli", "--count", "3", "--first", "10", "--telemetry-every", "5", "--key-id", "view", "--public-key", pub, "--keepalive", "1", "--json", "--every", "1"], { stdio: ["pipe", "pipe", "inherit"] });
    const lines: Record<string, unknown>[] = [];
    createInterface({ input: child.stdout }).on("line", (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
    try {
      await waitFor(() => w.stats().pods.online === 3, "three emulated pods online", 15_000);
      expect([...w.states.keys()].sort()).toEqual(["cli/emu-10", "cli/emu-11", "cli/emu-12"]);
      child.stdin.write("alarm all\n");
      await waitFor(() => w.stats().alarmEvents === 3, "an alarm from each", 10_000);
      child.stdin.write("disconnect 11\n");
      await waitFor(() => w.states.get("cli/emu-11")?.wills === 1, "emu-11's Will", 10_000);
      const key = { keyId: "view", privateKey: parsePrivateKey(KEYS.observer.privatePem), nextSeq: () => Date.now() };
      const answers = await w.command(["cli/emu-12"], "snapshot", {}, key);
      expect(answers[0]?.response).toMatchObject({ status: "ok", data: { emulated: true } });
      await waitFor(() => lines.some((l) => (l.commands as { answered: number }).answered === 1 && l.connected === 3), "the totals line counting it", 10_000);
      await stopProcess(child);
      expect(child.exitCode).toBe(0);
      await waitFor(() => [...w.states.values()].every((s) => s.state === "offline" && s.reason === "stopped"), "every pod stopped, not its Will", 10_000);
      expect(w.gaps("events")).toEqual([]);
    } finally {
      child.kill("SIGKILL");
      await w.stop();
      await broker.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
