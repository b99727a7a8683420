// `podwarden keygen` and `podwarden command`: the operator's side of signed commands.
import { chmodSync, writeFileSync } from "node:fs";
import { readTextBounded } from "../../lib/bounded-read.js";
import { join } from "node:path";
import mqtt from "mqtt";
import { signedCommand, commandBody, parseParams } from "./client.js";
import { isCommandName } from "./schema.js";
import { generateCommandKey, parsePrivateKey } from "./signing.js";

export function keygen(outDir: string, keyId: string): string[] {
  const k = generateCommandKey();
  const priv = join(outDir, `${keyId}.key`);
  const pub = join(outDir, `${keyId}.pub`);
  writeFileSync(priv, k.privatePem, { mode: 0o600 });
  chmodSync(priv, 0o600);
  writeFileSync(pub, k.publicPem);
  return [
    `private key: ${priv} (keep it with mission control; never on the pod)`,
    `public key:  ${pub}`,
    "",
    "add to the pod's config under uplink.commands.keys:",
    `  - { id: ${keyId}, roles: [operator], publicKey: "${k.publicRaw}" }`,
  ];
}

export interface SendOptions {
  url: string;
  site: string;
  pod: string;
  command: string;
  params: string;
  keyFile: string;
  keyId: string;
  seq?: number;
  ttlS: number;
  protocolVersion: 4 | 5;
  timeoutMs: number;
  username?: string;
  password?: string;
}

/** Signs and publishes one command, then waits for its response; resolves with the response. */
export async function sendCommand(o: SendOptions): Promise<Record<string, unknown>> {
  if (!isCommandName(o.command)) throw new Error(`no command "${o.command}"`);
  const params = parseParams(o.params);
  const privateKey = parsePrivateKey(readTextBounded(o.keyFile));
  // milliseconds since the epoch rise between two commands from one operator; mission-control
  // software should keep its own persisted counter per key instead
  const spec = { site: o.site, pod: o.pod, command: o.command, params, seq: o.seq ?? Date.now(), keyId: o.keyId, privateKey, ttlS: o.ttlS };
  const body = commandBody(spec);
  const base = `podwarden/${o.site}/${o.pod}/`;
  const responseTopic = `${base}response/${o.command}`;
  const client = await mqtt.connectAsync(o.url, { protocolVersion: o.protocolVersion, reconnectPeriod: 0, connectTimeout: o.timeoutMs, username: o.username, password: o.password });
  try {
    await client.subscribeAsync(responseTopic, { qos: 1 });
    const answer = new Promise<Record<string, unknown>>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no response on ${responseTopic} within ${o.timeoutMs} ms`)), o.timeoutMs);
      client.on("message", (topic, payload) => {
        if (topic !== responseTopic) return;
        try {
          const r = JSON.parse(payload.toString()) as Record<string, unknown>;
          if (r.transaction !== body.transaction) return;
          clearTimeout(t);
          resolve(r);
        } catch {
          // not ours
        }
      });
    });
    await client.publishAsync(`${base}request/${o.command}`, signedCommand(spec, body), { qos: 1 });
    return await answer;
  } finally {
    await client.endAsync();
  }
}
