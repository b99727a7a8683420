// Runs a hot-path test against every implementation: the compiled WASM (the SIMD release build
// and the scalar build for CPUs without SIMD) and the reference model.
import { loadWasmHotPath } from "../../hotpath-as/wasm-bank.js";
import { ReferenceHotPath } from "../../hotpath-as/reference.js";
import type { HotPath } from "../../hotpath-as/views.js";
import type { PointSpec, LoopSpec, RackSpec } from "../../hotpath-as/bank-config.js";

export const IMPLEMENTATIONS: [string, () => HotPath][] = [
  ["wasm", () => loadWasmHotPath("release")],
  ["wasm scalar build", () => loadWasmHotPath("scalar")],
  ["reference", () => new ReferenceHotPath()],
];

export const analogPoint = (over: Partial<PointSpec> = {}): PointSpec => ({
  min: -100,
  max: 1000,
  debounceFault: 1,
  debounceClear: 1,
  ...over,
});

export const leakPoint = (rack: number, over: Partial<PointSpec> = {}): PointSpec => ({
  kind: "leak",
  rack,
  min: 0,
  max: 2,
  debounceFault: 3,
  debounceClear: 3,
  ...over,
});

export const valveLoop = (pvPoint: number, over: Partial<LoopSpec> = {}): LoopSpec => ({
  pvPoint,
  action: "direct",
  kp: 2,
  ki: 0.5,
  outMin: 0,
  outMax: 100,
  safeOnLeak: "closed",
  safeOnSensorFault: "open",
  sp: 40,
  ...over,
});

export const rack = (flowPoint: number | undefined, over: Partial<RackSpec> = {}): RackSpec => ({
  flowPoint,
  isolatedFlowMaxLpm: 1,
  isolationDeadlineMs: 5000,
  ...over,
});
