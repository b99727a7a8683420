// A real clustered MQTT broker for tests and benchmarks: N nats-server processes (Debian's
// nats-server) on loopback, routed to each other as one cluster, JetStream on, and MQTT served
// by every node with its streams replicated on `replicas` nodes (docs/fleet.md says why NATS).
// A node can be killed (SIGKILL) and started again on the same ports and store, cut off from its
// peers (partition(): every route to and from it runs through a PartitionProxy, and the nodes
// advertise a dead address, so no route goes around the proxies), and the whole cluster
// restarted.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mqtt from "mqtt";
import { portOpen, stablePort } from "./free-port.js";
import { PartitionProxy } from "./partition-proxy.js";
import { stopProcess, waitFor } from "./processes.js";

export interface NatsClusterOptions {
  nodes?: number;
  /** MQTT stream and consumer replicas (odd, at most the node count) */
  replicas?: number;
  /**
   * Routes through a PartitionProxy each, so partition() can cut them (default true). A bench
   * that measures the cluster routes directly: the proxies run in the caller's process, and
   * every replicated message would cross it.
   */
  partitionable?: boolean;
  /** JetStream file store per node (default "512M"): a bench's thousand pods need more */
  maxFile?: string;
}

interface Node {
  name: string;
  client: number;
  route: number;
  mqtt: number;
  conf: string;
  child: ChildProcess | null;
  log: string;
}

export class NatsCluster {
  /** the route from node a to node b runs through links[a][b] (null on the diagonal) */
  private readonly links: (PartitionProxy | null)[][];

  private constructor(
    private readonly dir: string,
    private readonly nodes: Node[],
    private readonly replicas: number,
    partitionable: boolean,
    private readonly maxFile: string,
  ) {
    this.links = nodes.map((_, a) => nodes.map((m, b) => (a === b || !partitionable ? null : new PartitionProxy(m.route))));
  }

  static async start(o: NatsClusterOptions = {}): Promise<NatsCluster> {
    const n = o.nodes ?? 3;
    const dir = mkdtempSync(join(tmpdir(), "pw-nats-"));
    const nodes: Node[] = [];
    for (let i = 0; i < n; i++) nodes.push({ name: `n${i + 1}`, client: await stablePort(), route: await stablePort(), mqtt: await stablePort(), conf: join(dir, `n${i + 1}.conf`), child: null, log: "" });
    const c = new NatsCluster(dir, nodes, o.replicas ?? Math.min(3, n), o.partitionable ?? true, o.maxFile ?? "512M");
    for (const p of c.links.flat()) await p?.listen();
    for (let i = 0; i < n; i++) c.writeConf(i);
    try {
      await Promise.all(nodes.map((_, i) => c.launch(i)));
      await c.ready();
    } catch (err) {
      await c.stop();
      throw err;
    }
    return c;
  }

  /** The MQTT URL of node i. */
  url(i: number): string {
    return `mqtt://127.0.0.1:${this.node(i).mqtt}`;
  }

  get urls(): string[] {
    return this.nodes.map((_, i) => this.url(i));
  }

  get size(): number {
    return this.nodes.length;
  }

  /** A node's log so far (stderr), for a failure message. */
  logOf(i: number): string {
    return this.node(i).log;
  }

  private node(i: number): Node {
    const n = this.nodes[i];
    if (n === undefined) throw new Error(`no node ${i}`);
    return n;
  }

  /** Node i's config, with its routes to every other node. */
  private writeConf(i: number): void {
    const n = this.node(i);
    const routes = this.nodes.flatMap((m, j) => {
      if (j === i) return [];
      const p = this.links[i]?.[j];
      return [`nats://127.0.0.1:${p === null || p === undefined ? m.route : p.port}`];
    });
    const lines = [
      `server_name: ${n.name}`,
      `listen: 127.0.0.1:${n.client}`,
      // small limits: a test cluster on a CI machine, not a site's
      `jetstream { store_dir: "${join(this.dir, n.name)}", max_mem: 64M, max_file: ${this.maxFile} }`,
      // pings every second: a route gone silent (a partition that drops, not resets) is found in
      // seconds, not the default two minutes
      "ping_interval: \"1s\"",
      "ping_max: 3",
      // every route is configured (a full mesh through the proxies); the address a node tells its
      // peers is a dead one (the discard port), so no peer opens an implicit route around the
      // proxies (with its real address one did, and a partition missed it)
      `cluster { name: podwarden-test, listen: 127.0.0.1:${n.route}, advertise: "127.0.0.1:9", no_advertise: true, routes: [${routes.join(", ")}] }`,
      `mqtt { listen: 127.0.0.1:${n.mqtt}, stream_replicas: ${this.replicas}, consumer_replicas: ${this.replicas}, ack_wait: "5s" }`,
    ];
    writeFileSync(n.conf, `${lines.join("\n")}\n`);
  }

