// The sensor gateway of a real-time scenario with `mqttSensors`: it stands where a site's MQTT
// gateway stands between a sensor and the pod. Every GATEWAY_PERIOD_MS it publishes each rack's
// return temperature, as the rig's truth has it, to hil/sensors/<rack>/returnTempC on the
// runner's broker, as {"v": °C, "t": epoch ms}: the daemon's MQTT ingest (its `mqttIngest`, which
// the CLI points there) reads it as that rack's loop PV, dated by `t`. A `gateway` step faults
// it the ways the fault catalogue names for MQTT sensors (docs/safety.md): a dead sensor, the
// broker's retained copy of a dead sensor, a gateway flushing its queue after an outage.
import mqtt, { type MqttClient } from "mqtt";
import type { GatewayAction } from "./scenario.js";

/** How often the gateway publishes a live reading: four readings inside the ingest's staleness. */
export const GATEWAY_PERIOD_MS = 250;
/** The ingest point's staleness (its `staleMs`): a reading older than this is stale at once. */
export const SENSOR_STALE_MS = 2000;
/** How old the retained copy a `retain-old` step leaves is: a sensor dead for a minute. */
export const RETAINED_AGE_MS = 60_000;
/**
 * A `flush` publishes the readings of an outage this long, one a second, each dated when it was
 * taken, the outage having ended FLUSH_ENDED_S ago: every one older than SENSOR_STALE_MS, so what
 * is judged is that none is taken as fresh (a queue's last readings can be fresh, and are then
 * rightly used: that is not the fault)
 */
export const FLUSH_SPAN_S = 30;
export const FLUSH_ENDED_S = 4;

export const sensorTopic = (rack: string): string => `hil/sensors/${rack}/returnTempC`;

/** The daemon's `mqttIngest` point a rack's MQTT return temperature is, by id. */
export const sensorPointId = (rack: string): string => `${rack}.returnTempMqtt`;

/** The daemon's `mqttIngest` section for these racks' sensors, on the broker at `url`. */
export function sensorIngestConfig(url: string, racks: readonly string[]): Record<string, unknown> {
  return {
    url,
    // aedes speaks MQTT 3.1.1; a silent broker is given up within 3 s, as the uplink's is
    protocolVersion: 4,
    keepaliveS: 2,
    connectTimeoutMs: 1000,
    points: racks.map((r) => ({ id: sensorPointId(r), topic: sensorTopic(r), path: "v", timePath: "t", timeUnit: "ms", staleMs: SENSOR_STALE_MS, unit: "°C" })),
  };
}

export interface SensorGateway {
  /** a `gateway` step; resolves to what it did, in words */
  act(action: GatewayAction): Promise<string>;
  /** clears what it left retained, and disconnects */
  stop(): Promise<void>;
}

/**
 * Starts publishing at once. `read` gives each rack's return temperature now (the rig's truth),
 * or undefined when the truth did not answer: the gateway then publishes nothing, as a gateway
 * whose sensor does not answer.
 */
export async function startSensorGateway(o: { url: string; racks: readonly string[]; read: () => Promise<ReadonlyMap<string, number> | undefined> }): Promise<SensorGateway> {
  const client: MqttClient = await mqtt.connectAsync(o.url, { clientId: `podwarden-hil-sensor-gateway-${process.pid}`, clean: true, protocolVersion: 4, reconnectPeriod: 100, connectTimeout: 2000, keepalive: 5 });
  client.on("error", () => undefined); // a broker step takes the broker away: the client reconnects
  let live = true;
  let last = new Map<string, number>();
  const publish = (rack: string, v: number, t: number, retain = false): Promise<unknown> => client.publishAsync(sensorTopic(rack), JSON.stringify({ v, t }), { qos: 0, retain });
  let busy = false;
  const timer = setInterval(() => {
    if (!live || busy || !client.connected) return;
    busy = true;
    void o
      .read()
      .then(async (now) => {
        if (now === undefined || !live) return;
        last = new Map(now);
        const t = Date.now();
        await Promise.all(o.racks.flatMap((r) => (now.has(r) ? [publish(r, now.get(r) as number, t)] : [])));
      })
      .catch(() => undefined)
      .finally(() => (busy = false));
  }, GATEWAY_PERIOD_MS);
  const value = (r: string): number => last.get(r) ?? 45;
  return {
    act: async (action) => {
      if (action === "silent" || action === "live") {
        live = action === "live";
        return live ? "publishing live readings" : "silent";
      }
      const t = Date.now();
      if (action === "retain-old") {
        await Promise.all(o.racks.map((r) => publish(r, value(r), t - RETAINED_AGE_MS, true)));
        return `a retained reading dated ${RETAINED_AGE_MS / 1000} s ago left on ${o.racks.map(sensorTopic).join(", ")}`;
      }
      // flush: the queue of an outage, oldest first, back to back
      const newest = FLUSH_ENDED_S;
      const oldest = FLUSH_ENDED_S + FLUSH_SPAN_S - 1;
      for (let k = oldest; k >= newest; k--) await Promise.all(o.racks.map((r) => publish(r, value(r), t - k * 1000)));
      return `${FLUSH_SPAN_S} queued readings per sensor flushed, dated ${oldest} s to ${newest} s ago`;
    },
    stop: async () => {
      clearInterval(timer);
      // an empty retained message clears the retained copy
      if (client.connected) await Promise.all(o.racks.map((r) => client.publishAsync(sensorTopic(r), "", { qos: 0, retain: true }))).catch(() => undefined);
      await client.endAsync(true);
    },
  };
}
