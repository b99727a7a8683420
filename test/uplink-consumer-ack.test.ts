// End-to-end delivery of the pod's events (uplink.consumerAck, issue #54): an event leaves the
// spool when mission control's consumer acknowledges it by sequence, not on the broker's PUBACK,
// so an event a broker acknowledged and then lost is sent again. The spool and the
// acknowledgement's bounds on their own; then a real pod, a real broker that acknowledges some
// events and drops them (aedes, the publish rerouted to a topic nobody reads, as a NATS node that
// dies after its PUBACK does), and the fleet watch acknowledging: with it, every event arrives;
// without it (the control run, today's PUBACK-only delivery), the dropped ones are lost.
import type { AuthorizePublishHandler, Client, PublishPacket } from "aedes";
import { rmSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { ConsumerAck, MAX_ACK_BYTES } from "../agent/uplink/consumer-ack.js";
import { Spool } from "../agent/uplink/spool.js";
import { FleetWatch } from "../fleet/watch.js";
import { startEmbeddedBroker } from "../lib/embedded-broker.js";
import { TEST_POD } from "./helpers/agent.js";
import { waitFor } from "./helpers/processes.js";
import { tempDir } from "./helpers/temp-dirs.js";
import { startUplinkPod, type UplinkPod } from "./helpers/uplink.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function spoolIn(): Spool {
  const d = tempDir("pw-ack-spool-");
  dirs.push(d);
  return new Spool({ dir: d, maxBytes: 1 << 20, segmentBytes: 4096 });
}
const event = (s: Spool): number => s.append("critical", "t/events", (seq) => JSON.stringify({ seq })).seq;
/** Sends everything the spool holds and has the broker acknowledge it (PUBACK): the ids sent. */
function sendAll(s: Spool): number[] {
  const ids: number[] = [];
  for (let t = s.take(); t !== undefined; t = s.take()) {
    ids.push(t.record.id);
    s.ack(t.cls, t.record.id);
  }
  return ids;
}

describe("the spool's events held for mission control's acknowledgement", () => {
  it("keeps each event past its PUBACK, forgets up to what mission control acknowledges, across a restart, and refuses an acknowledgement of what it never made", () => {
    const s = spoolIn();
    s.holdForConsumer("critical");
    s.open();
    for (let k = 0; k < 5; k++) event(s);
    s.append("telemetry", "t/telemetry", (seq) => JSON.stringify({ seq }));
    expect(sendAll(s)).toEqual([1, 2, 3, 4, 5, 1]);
    // the broker has them all; the events are kept, the telemetry is not
    expect(s.depth()).toEqual({ critical: 5, telemetry: 0 });
    expect(s.oldestDelivered("critical")).toBe(true);
    expect(s.ackThrough("critical", 6)).toBe(false);
    expect(s.ackThrough("critical", 3)).toBe(true);
    expect(s.depth().critical).toBe(2);
    expect(s.acked("critical")).toBe(3);
    // an older acknowledgement changes nothing
    expect(s.ackThrough("critical", 1)).toBe(true);
    expect(s.acked("critical")).toBe(3);
    // sent again from the oldest held, when asked
    expect(s.oldestDelivered("critical")).toBe(true);
    s.rewindClass("critical");
    expect(s.oldestDelivered("critical")).toBe(false);
    expect(sendAll(s)).toEqual([4, 5]);
    s.close();
    // a restart: what was not acknowledged is sent again
    const again = new Spool({ dir: dirs[0], maxBytes: 1 << 20, segmentBytes: 4096 });
    again.holdForConsumer("critical");
    expect(again.open().pending).toEqual({ critical: 2, telemetry: 0 });
    expect(sendAll(again)).toEqual([4, 5]);
    expect(again.ackThrough("critical", 5)).toBe(true);
    expect(again.depth().critical).toBe(0);
    again.close();
  });

  it("without the hold, a PUBACK forgets the event, as before", () => {
    const s = spoolIn();
    s.open();
    for (let k = 0; k < 3; k++) event(s);
    sendAll(s);
    expect(s.depth().critical).toBe(0);
    s.close();
  });
});

