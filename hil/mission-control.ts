// Mission control for a real-time scenario with `uplink: true`: an MQTT broker of the runner's own
// on loopback (aedes, lib/embedded-broker.ts), which the daemon's uplink is pointed at and which a
// `broker: down|up|hang|resume` step takes away and brings back, and a client subscribed to the pod's topics
// as mission control would be, stamping what arrives with the monotonic time: the pod's `state`
// (online or not), the active alarms its retained `alarms` message last listed, and its events.
// The topics are the public contract in docs/mqtt.md; hil/ does not import the agent's code.
//
// The broker keeps its sessions and retained messages while down (a broker restarted with
// persistence), and mission control's session is persistent (clean: false, QoS 1): what the pod
// publishes once the broker is back, its spool first, reaches mission control even when the pod
// reconnects first. Nothing the pod published while the broker was gone can arrive before it.
import mqtt, { type MqttClient } from "mqtt";
import { startEmbeddedBroker, type EmbeddedBroker } from "../lib/embedded-broker.js";

/** What mission control saw, stamped with performance.now() when it arrived. */
export interface UplinkObservation {
  atMs: number;
  /** connected to the broker, and the pod's last `state` said online */
  online?: boolean;
  /** the ids of the active alarms the pod's `alarms` message listed */
  alarms?: string[];
  /** an event's type */
  event?: string;
}

export interface MissionControl {
  /** the broker's URL, for the daemon's `uplink.url` */
  url: string;
  /** the broker stops listening and drops every connection */
  down(): Promise<void>;
  /** it listens again on the same port */
  up(): Promise<void>;
  /** it hangs (SIGSTOP): connections open, nothing read or answered */
  hang(): void;
  /** it goes on (SIGCONT) */
  resume(): void;
  observations(): readonly UplinkObservation[];
  stop(): Promise<void>;
}

/** A message is read up to this size before it is parsed: a pod's alarms or event is a few kB. */
export const MAX_MESSAGE_BYTES = 256 * 1024;
/** The pod's topics mission control reads (docs/mqtt.md): podwarden/<site>/<pod>/<kind>. */
const POD_TOPIC = /^podwarden\/[^/]+\/[^/]+\/(state|alarms|events)$/;
/** A run keeps at most this many observations (a scenario's events are tens). */
const MAX_OBSERVATIONS = 100_000;

export async function startMissionControl(): Promise<MissionControl> {
  const broker: EmbeddedBroker = await startEmbeddedBroker();
  const seen: UplinkObservation[] = [];
  const note = (o: Omit<UplinkObservation, "atMs">): void => {
    if (seen.length < MAX_OBSERVATIONS) seen.push({ atMs: performance.now(), ...o });
  };
  let connected = false;
  let podOnline = false;
  let online = false;
  const onlineNow = (): void => {
    const v = connected && podOnline;
    if (v !== online) note({ online: v });
    online = v;
  };
  const client: MqttClient = mqtt.connect(broker.url, { clientId: `podwarden-hil-mission-control-${process.pid}`, clean: false, protocolVersion: 4, reconnectPeriod: 100, connectTimeout: 2000, keepalive: 5 });
  client.on("connect", () => {
    connected = true;
    onlineNow();
  });
  client.on("close", () => {
    connected = false;
    onlineNow();
  });
  // an error (a refused connection while the broker is down) is the reconnect's to retry
  client.on("error", () => undefined);
  client.on("message", (topic, payload) => {
    if (payload.length > MAX_MESSAGE_BYTES) return;
    const kind = POD_TOPIC.exec(topic)?.[1];
    if (kind === undefined) return;
    let body: unknown;
    try {
      body = JSON.parse(payload.toString("utf8"));
    } catch {
      return;
    }
    if (typeof body !== "object" || body === null) return;
    const b = body as { state?: unknown; alarms?: unknown; type?: unknown };
    if (kind === "state") {
      podOnline = b.state === "online";
      onlineNow();
    } else if (kind === "alarms" && Array.isArray(b.alarms)) {
      note({ alarms: b.alarms.map((a: unknown) => (typeof a === "object" && a !== null ? String((a as { id?: unknown }).id) : "")).filter((id) => id !== "") });
    } else if (kind === "events" && typeof b.type === "string") {
      note({ event: b.type });
    }
  });
  try {
    await new Promise<void>((resolve, reject) => {
      client.once("connect", () => resolve());
      setTimeout(() => reject(new Error(`mission control did not connect to its own broker at ${broker.url}`)), 5000).unref();
    });
    await client.subscribeAsync("podwarden/#", { qos: 1 });
  } catch (err) {
    await client.endAsync(true);
    await broker.close();
    throw err;
  }
  return {
    url: broker.url,
    down: () => broker.down(),
    up: () => broker.up(),
    hang: () => broker.hang(),
    resume: () => broker.resume(),
    observations: () => seen,
    stop: async () => {
      await client.endAsync(true);
      await broker.close();
    },
  };
}
