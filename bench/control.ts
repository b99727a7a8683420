// Control quality in plant time: peak deviation of a 20 % -> 100 % load step, PID alone vs PID +
// feed-forward; and the minimum-flow floor on a lightly loaded pod, with the daemon's supervisor,
// beside the same pod without it; and coolant-aware power allocation as the CDU's supply warms,
// beside the same pod with no coolant bound; and a lead pump's trip, with a standby in lead/lag
// duty and without.
import { demoAgentConfig } from "../cli/demo-config.js";
import { loadWasmHotPath } from "../hotpath-as/wasm-bank.js";
import { PLANT, loadStepPeak } from "../sim/fopdt-rig.js";
import { SupervisedPod, demoAlarms, lightlyLoadedPlant, pumpTrip, supplyRise, zeroHygiene, type PumpTripResult } from "../test/helpers/supervised-pod.js";
import { fmt } from "./stats.js";

export interface MinFlowResult {
  floorLpm: number;
  lowestLpm: number;
  flowAlarms: number;
  /** plant seconds from a leak reset to the rack's power back, or null: it never came back (in 300 s) */
  powerBackS: number | null;
}

export interface ControlResult {
  pidPeakC: number;
  ffPeakC: number;
  pidFinalC: number;
  ffFinalC: number;
  minFlow: { without: MinFlowResult; with: MinFlowResult };
  coolant: { without: CoolantResult; with: CoolantResult };
  alarms: { bare: AlarmResult; clean: AlarmResult };
  pumps: { single: PumpTripResult; duty: PumpTripResult };
}

export interface AlarmResult {
  raised: number;
  mostRaisesOfOne: number;
  chattering: number;
  /** plant ms of the first raise, or null: none */
  firstRaiseMs: number | null;
}

function alarmRun(bare: boolean): AlarmResult {
  const r = demoAlarms(600, bare ? zeroHygiene : undefined);
  const counts = [...r.raises.values()];
  return { raised: counts.reduce((a, b) => a + b, 0), mostRaisesOfOne: Math.max(0, ...counts), chattering: r.chattering, firstRaiseMs: r.firstRaiseMs };
}

export interface CoolantResult {
  lowestCapKw: number;
  hottestC: number;
  overtempAlarms: number;
}

function coolantRun(declared: boolean): CoolantResult {
  const r = supplyRise(declared);
  return { lowestCapKw: r.lowestCapKw, hottestC: r.hottestC, overtempAlarms: r.pod.raised().filter((id) => id.startsWith("overtemp:")).length };
}

/** 8 racks of 100 kW at 5 kW, branch valves passing under 5 L/min at outMin: 10 min, then a leak and its reset on rack 3. */
function minFlowRun(floorLpm: number): MinFlowResult {
  const config = demoAgentConfig();
  config.control.rackLoop.minFlowLpm = floorLpm; // set after validation: check-config refuses a floor at the alarm's threshold
  const pod = new SupervisedPod(lightlyLoadedPlant(), config);
  const racks = pod.vp.sim.plant.racks;
  let lowest = Infinity;
  pod.run(60);
  pod.run(540, () => (lowest = Math.min(lowest, ...racks.map((r) => r.flowLpm))));
  const flowAlarms = pod.raised().filter((id) => id.startsWith("flow:")).length;
  pod.vp.sim.inject({ leak: "rack-3" });
  pod.run(30);
  pod.vp.sim.inject({ leak: "rack-3", state: "dry" });
  pod.run(5); // the hot path refuses a reset while a leak input still reads wet
  pod.vp.hp.views.rackI.reset[2] = 1;
  const t0 = pod.vp.timeMs;
  let backMs: number | null = null;
  pod.run(300, () => {
    if (backMs === null && racks[2].powerKw > 1) backMs = pod.vp.timeMs - t0;
  });
  return { floorLpm, lowestLpm: lowest, flowAlarms, powerBackS: backMs === null ? null : backMs / 1000 };
}

export function runControlBench(): ControlResult {
  const pid = loadStepPeak(loadWasmHotPath("release"), 0);
  const ff = loadStepPeak(loadWasmHotPath("release"), -PLANT.gainD / PLANT.gainU);
  const floor = demoAgentConfig().control.rackLoop.minFlowLpm;
  return { pidPeakC: pid.peak, ffPeakC: ff.peak, pidFinalC: pid.final, ffFinalC: ff.final, minFlow: { without: minFlowRun(0), with: minFlowRun(floor) },
    coolant: { without: coolantRun(false), with: coolantRun(true) },
    alarms: { bare: alarmRun(true), clean: alarmRun(false) },
    pumps: { single: pumpTrip(false), duty: pumpTrip(true) },
  };
}

