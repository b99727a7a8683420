// A config pushed by mission control, on the service plane (issue #51 item 4; docs/fleet.md,
// Config pushed to a fleet). The signed command `config` carries a whole config: it is read and
// checked in a worker as a reload's file is, kept in the state directory, and answered "on trial";
// then the daemon takes it as a reload, and a health window judges it: control healthy at the
// end, every device that answered before the push answering, no Critical alarm that did not stand
// before it, and the uplink connected if it was. Passed, it is kept (it survives restarts); failed,
// or the daemon restarted before the window's end, the config that ran before is put back and
// taken, the warning config:push-reverted says why, and a `command.audit` event tells mission
// control either way. The file given with -c is never written (/etc is read-only to the daemon).
import { monoMs } from "../../lib/clock.js";
import { ConfigError, problemsInBrief } from "../../lib/config-file.js";
import type { CommandBody } from "../commands/schema.js";
import type { LoadedConfig } from "../config/load.js";
import { identityChange } from "../lifecycle.js";
import type { Logger } from "../log.js";
import type { Outcome } from "../pod-api.js";
import type { PodPlane } from "../plane/pod-plane.js";
import { HealthWindow, type Baseline } from "../release/health-window.js";
import { CANDIDATE_FILE, NO_PUSH, PREVIOUS_FILE, PUSHED_FILE, PushFiles, type LastPush, type PushRecord } from "./push-record.js";
import type { ConfigPushConfig } from "./schema.js";

export const PUSH_REVERTED_ALARM = "config:push-reverted";
const STATE_ALARM = "state:config-push";
/** How often a window samples the pod: its verdict waits for the next sample after its end. */
const SAMPLE_MS = 1000;

export interface ConfigPushHost {
  stateDir: string | undefined;
  /** the file given with -c */
  localPath: string;
  plane(): PodPlane;
  /** the running config's own settings */
  settings(): ConfigPushConfig;
  /** the uplink's connection now; null without an uplink */
  uplinkConnected(): boolean | null;
  /** reads and checks a config file in a worker, as a reload does (throws ConfigError) */
  load(path: string): Promise<LoadedConfig>;
  /** takes a checked config as a reload does; null when taken, else why it was refused */
  take(next: LoadedConfig): Promise<string | null>;
  log: Logger;
}

type ApplyParams = { action: "apply"; yaml: string; windowS?: number };

export class ConfigPush {
  private readonly files: PushFiles | null;
  private record: PushRecord = NO_PUSH;
  /** the hash of the -c file as last read */
  private localHash: string | null = null;
  private trial: { window: HealthWindow; timer: NodeJS.Timeout; uplinkBefore: boolean | null } | null = null;
  /** a revert found at the start, told once the services run */
  private toTell: LastPush | null = null;
  /** a command is being taken, or a push is on trial (from its record's save to its verdict) */
  private busy = false;
  /** problems met before the plane runs, raised once it does (tell) */
  private readonly pending: string[] = [];
  private onTrial = false;

  constructor(private readonly host: ConfigPushHost) {
    this.files = host.stateDir === undefined ? null : new PushFiles(host.stateDir);
  }

