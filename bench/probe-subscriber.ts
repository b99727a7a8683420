// A subscriber in its own process, as mission control would be: receives the latency probes the
// uplink benchmark publishes and prints, once it has `count`, their latencies as JSON. Times are
// wall-clock with microsecond resolution (performance.timeOrigin + performance.now()), which two
// processes on one machine share.
//   node dist/bench/probe-subscriber.js <url> <topic> <protocolVersion> <count>
import mqtt from "mqtt";

const [url, topic, version, countText] = process.argv.slice(2);
const count = Number(countText);
const client = await mqtt.connectAsync(url, { protocolVersion: version === "4" ? 4 : 5, clientId: `bench-probe-${process.pid}` });
(client.stream as { setNoDelay?: (b: boolean) => void }).setNoDelay?.(true);
const latencies: number[] = [];
client.on("message", (_t, payload) => {
  const now = performance.timeOrigin + performance.now();
  const e = JSON.parse(payload.toString()) as { action?: string; result?: string };
  if (e.action !== "bench-latency") return;
  latencies.push(now - Number(e.result));
  if (latencies.length === count) {
    process.stdout.write(`${JSON.stringify(latencies)}\n`);
    void client.endAsync(true).then(() => process.exit(0));
  }
});
await client.subscribeAsync(topic, { qos: 1 });
process.stdout.write("ready\n");