  private async launch(i: number): Promise<void> {
    const n = this.node(i);
    const child = spawn("nats-server", ["-c", n.conf], { stdio: ["ignore", "ignore", "pipe"] });
    n.child = child;
    child.stderr.on("data", (d: Buffer) => {
      n.log = (n.log + d.toString()).slice(-20_000);
    });
    await waitFor(() => portOpen(n.mqtt), `nats node ${n.name} listening for MQTT`, 20_000, 50).catch((err: unknown) => {
      throw new Error(`${String(err)}\n${n.log}`);
    });
  }

  /**
   * Every live node takes a QoS 1 message through JetStream and delivers it: the meta leader is
   * elected and the MQTT streams exist (the first MQTT session creates them).
   */
  async ready(timeoutMs = 30_000): Promise<void> {
    const live = this.nodes.map((n, i) => (n.child === null ? -1 : i)).filter((i) => i >= 0);
    await waitFor(
      async () => (await Promise.all(live.map((i) => this.roundTrip(i)))).every(Boolean),
      "the NATS cluster to carry QoS 1 messages on every node",
      timeoutMs,
      250,
    ).catch((err: unknown) => {
      // what each node last said: a failed election or a stream still recovering reads there
      throw new Error(`${String(err)}\n${live.map((i) => `--- ${this.node(i).name}:\n${this.node(i).log.slice(-1500)}`).join("\n")}`);
    });
  }

  /** One QoS 1 message through node i and back, within 5 s (a node catching up with its peers can leave a SUBSCRIBE unanswered). */
  private async roundTrip(i: number): Promise<boolean> {
    const topic = `podwarden-test/ready/${i}`;
    const client = mqtt.connect(this.url(i), { protocolVersion: 4, clientId: `ready-${i}-${process.pid}`, clean: true, reconnectPeriod: 0, connectTimeout: 3000 });
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 5000)));
    const trip = (async (): Promise<boolean> => {
      await new Promise<void>((resolve, reject) => {
        client.once("connect", () => resolve());
        client.once("error", reject);
        client.once("close", () => reject(new Error("closed")));
      });
      const got = new Promise<boolean>((resolve) => client.once("message", () => resolve(true)));
      await client.subscribeAsync(topic, { qos: 1 });
      await client.publishAsync(topic, "ready", { qos: 1 });
      return got;
    })().catch(() => false);
    try {
      return await Promise.race([trip, deadline]);
    } finally {
      clearTimeout(timer);
      client.end(true);
    }
  }

  /** Cuts node i off from its peers (its routes black-holed both ways), or (heal) joins it again. Its clients keep their connections to it. */
  partition(i: number, cut = true): void {
    if (this.links.flat().every((p) => p === null)) throw new Error("this cluster was started with partitionable: false");
    this.links.forEach((row, a) =>
      row.forEach((p, b) => {
        if (p !== null && (a === i || b === i)) p.setMode(cut ? "drop" : "pass");
      }),
    );
  }

  /** Kills node i (SIGKILL by default: no goodbye to its peers or clients). */
  async kill(i: number, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const n = this.node(i);
    if (n.child === null) return;
    const c = n.child;
    n.child = null;
    c.kill("SIGCONT");
    await stopProcess(c, signal);
  }

  /** Starts node i again on its ports and store, routed to its peers, and waits until the cluster carries messages through it. */
  async restart(i: number): Promise<void> {
    await this.launch(i);
    await this.ready();
  }

  /**
   * Kills every node at once (SIGKILL by default: a site's power lost). Not SIGTERM for the
   * tests' whole-cluster outage: NATS 2.9 goes on acknowledging MQTT QoS 1 publishes while it
   * shuts down, after its JetStream has stopped storing them, and those are lost (in a loaded
   * run, 165 of 200 pods each lost the event they sent as the cluster was stopped, 2026-12-04).
   */
  async killAll(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    await Promise.all(this.nodes.map((_, i) => this.kill(i, signal)));
  }

  /**
   * Starts every node that is down, and waits until the cluster carries messages. After the whole
   * cluster was killed, JetStream recovers its streams and elects their leaders while every pod
   * reconnects at once: a loaded CI run (2026-12-05, beside the other test lane) took over the
   * 30 s a single node's return needs, hence the longer default.
   */
  async startAll(readyTimeoutMs = 90_000): Promise<void> {
    await Promise.all(this.nodes.flatMap((n, i) => (n.child === null ? [this.launch(i)] : [])));
    await this.ready(readyTimeoutMs);
  }

  /** Restarts every node at once (all down, then all up). */
  async restartAll(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    await this.killAll(signal);
    await this.startAll();
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((_, i) => this.kill(i, "SIGTERM")));
    await Promise.all(this.links.flat().flatMap((p) => (p === null ? [] : [p.close()])));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