describe("mission control's acknowledgement, bounded before it is read", () => {
  const config = { enabled: true, resendAfterS: 10, maxResendS: 40, maxPerS: 5 };

  it("drops what is over its size or rate unread, refuses what is not {events: n} up to the last event made, and takes the rest", () => {
    const s = spoolIn();
    s.holdForConsumer("critical");
    s.open();
    for (let k = 0; k < 10; k++) event(s);
    sendAll(s);
    let t = 0;
    const warned: string[] = [];
    const a = new ConsumerAck(s, config, (_, m) => warned.push(m), () => t);
    a.handle(Buffer.from(`{"events": 2${" ".repeat(MAX_ACK_BYTES)}}`));
    expect(a.stats()).toMatchObject({ acked: 0, dropped: 1, refused: 0, received: 0 });
    for (const bad of ["{", "[]", "null", '{"events": -1}', '{"events": 1.5}', '{"events": "3"}', '{"telemetry": 3}', '{"events": 11}']) {
      t += 1000; // each in a second of its own: the rate is not what refuses them
      a.handle(Buffer.from(bad));
    }
    expect(a.stats()).toMatchObject({ acked: 0, dropped: 1, refused: 8, received: 0 });
    expect(warned).toHaveLength(1); // said once, not once per refusal
    t += 1000;
    a.handle(Buffer.from('{"events": 4}'));
    expect(a.stats()).toMatchObject({ acked: 4, received: 1 });
    // five a second: the sixth in the same second is dropped unread, valid or not
    for (let k = 5; k <= 10; k++) a.handle(Buffer.from(JSON.stringify({ events: k })));
    expect(a.stats()).toMatchObject({ acked: 8, received: 5, dropped: 3 });
    s.close();
  });

  it("asks for a resend once the oldest held event was answered by the broker resendAfterS ago with no acknowledgement since, then waits twice as long each time, up to maxResendS", () => {
    const s = spoolIn();
    s.holdForConsumer("critical");
    s.open();
    let t = 0;
    const a = new ConsumerAck(s, config, () => undefined, () => t);
    expect(a.due()).toBe(false); // nothing held
    event(s);
    event(s);
    t = 20_000;
    expect(a.due()).toBe(false); // not sent yet: a busy link, not a silent consumer
    expect(sendAll(s)).toEqual([1, 2]);
    t = 29_999;
    expect(a.due()).toBe(false);
    t = 30_000;
    expect(a.due()).toBe(true); // 10 s after it was sent
    const waits: number[] = [];
    let last = t;
    for (let k = 0; k < 4; k++) {
      s.rewindClass("critical");
      sendAll(s);
      while (!a.due()) t += 1000;
      waits.push(t - last);
      last = t;
    }
    expect(waits).toEqual([20_000, 40_000, 40_000, 40_000]);
    expect(a.stats().resends).toBe(5);
    // an acknowledgement that moves the mark starts the wait afresh, at its shortest
    a.handle(Buffer.from('{"events": 1}'));
    t += 9_000;
    expect(a.due()).toBe(false);
    t += 1_000;
    expect(a.due()).toBe(true);
    // a pod that keeps talking: new events sent after the lost one do not put off its resend (20 s now)
    for (let k = 0; k < 10; k++) {
      t += 2_000;
      event(s);
      sendAll(s);
      a.due();
    }
    expect(a.stats().resends).toBe(7);
    s.close();
  });
});

/** A broker that acknowledges the events whose seq is in `lose` the first time each comes, and delivers them nowhere. */
async function lossyBroker(lose: Set<number>): Promise<{ url: string; lost: number[]; close: () => Promise<void> }> {
  const broker = await startEmbeddedBroker(0);
  const lost: number[] = [];
  const authorize: AuthorizePublishHandler = (_client: Client | null, packet: PublishPacket, done: (err?: Error | null) => void): void => {
    if (packet.topic.endsWith("/events")) {
      const seq = (JSON.parse(packet.payload.toString()) as { seq: number }).seq;
      if (lose.delete(seq)) {
        lost.push(seq);
        packet.topic = `lost/${packet.topic}`;
      }
    }
    done(null);
  };
  broker.aedes.authorizePublish = authorize;
  return { url: broker.url, lost, close: () => broker.close() };
}

