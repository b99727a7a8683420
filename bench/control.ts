// Control quality in plant time: peak deviation of a 20 % -> 100 % load step, PID alone vs PID + feed-forward.
import { loadWasmHotPath } from "../hotpath-as/wasm-bank.js";
import { PLANT, loadStepPeak } from "../sim/fopdt-rig.js";
import { fmt } from "./stats.js";

export interface ControlResult {
  pidPeakC: number;
  ffPeakC: number;
  pidFinalC: number;
  ffFinalC: number;
}

export function runControlBench(): ControlResult {
  const pid = loadStepPeak(loadWasmHotPath("release"), 0);
  const ff = loadStepPeak(loadWasmHotPath("release"), -PLANT.gainD / PLANT.gainU);
  return { pidPeakC: pid.peak, ffPeakC: ff.peak, pidFinalC: pid.final, ffFinalC: ff.final };
}

export function printControl(r: ControlResult): void {
  console.log("\n## control: rack load step 20 kW -> 100 kW (FOPDT plant, tau 30 s, dead time 3 s, 1 kHz)");
  console.log("| controller | peak abs(return temp - setpoint), degC | error 400 s later, degC |");
  console.log("|---|---:|---:|");
  console.log(`| PID alone | ${fmt(r.pidPeakC, 3)} | ${fmt(r.pidFinalC, 4)} |`);
  console.log(`| PID + feed-forward from rack power | ${fmt(r.ffPeakC, 3)} | ${fmt(r.ffFinalC, 4)} |`);
}