export function printControl(r: ControlResult): void {
  console.log("\n## control: rack load step 20 kW -> 100 kW (FOPDT plant, tau 30 s, dead time 3 s, 1 kHz)");
  console.log("| controller | peak abs(return temp - setpoint), degC | error 400 s later, degC |");
  console.log("|---|---:|---:|");
  console.log(`| PID alone | ${fmt(r.pidPeakC, 3)} | ${fmt(r.pidFinalC, 4)} |`);
  console.log(`| PID + feed-forward from rack power | ${fmt(r.ffPeakC, 3)} | ${fmt(r.ffFinalC, 4)} |`);
  console.log("\n## control: minimum flow (8 x 100 kW racks at 5 kW, valves passing under 5 L/min at outMin; loss-of-flow alarm at 5 L/min; 600 s, then a leak reset on rack-3)");
  console.log("| rack loop | lowest rack flow, L/min | flow:<rack> alarms raised | rack power back after the reset, s |");
  console.log("|---|---:|---:|---:|");
  const row = (what: string, m: MinFlowResult): void => console.log(`| ${what} | ${fmt(m.lowestLpm, 2)} | ${m.flowAlarms} | ${m.powerBackS === null ? "never (300 s)" : fmt(m.powerBackS, 1)} |`);
  row("no floor (baseline)", r.minFlow.without);
  row(`minimum-flow floor ${r.minFlow.with.floorLpm} L/min`, r.minFlow.with);
  console.log("\n## control: coolant-bound allocation (8 x 120 kW racks at 108 kW, budget 900 kW; facility supply 32 -> 42 degC, 360 s; over-temperature Warning at 50 degC)");
  console.log("| power budget | lowest rack cap, kW | hottest rack return, degC | overtemp:<rack> alarms raised |");
  console.log("|---|---:|---:|---:|");
  const crow = (what: string, m: CoolantResult): void => console.log(`| ${what} | ${fmt(m.lowestCapKw, 1)} | ${fmt(m.hottestC, 1)} | ${m.overtempAlarms} |`);
  crow("electrical share only (baseline: no racks[].maxFlowLpm)", r.coolant.without);
  crow("bounded by each rack's coolant (maxFlowLpm 170, return limit 48 degC)", r.coolant.with);
  console.log("\n## control: alarm hygiene (the demo pod on configs/sim-pod.yaml's varied loads, with its supervisor, 600 s)");
  console.log("| alarms | raised | most raises of one alarm | chattering (more than 3 in 10 min) | first raise, s |");
  console.log("|---|---:|---:|---:|---:|");
  const arow = (what: string, m: AlarmResult): void =>
    console.log(`| ${what} | ${m.raised} | ${m.mostRaisesOfOne} | ${m.chattering} | ${m.firstRaiseMs === null ? "none" : fmt(m.firstRaiseMs / 1000, 1)} |`);
  arow("timers and deadbands at zero (baseline)", r.alarms.bare);
  arow("the defaults (on/off delays, deadbands, steady-state heat balance)", r.alarms.clean);
  console.log("\n## control: lead pump tripped (the demo pod at 60 % load, 60 s after the trip)");
  console.log("| CDU | a standby turning after, ms | dp back within 5 kPa after, s | lowest dp, kPa (before) | lowest rack flow, L/min | flow:/overtemp: alarms raised |");
  console.log("|---|---:|---:|---:|---:|---:|");
  const prow = (what: string, m: PumpTripResult): void => {
    const alarms = m.pod.raised().filter((id) => id.startsWith("flow:") || id.startsWith("overtemp:")).length;
    console.log(`| ${what} | ${m.standbyMs ?? "none"} | ${m.dpBackMs === null ? "never" : fmt(m.dpBackMs / 1000, 1)} | ${fmt(m.lowestDpKpa, 1)} (${fmt(m.dpBeforeKpa, 1)}) | ${fmt(m.lowestFlowLpm, 1)} | ${alarms} |`);
  };
  prow("one pump (baseline)", r.pumps.single);
  prow("two pumps in lead/lag duty (cdu.pumps)", r.pumps.duty);
}
