// A subscription the pod cannot do without (its command requests): asked again, with a backoff,
// until the broker grants it. A broker may refuse one without closing the connection (a NATS
// cluster whose JetStream is still recovering after a restart; an ACL that denies it until it
// is fixed and reloaded), and mqtt.js does not ask again: the pod stayed connected and deaf to
// every command until its next reconnect (fleet-cluster test, twice on 2026-12-06).
import type { MqttClient } from "mqtt";
import { Backoff } from "../../lib/backoff.js";

export interface SubscribeOutcome {
  attempt: number;
  /** why it was refused: the client's error, or the granted code (128 and up) */
  why: string;
}

/**
 * Subscribes `topic` on `client`; calls `granted` once the broker grants it, and `refused` each
 * time it does not. It is then asked again after the shared backoff (lib/backoff.ts: 250 ms
 * doubling to 5 s, with jitter, so a fleet refused by one restarted cluster does not ask again
 * in step). Returns a cancel:
 * the caller's on a close or a stop (a closed client's callbacks are ignored anyway).
 */
export function subscribeUntilGranted(client: MqttClient, topic: string, qos: 0 | 1, granted: () => void, refused: (o: SubscribeOutcome) => void): () => void {
  let timer: NodeJS.Timeout | null = null;
  let cancelled = false;
  const backoff = new Backoff({ baseMs: 250, maxMs: 5000 });
  const ask = (): void => {
    timer = null;
    client.subscribe(topic, { qos }, (err, grants) => {
      if (cancelled || !client.connected) return;
      const denied = (grants ?? []).find((g) => g.qos >= 128);
      if ((err === null || err === undefined) && denied === undefined) return granted();
      refused({ attempt: backoff.attempts, why: err?.message ?? `granted code ${denied?.qos ?? "?"}` });
      timer = setTimeout(ask, backoff.next());
    });
  };
  ask();
  return () => {
    cancelled = true;
    if (timer !== null) clearTimeout(timer);
  };
}
