// A real mosquitto broker as a child process on a loopback port, for tests and benchmarks: started with a
// generated config, and stopped, killed, paused (SIGSTOP) or restarted on the same port.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, portOpen } from "./free-port.js";
import { run, stopProcess, waitFor } from "./processes.js";

export interface MosquittoOptions {
  /** extra mosquitto.conf lines (after the listener) */
  conf?: string[];
  /** lines that must come before the listener (general options) */
  general?: string[];
  /** users and passwords for a password file */
  users?: Record<string, string>;
  persistence?: boolean;
  /** a fixed port (a broker that clients were already told about); else a free one */
  port?: number;
}

export class Mosquitto {
  private child: ChildProcess | null = null;
  stderr = "";

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly confFile: string,
  ) {}

  static async start(o: MosquittoOptions = {}): Promise<Mosquitto> {
    const port = o.port ?? (await freePort());
    const dir = mkdtempSync(join(tmpdir(), "pw-mosq-"));
    const lines = [
      // running as root in CI: keep root rather than switch to a user that cannot read the temp dir
      ...(process.getuid?.() === 0 ? ["user root"] : []),
      "per_listener_settings false",
      `persistence ${o.persistence === true ? "true" : "false"}`,
      `persistence_location ${dir}/`,
      "autosave_interval 1",
      // as deploy/mosquitto/mosquitto.conf: without it the broker's own Nagle delay adds a 40 ms tail
      "set_tcp_nodelay true",
      "log_dest stderr",
      "log_type error",
      "log_type warning",
      ...(o.general ?? []),
    ];
    if (o.users !== undefined) {
      const pw = join(dir, "passwd");
      writeFileSync(pw, "");
      for (const [u, p] of Object.entries(o.users)) {
        const r = await run("mosquitto_passwd", ["-b", pw, u, p]);
        if (r.code !== 0) throw new Error(`mosquitto_passwd: ${r.stderr}`);
      }
      lines.push(`password_file ${pw}`, "allow_anonymous false");
    } else {
      lines.push("allow_anonymous true");
    }
    lines.push(`listener ${port} 127.0.0.1`, ...(o.conf ?? []));
    const confFile = join(dir, "mosquitto.conf");
    writeFileSync(confFile, `${lines.join("\n")}\n`);
    const m = new Mosquitto(port, dir, confFile);
    await m.launch();
    return m;
  }

  get url(): string {
    return `mqtt://127.0.0.1:${this.port}`;
  }

  private async launch(): Promise<void> {
    const child = spawn("mosquitto", ["-c", this.confFile], { stdio: ["ignore", "ignore", "pipe"] });
    child.stderr?.on("data", (d: Buffer) => (this.stderr += d.toString()));
    this.child = child;
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`mosquitto exited: ${this.stderr}`);
      return portOpen(this.port);
    }, "mosquitto listening", 10_000);
  }

  /** Stops the broker (SIGTERM: it saves its persistence; SIGKILL: it does not). */
  async kill(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const c = this.child;
    this.child = null;
    if (c !== null) await stopProcess(c, signal);
  }

  async restart(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    await this.kill(signal);
    await this.launch();
  }

  pause(): void {
    this.child?.kill("SIGSTOP");
  }

  resume(): void {
    this.child?.kill("SIGCONT");
  }

  async stop(): Promise<void> {
    this.resume();
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
