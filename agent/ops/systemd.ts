// systemd notify protocol: READY=1, STATUS=, STOPPING=1, RELOADING=1 and WATCHDOG=1 to
// $NOTIFY_SOCKET. Node has no AF_UNIX datagram sockets, so this runs systemd-notify (the unit
// sets NotifyAccess=all). Without $NOTIFY_SOCKET (not under systemd) it does nothing.
import { spawn } from "node:child_process";

export class SystemdNotifier {
  private timer: NodeJS.Timeout | null = null;
  private readonly socket: string | undefined;
  private readonly watchdogUsec: number;
  sent: string[] = [];

  constructor(env: NodeJS.ProcessEnv = process.env) {
    this.socket = env.NOTIFY_SOCKET;
    const pid = env.WATCHDOG_PID;
    this.watchdogUsec = pid !== undefined && Number(pid) !== process.pid ? 0 : Number(env.WATCHDOG_USEC ?? 0);
  }

  get enabled(): boolean {
    return this.socket !== undefined && this.socket !== "";
  }

  notify(...fields: string[]): void {
    if (!this.enabled) return;
    this.sent.push(fields.join("\n"));
    const child = spawn("systemd-notify", [`--pid=${process.pid}`, ...fields], { stdio: "ignore", env: { ...process.env, NOTIFY_SOCKET: this.socket } });
    child.on("error", () => undefined);
  }

  /** Sends WATCHDOG=1 every half watchdog period, but only while `healthy()` says so. */
  startWatchdog(healthy: () => boolean): void {
    if (!this.enabled || this.watchdogUsec <= 0) return;
    this.timer = setInterval(() => {
      if (healthy()) this.notify("WATCHDOG=1");
    }, this.watchdogUsec / 2000);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
