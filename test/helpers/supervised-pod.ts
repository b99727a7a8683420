// Plants and runs of the supervised virtual pod (hil/supervised-pod.ts) that the control-quality
// tests and their bench figures share.
import type { AgentConfig } from "../../agent/config/load.js";
import { demoAgentConfig } from "../../cli/demo-config.js";
import { SupervisedPod } from "../../hil/supervised-pod.js";
import { loadSimConfig, simConfig, type SimConfig } from "../../sim/config.js";

export { SupervisedPod };

/**
 * 5 kW on 100 kW racks, with branch valves (kvMax 10) that pass well under the 5 L/min
 * loss-of-flow alarm at the rack loop's outMin: the plant the minimum-flow floor was found
 * missing on (issue 53). The test of the floor and its bench figure both run on it.
 */
export const lightlyLoadedPlant = (): SimConfig => simConfig({ plant: { rackRatedKw: 100, primarySupplyTempC: 25, valve: { kvMax: 10 }, load: { profile: "idle", pct: 5 } } });

/**
 * The demo pod with every rack at 90 % of 120 kW, then the facility's supply stepped 32 -> 42 °C
 * and the CDU's supply with it (33.9 -> about 43 °C): at 175 L/min fully open, 108 kW returns at
 * 52.7 °C. With the racks' maxFlowLpm declared (the demo's), the coolant bounds their caps;
 * without, it does not. The test of coolant-aware allocation and its bench figure run on it.
 */
export function supplyRise(declared: boolean): { pod: SupervisedPod; before: { caps: number[]; coolantAlarm: unknown }; hottestC: number; lowestCapKw: number } {
  const c = demoAgentConfig();
  if (!declared) for (const r of c.racks) r.maxFlowLpm = undefined;
  const pod = new SupervisedPod(simConfig({ plant: { load: { profile: "idle", pct: 90 } } }), c);
  pod.run(120);
  const before = { caps: [...pod.vp.decisions.powerCapsKw], coolantAlarm: pod.supervisor.alarms.get("power:coolant") };
  pod.vp.sim.inject({ primarySupplyTempC: 42 });
  let hottestC = 0;
  let lowestCapKw = Infinity;
  pod.run(360, () => {
    hottestC = Math.max(hottestC, ...pod.vp.sim.plant.racks.map((r) => r.returnTempC));
    lowestCapKw = Math.min(lowestCapKw, ...pod.vp.decisions.powerCapsKw);
  });
  return { pod, before, hottestC, lowestCapKw };
}

export interface PumpTripResult {
  /** plant ms from the trip to the standby turning, or null: none did */
  standbyMs: number | null;
  /** plant ms from the trip to dp back within 5 kPa of where it was, or null: it never was (60 s) */
  dpBackMs: number | null;
  dpBeforeKpa: number;
  lowestDpKpa: number;
  lowestFlowLpm: number;
  pod: SupervisedPod;
}

/**
 * The demo pod at 60 % load for 60 s, then its lead pump (pump 1) tripped, for 60 s. With
 * `standby` false the CDU has pump 1 alone (cdu.outputs, no cdu.pumps): the baseline the
 * lead/lag duty is judged against.
 */
export function pumpTrip(standby: boolean): PumpTripResult {
  const c = demoAgentConfig(
    standby
      ? undefined
      : (d) => {
          d.cdu = { points: { dpKpa: "cdu.dpKpa", supplyTempC: "cdu.supplyTempC" }, outputs: { pumpSpeed: "cdu.pumpSpeedCommandPct", pumpEnable: "cdu.pumpEnable", failPumpSpeed: "cdu.failSpeedPct" } };
        },
  );
  const pod = new SupervisedPod(simConfig({ plant: { load: { profile: "idle", pct: 60 } } }), c);
  pod.run(60);
  const cdu = () => pod.vp.sim.plant.cdu;
  const dpBeforeKpa = cdu().dpKpa;
  pod.vp.sim.inject({ pumpTrip: true, pump: 1 });
  const t0 = pod.vp.timeMs;
  const r: PumpTripResult = { standbyMs: null, dpBackMs: null, dpBeforeKpa, lowestDpKpa: Infinity, lowestFlowLpm: Infinity, pod };
  pod.run(60, () => {
    const t = pod.vp.timeMs - t0;
    if (r.standbyMs === null && cdu().pumps.slice(1).some((m) => m.speedPct > 1)) r.standbyMs = t;
    if (r.standbyMs !== null && r.dpBackMs === null && cdu().dpKpa > dpBeforeKpa - 5) r.dpBackMs = t;
    r.lowestDpKpa = Math.min(r.lowestDpKpa, cdu().dpKpa);
    r.lowestFlowLpm = Math.min(r.lowestFlowLpm, ...pod.vp.sim.plant.racks.map((x) => x.flowLpm));
  });
  return r;
}

/** The alarm timers and deadbands at zero: the baseline the demo's alarm hygiene is judged against. */
export function zeroHygiene(c: AgentConfig): void {
  const s = c.supervisor;
  s.alarmClearDwellMs = 0;
  s.lossOfFlow.deadbandLpm = 0;
  s.heatBalance.steadyC = 50;
  s.heatBalance.dwellMs = 0;
  s.powerBudget.alarmAfterMs = 0;
  s.powerBudget.alarmHoldMs = 0;
  s.overTemp.hysteresisC = 0;
}

/**
 * The demo pod (configs/demo-pod.yaml on configs/sim-pod.yaml's varied loads) with its
 * supervisor for `seconds`: how often each alarm was raised, and the alarms' own count of the
 * chattering ones. `patch` changes the agent config first (a baseline without the hygiene).
 */
export function demoAlarms(seconds: number, patch?: (c: AgentConfig) => void): { raises: Map<string, number>; firstRaiseMs: number | null; chattering: number } {
  const c = demoAgentConfig();
  patch?.(c);
  const pod = new SupervisedPod(loadSimConfig("configs/sim-pod.yaml"), c);
  let firstRaiseMs: number | null = null;
  pod.run(seconds, () => {
    if (firstRaiseMs === null && pod.events.some((e) => e.type === "alarm.raised")) firstRaiseMs = pod.vp.timeMs;
  });
  const raises = new Map<string, number>();
  for (const id of pod.raised()) raises.set(id, (raises.get(id) ?? 0) + 1);
  return { raises, firstRaiseMs, chattering: pod.supervisor.alarms.stats().chattering.length };
}
