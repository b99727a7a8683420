// Loads the compiled hot path and exposes it as a HotPath over views of its linear memory.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as L from "./assembly/layout.js";
import { createViews, type HotPath, type BankViews } from "./views.js";

/**
 * release: optimised, with WebAssembly SIMD (two loops or points per operation where they can);
 * scalar: the same source optimised without SIMD, for CPUs that cannot run it (V8 needs SSE4.1
 * on x86-64); debug: unoptimised, with SIMD and a source map.
 */
export type WasmTarget = "release" | "scalar" | "debug";

interface HotPathExports {
  memory: WebAssembly.Memory;
  regionPtr(region: number): number;
  configure(loops: number, points: number, racks: number): number;
  resetState(): void;
  step(this: void, nowMs: number, dtS: number): number;
}

/** Finds build/hotpath.<target>.wasm walking up from this module (works from source and from dist/). */
export function wasmPath(target: WasmTarget): string {
  const file = `hotpath.${target}.wasm`;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 4; depth++) {
    const candidate = join(dir, "build", file);
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`${file} not found: run "npm run build:wasm" first`);
}

function isExports(x: WebAssembly.Exports): x is WebAssembly.Exports & HotPathExports {
  return (
    x.memory instanceof WebAssembly.Memory &&
    typeof x.regionPtr === "function" &&
    typeof x.configure === "function" &&
    typeof x.resetState === "function" &&
    typeof x.step === "function"
  );
}

export class WasmHotPath implements HotPath {
  readonly views: BankViews;
  readonly step: (nowMs: number, dtS: number) => number;
  private readonly exports: HotPathExports;

  /** From the module bytes, or from an already compiled module (instances of one module share V8's optimised code). */
  constructor(source: ArrayBufferView | ArrayBuffer | WebAssembly.Module) {
    const module = source instanceof WebAssembly.Module ? source : new WebAssembly.Module(source);
    const instance = new WebAssembly.Instance(module, {});
    const exports = instance.exports;
    if (!isExports(exports)) throw new Error("hot path module does not export the expected API");
    this.exports = exports;
    const base: number[] = [];
    for (let r = 0; r < L.REGION_COUNT; r++) base.push(exports.regionPtr(r));
    // The memory never grows (no allocator in the module), so these views stay valid.
    this.views = createViews(exports.memory.buffer, base);
    // Bind once: the per-tick call is then the bare export.
    this.step = exports.step;
  }

  configure(loops: number, points: number, racks: number): number {
    return this.exports.configure(loops, points, racks);
  }

  resetState(): void {
    this.exports.resetState();
  }
}

export interface CompiledHotPath {
  module: WebAssembly.Module;
  /** the build that compiled: "scalar" when "release" was asked for and this CPU cannot run its SIMD */
  target: WasmTarget;
}

/**
 * Compiles a build of the hot path. The release build uses WebAssembly SIMD, which V8 refuses to
 * compile on a CPU without SSE4.1 (pre-2008 x86-64, early Atoms): it then falls back to the
 * scalar build of the same source, which computes the same bits, more slowly.
 */
export function compileHotPath(target: WasmTarget = "release"): CompiledHotPath {
  try {
    return { module: new WebAssembly.Module(readFileSync(wasmPath(target))), target };
  } catch (err) {
    if (target !== "release" || (err as Error).name !== "CompileError") throw err;
    return { module: new WebAssembly.Module(readFileSync(wasmPath("scalar"))), target: "scalar" };
  }
}

export function loadWasmHotPath(target: WasmTarget = "release"): WasmHotPath {
  return new WasmHotPath(compileHotPath(target).module);
}