  /**
   * The config to run, given the -c file as just read: the pushed one while it rides on that file,
   * else the file. At a start, a push found on trial failed (the daemon died or was restarted in
   * its window: the config may be why), and what ran before it is put back. Throws ConfigError
   * only for the -c file's own faults; a damaged pushed config runs the -c file, with an alarm.
   */
  async choose(local: LoadedConfig, atStart: boolean, readPushed: (path: string) => LoadedConfig | Promise<LoadedConfig>): Promise<LoadedConfig> {
    this.localHash = local.hash;
    if (this.files === null) return local;
    if (atStart) {
      const got = this.files.load();
      this.record = got.record;
      if (got.problem !== undefined) this.problem(`${got.problem}: the config file given with -c runs`);
    }
    const r = this.record;
    if (r.last?.state === "trial" && !this.onTrial) {
      this.revertRecord([atStart ? "the daemon stopped before the push's health window ended (it may have died on the pushed config)" : "the push's trial was cut short"]);
      this.toTell = this.record.last;
    }
    if (this.record.running === "local") return local;
    if (this.record.localHash !== local.hash) {
      this.host.log.warn({ pushed: this.record.pushedHash, local: local.hash }, "the config file given with -c changed since the pushed config was taken over it: the file runs");
      this.endTrial();
      const cut = this.record.last?.state === "trial";
      this.record = { running: "local", localHash: null, pushedHash: null, previous: null, last: cut ? reverted(this.record.last, ["the config file given with -c was changed at the pod during the trial"]) : this.record.last };
      this.save();
      if (cut) this.toTell = this.record.last;
      return local;
    }
    try {
      const pushed = await readPushed(this.files.path(PUSHED_FILE));
      if (pushed.hash !== this.record.pushedHash) throw new Error(`it is not the config pushed (sha256 ${pushed.hash.slice(0, 12)}, not ${this.record.pushedHash?.slice(0, 12) ?? "none"})`);
      const fixed = identityChange(local.config, pushed.config);
      if (fixed !== null) throw new Error(fixed);
      return pushed;
    } catch (err) {
      const why = err instanceof ConfigError ? err.problems.join("; ") : (err as Error).message;
      this.problem(`the pushed config ${PUSHED_FILE} cannot run (${why}): the config file given with -c runs`);
      this.record = { ...this.record, running: "local", localHash: null, pushedHash: null };
      this.save();
      return local;
    }
  }

  /**
   * Once the plane runs (after the start, and after each reload's choice): what choose() met is
   * raised, and a revert found at the start is told as any other.
   */
  tell(): void {
    for (const m of this.pending.splice(0)) this.host.plane().reportProblem(STATE_ALARM, { severity: "Warning", source: "config-push", message: m, untilAcknowledged: true });
    const last = this.toTell;
    this.toTell = null;
    if (last !== null) this.tellReverted(last);
  }

  /** The daemon stops: a window still open is judged at the next start (as failed). */
  stop(): void {
    if (this.trial !== null) clearInterval(this.trial.timer);
    this.trial = null;
  }

  /** The `config` command: `{action: "status"}`, or `{action: "apply", yaml[, windowS]}`. */
  async command(body: Pick<CommandBody, "params" | "transaction">, by: string): Promise<Outcome> {
    const p = body.params as { action: "status" | "apply"; yaml?: string; windowS?: number };
    const refuse = (code: "refused" | "unavailable" | "invalid-params", reason: string): Outcome => ({ status: "rejected", code, reason });
    if (p.action === "status") return p.yaml === undefined && p.windowS === undefined ? { status: "ok", data: this.status() } : refuse("invalid-params", "status takes neither yaml nor windowS");
    if (p.yaml === undefined) return refuse("invalid-params", "apply needs yaml: the config");
    if (!this.host.settings().enabled) return refuse("refused", "this pod takes no pushed config (configPush.enabled is false)");
    if (this.files === null) return refuse("unavailable", "no state directory: a pushed config could not survive a restart");
    if (this.onTrial || this.busy) return refuse("refused", `push ${this.record.last?.id ?? ""} is on trial: one at a time`);
    this.busy = true;
    try {
      return await this.apply(this.files, body.transaction, { action: "apply", yaml: p.yaml, ...(p.windowS === undefined ? {} : { windowS: p.windowS }) }, by);
    } finally {
      this.busy = false;
    }
  }

