// Mission control's own acknowledgement of the pod's events (uplink.consumerAck, docs/mqtt.md,
// docs/fleet.md): with it on, an event leaves the spool only once mission control's consumer says
// it holds every event up to its sequence number, on <base>/ack, and not on the broker's PUBACK.
//
// Why: a PUBACK says the broker took a message, not that it reached mission control. A NATS 2.9
// node acknowledges an MQTT QoS 1 publish before JetStream has stored it, and one that dies just
// then takes the message with it (test/fleet-cluster.test.ts found a few in one run in six); a
// cluster restarted before its consumer was back dropped ~200 events it had acknowledged. With a
// PUBACK as the end of the road those events were lost for good; kept until the consumer has
// them, they are sent again.
//
// - A PUBACK ends a record's flight on this connection; the record stays in the spool.
// - `{"events": n}` on <base>/ack: every event up to n is forgotten. It is bounded in size and
//   rate before it is parsed; an n past the last event the pod made is refused and counted.
// - When the oldest held event has been sent and answered by the broker, and no acknowledgement
//   has moved the mark for resendAfterS since, the held events are sent again from the oldest
//   (duplicates are the consumer's to drop, by seq), then again after twice as long, up to
//   maxResendS: a consumer gone for hours costs one resend of the backlog every maxResendS.
// - A reconnect sends every held event again anyway (the spool's rewind).
//
// The acknowledgement moves no actuator; what a forged one can do is make the pod forget events,
// which a broker can do anyway by dropping them: the topic is the broker's ACL's to guard, as the
// other topics are (docs/security.md).
import type { MqttClient } from "mqtt";
import { PerSecond } from "../../lib/per-second.js";
import type { Spool } from "./spool.js";
import { subscribeUntilGranted } from "./subscribe-until-granted.js";

export interface ConsumerAckConfig {
  enabled: boolean;
  resendAfterS: number;
  maxResendS: number;
  maxPerS: number;
}

/** The largest acknowledgement read, bytes: `{"events": 9007199254740991}` is 30 */
export const MAX_ACK_BYTES = 256;

export interface ConsumerAckStats {
  /** the consumer's mark: every event up to it is acknowledged (the spool's mark) */
  acked: number;
  /** acknowledgements taken */
  received: number;
  /** refused: not an acknowledgement, or past the last event made */
  refused: number;
  /** dropped unread: over the size or the rate */
  dropped: number;
  /** times the held events were sent again for want of an acknowledgement */
  resends: number;
}

export class ConsumerAck {
  private readonly rate: PerSecond;
  private lastProgressMs: number;
  private waitMs: number;
  /** the acknowledged mark at the last pass (due()) or acknowledgement (handle()) */
  private mark = -1;
  private readonly counts = { received: 0, refused: 0, dropped: 0, resends: 0 };

  constructor(
    private readonly spool: Spool,
    private readonly c: ConsumerAckConfig,
    private readonly warn: (o: Record<string, unknown>, msg: string) => void,
    private readonly now: () => number = () => performance.now(),
  ) {
    spool.holdForConsumer("critical");
    this.rate = new PerSecond(c.maxPerS, now);
    this.lastProgressMs = now();
    this.waitMs = c.resendAfterS * 1000;
  }

  /** A message on the ack topic. */
  handle(payload: Buffer): void {
    if (payload.length > MAX_ACK_BYTES || !this.rate.take()) {
      this.counts.dropped++;
      return;
    }
    let n: unknown;
    try {
      n = (JSON.parse(payload.toString("utf8")) as { events?: unknown } | null)?.events;
    } catch {
      n = undefined;
    }
    const before = this.spool.acked("critical");
    if (!Number.isSafeInteger(n) || (n as number) < 0 || !this.spool.ackThrough("critical", n as number)) {
      this.counts.refused++;
      // said at the first, then every hundredth: a consumer out of step says so without flooding the log
      if (this.counts.refused % 100 === 1) this.warn({ refused: this.counts.refused, last: this.spool.lastSeq().critical, said: payload.toString("utf8").slice(0, 64) }, "mission control's acknowledgement refused: not {\"events\": n} with n up to the last event made");
      return;
    }
    this.counts.received++;
    if (this.spool.acked("critical") > before) {
      this.mark = this.spool.acked("critical");
      this.progress();
    }
  }

  /** The mark moved, or nothing is held: the wait before a resend starts afresh, at its shortest. */
  private progress(): void {
    this.lastProgressMs = this.now();
    this.waitMs = this.c.resendAfterS * 1000;
  }

  /**
   * A connection was made: it sends every held event again (the spool's rewind), and the wait
   * starts afresh. Subscribes to the acknowledgements at QoS 0, as the command requests are (a
   * lost one is made good by the resend it brings about, which the consumer acknowledges again);
   * returns the subscription's cancel.
   */
  connected(client: MqttClient, topic: string): () => void {
    this.lastProgressMs = this.now();
    return subscribeUntilGranted(client, topic, 0, () => undefined, (o) => this.warn({ ...o }, "broker refused the subscription to mission control's acknowledgements: asking again"));
  }

  /**
   * Called every second while connected: true when the held events are to be sent again (the
   * caller rewinds the spool's events and pumps). The wait runs from the moment the oldest held
   * event was answered by the broker with the mark where it is, so a pod that keeps talking
   * still sends again an event lost under its later ones, and a slow link is not taken for a
   * silent consumer.
   */
  due(): boolean {
    const mark = this.spool.acked("critical");
    if (this.spool.depth().critical === 0 || mark !== this.mark) {
      this.mark = mark;
      this.progress();
      return false;
    }
    if (!this.spool.oldestDelivered("critical")) {
      this.lastProgressMs = this.now();
      return false;
    }
    if (this.now() - this.lastProgressMs < this.waitMs) return false;
    this.counts.resends++;
    this.lastProgressMs = this.now();
    this.waitMs = Math.min(this.waitMs * 2, this.c.maxResendS * 1000);
    return true;
  }

  stats(): ConsumerAckStats {
    return { acked: this.spool.acked("critical"), ...this.counts };
  }
}
