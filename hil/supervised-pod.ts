// The virtual pod with the daemon's supervisor beside it, in virtual time: every supervisor
// period the supervisor reads what the pod loop would hand it (agent/supervisor/inputs.ts: the
// bank's verdicts on each point, the rack and loop words, each device's health from its breaker)
// and its decisions (power caps, power-off, the pumps) go to the wiring, as the pod loop does.
// HIL scenarios in virtual time judge its alarms and events with it; the control-quality tests
// and benches judge alarms and power against the plant.
import { supervisorInputs, type ReadingSource } from "../agent/supervisor/inputs.js";
import type { SupervisorConfig } from "../agent/supervisor/schema.js";
import { Supervisor, type Reading, type SupervisorEvent, type SupervisorInputs } from "../agent/supervisor/supervisor.js";
import { qualityWords } from "../pod/status-words.js";
import { PodWiring } from "../pod/wiring.js";
import type { SimConfig } from "../sim/config.js";
import type { Scenario } from "../sim/scenario.js";
import { VirtualPod, type VirtualOptions, type VirtualPodConfig } from "../sim/virtual-pod.js";

/** A pod config the supervisor can run on: the virtual pod's, with the supervisor's section (an agent config is one). */
export type SupervisedPodConfig = VirtualPodConfig & { supervisor: SupervisorConfig };

/**
 * The alarms the supervisor raises (docs/agent.md's ids): a kind before the colon, or a fixed
 * id. Less the two on the control worker's timing: in virtual time the control is a perfect
 * clock that is never late and never stalls, so `control:overrun` and `control:stalled` say
 * nothing there. The daemon's other alarms (state files, the uplink, the recorder, the leak
 * thread, a reload's config, the features' valve, stroke and tuning alarms) have no source in
 * virtual time.
 */
const VIRTUAL_ALARM_KINDS: readonly string[] = ["leak", "isolation-failed", "flow-meter", "leak-sensor", "overtemp", "flow", "heat-balance", "no-coolant-power", "no-coolant-backstop", "no-power-output", "failsafe", "degraded", "device", "pump"];
const VIRTUAL_FIXED_ALARMS: readonly string[] = ["power:budget", "power:coolant", "pumps:unavailable"];

/** The event types the supervisor emits; the others are an operator's, a feature's or the agent's. */
export const VIRTUAL_EVENT_TYPES: readonly string[] = ["alarm.raised", "alarm.cleared", "alarm.escalated", "isolation.proven", "leak.escalated", "mode.changed", "pump.duty"];

/** Whether the supervisor in virtual time can raise alarm `id`. */
export function virtualAlarm(id: string): boolean {
  if (VIRTUAL_FIXED_ALARMS.includes(id)) return true;
  const colon = id.indexOf(":");
  return colon > 0 && VIRTUAL_ALARM_KINDS.includes(id.slice(0, colon));
}

export class SupervisedPod {
  readonly vp: VirtualPod;
  readonly supervisor: Supervisor;
  readonly events: SupervisorEvent[] = [];
  /** the alarms active now, by id: their severity (raised or escalated, until cleared) */
  readonly active = new Map<string, string>();
  private nextMs = 0;
  private readonly source: ReadingSource;

  constructor(
    sim: SimConfig,
    readonly config: SupervisedPodConfig,
    scenario?: Scenario,
    opts: Partial<VirtualOptions> = {},
  ) {
    this.vp = new VirtualPod(sim, config, scenario, opts);
    // the wall clock is virtual time from the epoch: the pumps' duty rotation starts in slot 0
    this.supervisor = new Supervisor(config.supervisor, config, this.vp.layout, (e) => this.onEvent(e), () => this.vp.timeMs, 0);
    const v = this.vp.hp.views;
    this.source = {
      reading: (point) => this.reading(point),
      manualIsolate: (r) => v.rackI.manualIsolate[r] === 1,
      noCoolant: (r) => PodWiring.noCoolant({ rackSupplyOpen: v.rackI.supplyOpen, rackReturnOpen: v.rackI.returnOpen }, r),
    };
  }

  private onEvent(e: SupervisorEvent): void {
    this.events.push(e);
    if (e.type === "alarm.raised" || e.type === "alarm.escalated") this.active.set(e.alarm.id, e.alarm.severity);
    else if (e.type === "alarm.cleared") this.active.delete(e.alarm.id);
  }

  /** Advances plant time, the supervisor evaluating every supervisor.periodMs. */
  run(seconds: number, each?: () => void): void {
    this.vp.run(seconds, () => {
      if (this.vp.timeMs >= this.nextMs) {
        this.nextMs = this.vp.timeMs + this.config.supervisor.periodMs;
        this.vp.decisions = this.supervisor.evaluate(this.inputs());
      }
      each?.();
    });
  }

  /** The ids of the alarms raised so far (each time it was raised). */
  raised(): string[] {
    return this.events.flatMap((e) => (e.type === "alarm.raised" ? [e.alarm.id] : []));
  }

  /** How many events of `type` so far. */
  count(type: string): number {
    let n = 0;
    for (const e of this.events) if (e.type === type) n++;
    return n;
  }

  /** A point's reading: the hot path's verdict on it, as the pod loop's is. */
  private reading(point: number): Reading {
    const v = this.vp.hp.views;
    const q = v.pointI.quality[point];
    return q === 0 ? { value: v.pointF.held[point], good: true } : { value: v.pointF.held[point], good: false, why: `point ${point}: ${qualityWords(q)}` };
  }

  private inputs(): SupervisorInputs {
    const v = this.vp.hp.views;
    const lay = this.vp.layout;
    const n = this.config.racks.length;
    const loops = lay.loops;
    return supervisorInputs(this.config, lay, this.source, {
      nowMs: this.vp.timeMs,
      controlHealthy: true,
      recentTicks: { ticks: 10_000, overruns: 0, spanMs: 10_000 },
      loopStatus: Array.from(v.loopI.status.subarray(0, loops)),
      loopOut: Array.from(v.loopF.out.subarray(0, loops)),
      rackState: Array.from(v.rackI.state.subarray(0, n)),
      rackStatus: Array.from(v.rackI.status.subarray(0, n)),
      wallMs: this.vp.timeMs,
      devices: this.vp.deviceHealth(),
    });
  }
}