  private async apply(files: PushFiles, id: string, p: ApplyParams, by: string): Promise<Outcome> {
    const plane = this.host.plane();
    let next: LoadedConfig;
    try {
      files.write(CANDIDATE_FILE, p.yaml);
      next = await this.host.load(files.path(CANDIDATE_FILE));
    } catch (err) {
      files.remove(CANDIDATE_FILE);
      if (err instanceof ConfigError) return { status: "rejected", code: "invalid-params", reason: `the pushed config is invalid: ${problemsInBrief(err.problems, 300)}` };
      return { status: "rejected", code: "unavailable", reason: `the pushed config could not be kept or read: ${(err as Error).message}` };
    }
    const fixed = identityChange(plane.config, next.config);
    if (fixed !== null) {
      files.remove(CANDIDATE_FILE);
      return { status: "rejected", code: "refused", reason: `${fixed}: a push cannot change the pod's identity` };
    }
    if (next.hash === plane.configHash) {
      files.remove(CANDIDATE_FILE);
      return { status: "ok", data: { state: "unchanged", hash: next.hash } };
    }
    const windowS = p.windowS ?? this.host.settings().healthWindowS;
    const baseline = this.baseline();
    const uplinkBefore = this.host.uplinkConnected();
    const r = this.record;
    const now = new Date().toISOString();
    try {
      // what runs now is kept before anything replaces it
      if (r.running === "pushed") files.keepAside();
      files.move(CANDIDATE_FILE, PUSHED_FILE);
      this.record = {
        running: "pushed",
        localHash: this.localHash,
        pushedHash: next.hash,
        previous: { source: r.running, hash: plane.configHash },
        last: { id, by: by.slice(0, 80), hash: next.hash, state: "trial", since: now, at: now, windowS, why: [] },
      };
      files.save(this.record);
      this.onTrial = true;
    } catch (err) {
      this.record = r;
      return { status: "rejected", code: "unavailable", reason: `the push could not be saved, so it is not taken: ${(err as Error).message}` };
    }
    this.host.log.warn({ id, hash: next.hash, windowS }, `pushed config taken: on trial for ${windowS} s`);
    // taken after the answer has gone: a reload that restarts the uplink would cut it off
    setImmediate(() => void this.begin(next, baseline, uplinkBefore, windowS));
    return { status: "ok", data: { state: "trial", hash: next.hash, windowS } };
  }

  private async begin(next: LoadedConfig, baseline: Baseline, uplinkBefore: boolean | null, windowS: number): Promise<void> {
    const why = await this.host.take(next);
    if (why !== null) return await this.revert([`the daemon did not take it: ${why}`]);
    const window = new HealthWindow(baseline, monoMs(), windowS * 1000, "before the push");
    const timer = setInterval(() => this.sample(), SAMPLE_MS);
    this.trial = { window, timer, uplinkBefore };
    // told once taken: after a structural change, on the uplink made for the new config
    const last = this.record.last!;
    this.host.plane().audit({ action: "config", by: last.by, result: "trial", transaction: last.id, reason: `taken, on trial for ${windowS} s` });
  }

  private sample(): void {
    const t = this.trial;
    if (t === null) return;
    const plane = this.host.plane();
    const alarms = plane.activeAlarms();
    const devices = this.devices();
    t.window.sample({
      mode: plane.mode(),
      controlHealthy: !alarms.some((a) => a.id.startsWith("control:") && a.severity === "Critical"),
      configured: devices.map((d) => d.name),
      answering: devices.filter((d) => d.ok).map((d) => d.name),
      criticals: alarms.filter((a) => a.severity === "Critical").map((a) => a.id),
    });
    const v = t.window.verdict(monoMs());
    if (v === null) return;
    const why = v.ok ? [] : [...v.why];
    if (t.uplinkBefore === true && this.host.uplinkConnected() !== true) why.push("the uplink to mission control was connected before the push and is not now");
    this.endTrial();
    if (why.length > 0) {
      void this.revert(why);
      return;
    }
    const last = this.record.last!;
    this.record = { ...this.record, previous: null, last: { ...last, state: "applied", at: new Date().toISOString() } };
    this.save();
    this.files?.remove(PREVIOUS_FILE);
    plane.resolveProblem(PUSH_REVERTED_ALARM);
    plane.audit({ action: "config", by: last.by, result: "applied", transaction: last.id, reason: `kept after a ${last.windowS} s health window` });
    this.host.log.info({ id: last.id, hash: last.hash }, "pushed config kept: its health window passed");
  }

