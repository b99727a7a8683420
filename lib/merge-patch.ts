// A config patch over a config (a HIL scenario's `control` over the pod's): objects are merged key
// by key, anything else (a number, a string, a list) is replaced whole. The result is checked
// by the caller's schema, as the config itself is.

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);

export function mergePatch(base: unknown, patch: unknown): unknown {
  if (!isObject(base) || !isObject(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(patch)) out[k] = k in base ? mergePatch(base[k], v) : structuredClone(v);
  return out;
}