describe("end to end: a broker that acknowledges events and loses them", () => {
  async function run(consumerAck: boolean, pod: string): Promise<{ p: UplinkPod; w: FleetWatch; lost: number[]; stop: () => Promise<void> }> {
    const broker = await lossyBroker(new Set([3, 4, 5, 9]));
    let w: FleetWatch | undefined;
    let p: UplinkPod;
    try {
      w = await FleetWatch.start({ urls: [broker.url], protocolVersion: 4, ack: consumerAck, ackEveryMs: 100, baseline: "one", lossAfterMs: 600_000, clientId: `ack-watch-${pod}` });
      p = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 4, pod, uplink: { consumerAck: { enabled: consumerAck, resendAfterS: 1, maxResendS: 2 } } });
    } catch (err) {
      // what started is stopped, a failed start included
      await w?.stop();
      await broker.close();
      throw err;
    }
    for (let k = 1; k <= 12; k++) p.agent.audit({ action: "probe", by: "test", result: String(k) });
    return {
      p,
      w,
      lost: broker.lost,
      stop: async () => {
        await p.stop();
        await w.stop();
        await broker.close();
      },
    };
  }

  it("every event reaches mission control: the pod holds each until acknowledged and sends again what the broker lost", async () => {
    const pod = `${TEST_POD}-ack`;
    const { p, w, lost, stop } = await run(true, pod);
    try {
      const id = `demo/${pod}`;
      await waitFor(() => p.uplink.stats().lastSeq.critical >= 12 && p.uplink.stats().spoolDepth.critical === 0, "every event acknowledged by mission control", 30_000, 50);
      expect(lost).toEqual([3, 4, 5, 9]);
      const last = p.uplink.stats().lastSeq.critical;
      expect(w.ledger.missing(id, "events", 1000)).toEqual([]);
      expect(w.ledger.counts(id, "events")).toMatchObject({ highest: last, upTo: last, lost: 0 });
      expect(w.ledger.contiguous(id, "events")).toBe(last);
      const a = p.uplink.stats().consumerAck;
      expect(a?.acked).toBe(last);
      expect(a?.resends).toBeGreaterThanOrEqual(1);
      expect(a?.refused).toBe(0);
      expect(w.stats().acksSent).toBeGreaterThan(0);
    } finally {
      await stop();
    }
  }, 60_000);

  it("without it (a PUBACK ends the road, as before), what the broker lost is lost: the control run", async () => {
    const pod = `${TEST_POD}-noack`;
    const { p, w, stop } = await run(false, pod);
    try {
      const id = `demo/${pod}`;
      await waitFor(() => p.uplink.stats().lastSeq.critical >= 12 && p.uplink.stats().spoolDepth.critical === 0 && w.ledger.counts(id, "events").highest >= p.uplink.stats().lastSeq.critical, "every event sent", 30_000, 50);
      expect(w.ledger.missing(id, "events", 1000)).toEqual([3, 4, 5, 9]);
      expect(p.uplink.stats().consumerAck).toBeUndefined();
    } finally {
      await stop();
    }
  }, 60_000);

  it("holds the events while no consumer acknowledges them, and lets them go once one does", async () => {
    const pod = `${TEST_POD}-hold`;
    const broker = await lossyBroker(new Set());
    const p = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 4, pod, uplink: { consumerAck: { enabled: true, resendAfterS: 1, maxResendS: 1 } } }).catch(async (err: unknown) => {
      await broker.close();
      throw err;
    });
    let w: FleetWatch | undefined;
    try {
      for (let k = 1; k <= 5; k++) p.agent.audit({ action: "probe", by: "test", result: String(k) });
      await waitFor(() => p.uplink.stats().lastSeq.critical >= 5 && p.uplink.stats().inflight === 0, "the events sent and acknowledged by the broker", 30_000, 50);
      const held = p.uplink.stats().spoolDepth.critical;
      expect(held).toBe(p.uplink.stats().lastSeq.critical);
      // sent again while no one acknowledges (resendAfterS 1, then every second)
      await waitFor(() => (p.uplink.stats().consumerAck?.resends ?? 0) >= 2, "the held events sent again", 15_000, 50);
      expect(p.uplink.stats().spoolDepth.critical).toBeGreaterThanOrEqual(held);
      // a watch that meets the pod now (counting from the first number it meets, the CLI's default),
      // while the pod talks on: its live events may come before the held ones it sends again, and
      // the watch counts from the pod's acknowledged mark that each event carries, not from them
      w = await FleetWatch.start({ urls: [broker.url], protocolVersion: 4, ack: true, ackEveryMs: 100, lossAfterMs: 600_000, clientId: `ack-watch-${pod}` });
      for (let k = 6; k <= 8; k++) p.agent.audit({ action: "probe", by: "test", result: String(k) });
      await waitFor(() => p.uplink.stats().spoolDepth.critical === 0, "the events let go once acknowledged", 30_000, 50);
      const id = `demo/${pod}`;
      const last = p.uplink.stats().lastSeq.critical;
      expect(w.ledger.missing(id, "events", 1000)).toEqual([]);
      expect(w.ledger.counts(id, "events")).toMatchObject({ upTo: last, lost: 0 });
      // every event from the first: none forgotten by the pod that the watch did not take
      expect(w.ledger.counts(id, "events").received).toBe(last);
    } finally {
      await p.stop();
      await w?.stop();
      await broker.close();
    }
  }, 60_000);
});
