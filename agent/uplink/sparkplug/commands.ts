// NCMD and DCMD: what a Sparkplug host may ask of the pod. Sparkplug commands carry no signature,
// and no unsigned path may move an actuator, so by default the only command taken is the one the
// specification requires of every edge node, Node Control/Rebirth (§5.17). A write to any other
// metric is refused and audited. An operator may opt named loops in
// (uplink.sparkplug.writableSetpoints): a DCMD may then write those loops' setpoints, through
// the same command executor and envelope as a signed command, and only for a lease.
import type { AuditRecord, PodCommands } from "../../pod-api.js";
import type { DeviceDef, SparkplugModel } from "./metrics.js";
import { decodePayload, type UMetric } from "./payload.js";
import type { SparkplugConfig } from "./schema.js";

/** A command with more metrics than this is refused whole, unread past the count. */
export const MAX_COMMAND_METRICS = 64;
const REBIRTH = "Node Control/Rebirth";

export interface CommandCounts {
  rebirths: number;
  accepted: number;
  refused: number;
  /** messages over maxCommandsPerS, dropped unread */
  dropped: number;
}

/** The sender's text in the audit trail: bounded, whatever it sent. */
const clip = (s: string): string => (s.length > 100 ? `${s.slice(0, 100)}…` : s);

export class SparkplugCommands {
  readonly counts: CommandCounts = { rebirths: 0, accepted: 0, refused: 0, dropped: 0 };
  private intake: number;
  private droppedSinceSummary = 0;
  private readonly writable: ReadonlySet<string>;

  constructor(
    private readonly pod: () => PodCommands,
    private readonly model: SparkplugModel,
    private readonly c: SparkplugConfig,
    private readonly maxBytes: number,
    private readonly rebirth: () => void,
  ) {
    this.intake = c.maxCommandsPerS;
    this.writable = new Set(c.writableSetpoints);
  }

  /** Once a second: the intake refills, and what was dropped is audited as one record. */
  refill(): void {
    this.intake = this.c.maxCommandsPerS;
    if (this.droppedSinceSummary > 0) {
      this.audit({ action: "sparkplug-command", by: "sparkplug", result: "dropped", reason: `NCMD/DCMD beyond ${this.c.maxCommandsPerS} a second, dropped unread`, suppressed: this.droppedSinceSummary });
      this.droppedSinceSummary = 0;
    }
  }

  /** One NCMD (device null) or DCMD message, as it came off the wire. */
  async handle(device: string | null, payload: Buffer): Promise<void> {
    // the rate and the size first: nothing over either is decoded
    if (this.intake <= 0) {
      this.counts.dropped++;
      this.droppedSinceSummary++;
      return;
    }
    this.intake--;
    const verb = device === null ? "NCMD" : "DCMD";
    if (payload.length > this.maxBytes) return this.refuse(verb, device, `payload of ${payload.length} bytes is over maxPacketBytes (${this.maxBytes})`);
    let metrics: UMetric[];
    try {
      metrics = decodePayload(payload).metrics ?? [];
    } catch (err) {
      return this.refuse(verb, device, `not a Sparkplug B payload: ${clip((err as Error).message)}`);
    }
    if (metrics.length > MAX_COMMAND_METRICS) return this.refuse(verb, device, `${metrics.length} metrics in one command; at most ${MAX_COMMAND_METRICS}`);
    if (device === null) return this.node(metrics);
    const d = this.model.devices.find((x) => x.id === device);
    if (d === undefined) return this.refuse(verb, device, `no device "${clip(device)}"`);
    for (const m of metrics) await this.write(d, m);
  }

  private node(metrics: UMetric[]): void {
    const others: string[] = [];
    let rebirth = false;
    for (const m of metrics) {
      if (m.name === REBIRTH && m.value === true) rebirth = true;
      else others.push(clip(String(m.name ?? `alias ${String(m.alias)}`)));
    }
    if (rebirth) {
      this.counts.rebirths++;
      this.audit({ action: "sparkplug-rebirth", by: "sparkplug", result: "accepted" });
      this.rebirth();
    }
    if (others.length > 0) this.refuse("NCMD", null, `only ${REBIRTH} (true) is taken; refused: ${others.slice(0, 8).join(", ")}${others.length > 8 ? ", …" : ""}`);
  }

  private async write(d: DeviceDef, m: UMetric): Promise<void> {
    const def = d.metrics.find((x) => (m.name !== undefined && m.name !== null ? x.name === m.name : x.alias === Number(m.alias)));
    const what = clip(String(m.name ?? `alias ${String(m.alias)}`));
    if (def === undefined) return this.refuse("DCMD", d.id, `no metric "${what}"`);
    const loop = def.setpointLoop;
    if (loop === undefined || !this.writable.has(loop)) return this.refuse("DCMD", d.id, `"${def.name}" is not writable: Sparkplug commands are unsigned (uplink.sparkplug.writableSetpoints opts a loop's setpoint in)`);
    if (typeof m.value !== "number" || !Number.isFinite(m.value)) return this.refuse("DCMD", d.id, `"${def.name}" needs a finite number`);
    const outcome = await this.pod().execute({ command: "setpoint", params: { loop, value: m.value, leaseS: this.c.writeLeaseS } }, "sparkplug");
    const rack = d.id === "CDU" ? {} : { rack: d.id };
    if (outcome.status === "ok") {
      this.counts.accepted++;
      this.audit({ action: "setpoint", ...rack, by: "sparkplug", result: "accepted", reason: `DCMD ${def.name} = ${m.value} for ${this.c.writeLeaseS} s` });
    } else {
      this.counts.refused++;
      this.audit({ action: "setpoint", ...rack, by: "sparkplug", result: outcome.code, reason: outcome.reason });
    }
  }

  private refuse(verb: "NCMD" | "DCMD", device: string | null, reason: string): void {
    this.counts.refused++;
    this.audit({ action: `sparkplug-${verb.toLowerCase()}`, ...(device === null || device === "CDU" ? {} : { rack: clip(device) }), by: "sparkplug", result: "refused", reason });
  }

  private audit(a: AuditRecord): void {
    this.pod().audit(a);
  }
}
