// The Redfish client driver: one Bmc (bmc.ts) per configured device, polling its resources into
// points, holding its EventService stream open for leak-detector events, and writing Controls
// (PATCH with If-Match, then read back). It knows nothing of racks; docs/redfish.md, The client.
import type { OutputState } from "../../lib/points.js";
import { Bmc } from "./bmc.js";
import { EventListener } from "./event-listener.js";
import type { RedfishDeviceStats, RedfishDriverOptions } from "./bmc-runtime.js";
import type { RedfishClientConfig } from "./config.js";

export type { RedfishDeviceStats, RedfishDriverOptions } from "./bmc-runtime.js";

export class RedfishDriver {
  private readonly bmcs: Bmc[];
  /** where BMCs without Server-Sent Events push their leak events (redfishClient.eventListener), or null */
  readonly listener: EventListener | null;

  constructor(
    c: RedfishClientConfig,
    private readonly o: RedfishDriverOptions,
  ) {
    this.listener = c.eventListener === undefined ? null : new EventListener(c.eventListener);
    this.bmcs = c.devices.map((d) => new Bmc(d, o, this.listener));
  }

  /** The listener first (a BMC found without a stream subscribes to it at once), then each BMC. */
  async start(): Promise<void> {
    if (this.listener !== null) this.o.onLog?.("info", `BMCs without Server-Sent Events push their leak events to ${await this.listener.listen()}/podwarden/events/<bmc>`);
    for (const b of this.bmcs) b.start();
  }

  async stop(): Promise<void> {
    // the BMCs first: each deletes its subscription while the listener still answers
    await Promise.all(this.bmcs.map((b) => b.stop()));
    await this.listener?.close();
  }

  ownsOutput(id: string): boolean {
    return this.bmcs.some((b) => b.outputs.has(id));
  }

  /** Asks for `value` (engineering units) on a Control; sent when it differs from what the BMC holds. */
  setOutput(id: string, value: number): void {
    for (const b of this.bmcs) {
      const o = b.outputs.get(id);
      if (o !== undefined) return b.setOutput(o, value);
    }
    throw new Error(`no Redfish output ${id}`);
  }

  outputState(id: string): OutputState | undefined {
    for (const b of this.bmcs) {
      const o = b.outputs.get(id);
      if (o !== undefined) return { ...o.state };
    }
    return undefined;
  }

  /** Outputs whose latest value has not been verified for longer than `graceMs`, with why. */
  unverified(nowMs: number, graceMs: number): { id: string; device: string; why: string }[] {
    const out: { id: string; device: string; why: string }[] = [];
    for (const b of this.bmcs) {
      for (const o of b.outputs.values()) {
        if (o.unverifiedSinceMs !== null && nowMs - o.unverifiedSinceMs > graceMs) out.push({ id: o.id, device: b.name, why: o.why });
      }
    }
    return out;
  }

  stats(): RedfishDeviceStats[] {
    return this.bmcs.map((b) => b.stats());
  }
}
