// Fuzzing support: a seed (FUZZ_SEED, else a fixed default, so a run is reproducible and a
// failure names the seed that found it), byte and JSON mutators, and the regression corpus in
// test/corpus/<fuzzer>/*.json, replayed before the generated cases on every run.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Prng } from "../../sim/prng.js";

export function fuzzSeed(fallback: number): number {
  const s = process.env.FUZZ_SEED;
  return s === undefined || s === "" ? fallback : Number(s) >>> 0;
}

export function corpus<T>(fuzzer: string): { file: string; value: T }[] {
  const dir = join("test", "corpus", fuzzer);
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => ({ file: join(dir, f), value: JSON.parse(readFileSync(join(dir, f), "utf8")) as T }));
}

/** A random byte-level mutation of a buffer: flip, insert, delete, truncate, duplicate, splice. */
export function mutateBytes(rng: Prng, input: Buffer): Buffer {
  const b = Buffer.from(input);
  switch (rng.int(0, 6)) {
    case 0: {
      if (b.length > 0) b[rng.int(0, b.length - 1)] ^= 1 << rng.int(0, 7);
      return b;
    }
    case 1: {
      const at = rng.int(0, b.length);
      return Buffer.concat([b.subarray(0, at), Buffer.from([rng.int(0, 255)]), b.subarray(at)]);
    }
    case 2: {
      if (b.length === 0) return b;
      const at = rng.int(0, b.length - 1);
      return Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
    }
    case 3:
      return b.subarray(0, rng.int(0, b.length));
    case 4:
      return Buffer.concat([b, b.subarray(0, rng.int(0, b.length))]);
    case 5: {
      if (b.length > 0) b[rng.int(0, b.length - 1)] = rng.pick([0x00, 0xff, 0x7f, 0x80, 0x22, 0x5c, 0x7b, 0x7d]);
      return b;
    }
    default:
      return Buffer.from(Array.from({ length: rng.int(0, 64) }, () => rng.int(0, 255)));
  }
}

/** Values that break assumptions: wrong types, non-finite numbers, extremes, prototype keys. */
export function hostileValue(rng: Prng): unknown {
  return rng.pick<unknown>([
    null,
    true,
    "",
    "x".repeat(rng.int(1, 5000)),
    -1,
    0,
    1e308,
    -1e308,
    Number.MAX_SAFE_INTEGER + 2,
    0.5,
    "NaN",
    "Infinity",
    [],
    [1, 2],
    {},
    { __proto__: { polluted: true } },
    JSON.parse('{"__proto__":{"polluted":true}}') as unknown,
    { constructor: { prototype: { polluted: true } } },
    "\u0000",
    "\ud800",
    "rack-1",
    "cdu.pump",
    rng.range(-1e6, 1e6),
  ]);
}

/** A random structural mutation of a JSON value: replace, delete or add at a random path. */
export function mutateJson(rng: Prng, v: unknown, depth = 0): unknown {
  if (v === null || typeof v !== "object" || depth > 4 || rng.chance(0.25)) return hostileValue(rng);
  if (Array.isArray(v)) {
    const a = [...(v as unknown[])];
    if (a.length === 0 || rng.chance(0.2)) a.push(hostileValue(rng));
    else {
      const i = rng.int(0, a.length - 1);
      if (rng.chance(0.3)) a.splice(i, 1);
      else a[i] = mutateJson(rng, a[i], depth + 1);
    }
    return a;
  }
  const o: Record<string, unknown> = { ...(v as Record<string, unknown>) };
  const keys = Object.keys(o);
  const r = rng.next();
  if (keys.length === 0 || r < 0.15) o[rng.pick(["extra", "__proto__", "constructor", "interlocks", "v", "params", ""])] = hostileValue(rng);
  else if (r < 0.3) delete o[rng.pick(keys)];
  else {
    const k = rng.pick(keys);
    o[k] = mutateJson(rng, o[k], depth + 1);
  }
  return o;
}

export { Prng };