  private endTrial(): void {
    if (this.trial !== null) clearInterval(this.trial.timer);
    this.trial = null;
    this.onTrial = false;
  }

  /** The record says what ran before runs again (and its file is back in place). */
  private revertRecord(why: string[]): void {
    const r = this.record;
    let back = r.previous ?? { source: "local" as const, hash: r.localHash ?? "" };
    try {
      if (back.source === "pushed") this.files?.move(PREVIOUS_FILE, PUSHED_FILE);
    } catch (err) {
      why.push(`the earlier pushed config could not be put back (${(err as Error).message}): the config file given with -c runs`);
      back = { source: "local", hash: "" };
    }
    const pushed = back.source === "pushed";
    this.record = { running: back.source, localHash: pushed ? r.localHash : null, pushedHash: pushed ? back.hash : null, previous: null, last: reverted(r.last, why) };
    this.save();
  }

  /** Puts back what ran before the push and takes it, then tells why. */
  private async revert(why: string[]): Promise<void> {
    this.endTrial();
    this.revertRecord(why);
    const last = this.record.last;
    const path = this.record.running === "pushed" && this.files !== null ? this.files.path(PUSHED_FILE) : null;
    try {
      // the -c file is read again as a reload reads it; a pushed one is read from its place
      const back = path === null ? null : await this.host.load(path);
      const refused = await this.host.take(back ?? (await this.host.load(this.host.localPath)));
      if (refused !== null) this.host.log.error({ refused }, "the config from before the push was not taken back");
    } catch (err) {
      this.host.log.error({ err }, "the config from before the push could not be read back");
    }
    if (last !== null) this.tellReverted(last);
  }

  private tellReverted(last: LastPush): void {
    const plane = this.host.plane();
    const why = last.why.join("; ");
    this.host.log.error({ id: last.id, hash: last.hash, why: last.why }, "pushed config put back: the config from before it runs");
    const runs = this.record.running === "pushed" ? "the config pushed before it" : "the config file given with -c";
    plane.reportProblem(PUSH_REVERTED_ALARM, { severity: "Warning", source: "config-push", message: `the config pushed as ${last.id} was put back: ${why}. The pod runs ${runs}` });
    plane.audit({ action: "config", by: last.by, result: "reverted", transaction: last.id, reason: why.slice(0, 2000) });
  }

  status(): Record<string, unknown> {
    const r = this.record;
    return { enabled: this.host.settings().enabled, running: r.running, hash: this.host.plane().configHash, localHash: this.localHash, last: r.last };
  }

  private baseline(): Baseline {
    return {
      devices: this.devices().filter((d) => d.ok).map((d) => d.name),
      criticals: this.host.plane().activeAlarms().filter((a) => a.severity === "Critical").map((a) => a.id),
    };
  }

  /** The field devices, each answering or not, as the supervisor judged them (the release window's list too). */
  private devices(): readonly { name: string; ok: boolean }[] {
    return this.host.plane().deviceHealth();
  }

  private save(): void {
    try {
      this.files?.save(this.record);
    } catch (err) {
      this.problem(`config-push.json could not be written (${(err as Error).message}): what the pod runs after a restart may not be what it runs now`);
    }
  }

  private problem(message: string): void {
    this.host.log.error(message);
    this.pending.push(message);
  }
}

/** The last push, marked put back now, and why. */
const reverted = (last: PushRecord["last"], why: string[]): PushRecord["last"] => (last === null ? null : { ...last, state: "reverted", at: new Date().toISOString(), why });
