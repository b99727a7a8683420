// `podwarden sparkplug-watch`: a Sparkplug B decoder for a terminal. Subscribes to one group's
// (or one edge node's) messages and prints each as a line: verb, edge node/device, seq, and its
// metrics (name, or the name its alias was born with, = value, quality when not good, H when
// historical). Decoded with Eclipse Tahu's library, as a SCADA host would. Started mid-session,
// it has seen no birth: on meeting an alias it does not know, it asks that edge node for a
// rebirth (NCMD Node Control/Rebirth, §5.17), at most once per node every REBIRTH_ASK_MS.
import mqtt from "mqtt";
import { decodePayload, encodePayload, longToNumber, metricQuality, SPARKPLUG_QUALITY, type UMetric } from "../agent/uplink/sparkplug/payload.js";

/** How often one edge node is asked for a rebirth, at most: a node may fold requests for 2 s (uplink.sparkplug.rebirthMinMs). */
export const REBIRTH_ASK_MS = 5000;

export interface WatchOptions {
  url: string;
  group: string;
  /** one edge node, or every node of the group */
  node?: string;
  out: NodeJS.WritableStream;
  /** stop after this many messages (tests); forever without */
  max?: number;
  /** stop when it aborts (tests); SIGINT and SIGTERM stop it too */
  signal?: AbortSignal;
}

const unit = (m: UMetric): string => {
  const u = (m.properties as Record<string, { value?: unknown } | undefined> | undefined)?.engUnit?.value;
  return typeof u === "string" ? ` ${u}` : "";
};

const show = (v: unknown): string => {
  if (v === null || v === undefined) return "null";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(3);
  if (typeof v === "object") return "toNumber" in v ? String(longToNumber(v)) : JSON.stringify(v);
  return typeof v === "string" ? JSON.stringify(v) : typeof v === "boolean" || typeof v === "bigint" ? String(v) : "?";
};

/** Runs until the broker connection ends or max messages are printed; resolves with the count. */
export async function sparkplugWatch(o: WatchOptions): Promise<number> {
  const client = mqtt.connect(o.url, { clientId: `podwarden-watch-${process.pid}`, clean: true, reconnectPeriod: 1000 });
  const node = o.node ?? "+";
  const names = new Map<string, string>(); // "<node>/<device>/<alias>" -> name
  const asked = new Map<string, number>(); // edge node -> when it was last asked for a rebirth
  const askRebirth = (edge: string): boolean => {
    const now = Date.now();
    if (now - (asked.get(edge) ?? -Infinity) < REBIRTH_ASK_MS) return false;
    asked.set(edge, now);
    const body = encodePayload({ timestamp: now, metrics: [{ name: "Node Control/Rebirth", type: "Boolean", value: true, timestamp: now }] });
    client.publish(`spBv1.0/${o.group}/NCMD/${edge}`, Buffer.from(body.buffer, body.byteOffset, body.byteLength), { qos: 0 });
    return true;
  };
  let n = 0;
  return await new Promise<number>((resolve) => {
    const done = (): void => {
      process.off("SIGINT", done);
      process.off("SIGTERM", done);
      o.signal?.removeEventListener("abort", done);
      client.end(true);
      resolve(n);
    };
    client.on("connect", () => void client.subscribe([`spBv1.0/${o.group}/+/${node}`, `spBv1.0/${o.group}/+/${node}/+`], { qos: 0 }));
    client.on("message", (topic, payload) => {
      const [, , verb, edge, device] = topic.split("/");
      const where = device === undefined ? edge : `${edge}/${device}`;
      let line: string;
      try {
        const p = decodePayload(payload);
        let unknown = false;
        const metric = (m: UMetric): string => {
          const key = `${where}/${show(m.alias)}`;
          if (typeof m.name === "string" && m.alias !== undefined && m.alias !== null) names.set(key, m.name);
          const known = typeof m.name === "string" ? m.name : names.get(key);
          if (known === undefined) unknown = true;
          const name = known ?? `alias ${show(m.alias)}`;
          const q = metricQuality(m);
          const quality = q === null || q === SPARKPLUG_QUALITY.good ? "" : ` (${q === SPARKPLUG_QUALITY.stale ? "STALE" : "BAD"})`;
          return `${name}=${show(m.value)}${unit(m)}${quality}${m.isHistorical === true ? " H" : ""}`;
        };
        const seq = p.seq === undefined || p.seq === null ? "" : ` seq ${show(p.seq)}`;
        line = `${verb} ${where}${seq}: ${(p.metrics ?? []).map(metric).join(", ")}`;
        if (unknown && (verb === "NDATA" || verb === "DDATA") && askRebirth(edge)) line += ` (aliases not seen born: asked ${edge} for a rebirth)`;
      } catch (err) {
        line = `${verb} ${where}: not a Sparkplug B payload (${(err as Error).message})`;
      }
      o.out.write(`${line}\n`);
      n++;
      if (o.max !== undefined && n >= o.max) done();
    });
    process.once("SIGINT", done);
    process.once("SIGTERM", done);
    if (o.signal?.aborted === true) done();
    else o.signal?.addEventListener("abort", done, { once: true });
  });
}
