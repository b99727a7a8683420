// `podwarden fleet config push`: one config, staged across a fleet (issue #51 item 4; docs/fleet.md,
// Config pushed to a fleet). The pods are chosen by name or pattern; the file is made each pod's
// own by its placeholders ({{site}}, {{pod}} and the inventory's values); a canary pod goes first,
// alone, then batches, and the push stops at the first pod that does not keep it: each pod is
// sent the signed command `config`, answers "on trial", and is asked for its status until its
// health window has kept the config or put back the one before (agent/config-push/).
import type { CommandSigner, FleetWatch } from "./watch.js";

/** What became of the push at one pod. */
export interface PodPushOutcome {
  pod: string;
  /** kept, already running, put back, refused by the pod, silent, or never sent (the push stopped before it) */
  result: "applied" | "unchanged" | "reverted" | "refused" | "no answer" | "not pushed";
  /** the pod's words: why it refused or put it back */
  why: string | null;
  transaction: string | null;
}

export interface PushOptions {
  /** the config, with placeholders */
  template: string;
  /** the pods, in the order given (the canary first if none is named) */
  pods: string[];
  /** per pod ("site/pod"), the values of its placeholders; "*" for every pod */
  vars: Record<string, Record<string, string | number>>;
  canary?: string;
  batchSize: number;
  /** the pods' health window, s (none: each pod's configPush.healthWindowS) */
  windowS?: number;
  /** how long to wait for a pod's answer to a request, ms */
  answerMs: number;
  /** how long a pod may take beyond its window to say what became of the push, ms */
  verdictSlackMs: number;
  pollMs?: number;
  signer: CommandSigner;
  /** each pod's outcome as it comes */
  progress?(o: PodPushOutcome, stage: string): void;
}

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;

/** The template made one pod's: every {{name}} replaced; throws naming each one the pod has no value for. */
export function renderFor(template: string, pod: string, vars: PushOptions["vars"]): string {
  const [site, name] = pod.split("/");
  const values: Record<string, string | number> = { ...vars["*"], ...vars[pod], site: site ?? "", pod: name ?? "" };
  const missing = new Set<string>();
  const text = template.replace(PLACEHOLDER, (whole, key: string) => {
    const v = values[key];
    if (v === undefined) {
      missing.add(key);
      return whole;
    }
    return String(v);
  });
  if (missing.size > 0) throw new Error(`${pod}: no value for ${[...missing].map((k) => `{{${k}}}`).join(", ")} (--vars)`);
  return text;
}

/** The pods a selector names, from those known: `site/pod`, or a pattern with `*` within a part. */
export function selectPods(selectors: string[], known: Iterable<string>): string[] {
  const all = [...known].sort();
  const out: string[] = [];
  for (const s of selectors) {
    if (!s.includes("*")) {
      if (!out.includes(s)) out.push(s);
      continue;
    }
    const re = new RegExp(`^${s.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join("[^/]*")}$`);
    for (const p of all) if (re.test(p) && !out.includes(p)) out.push(p);
  }
  return out;
}

/** The stages: the canary alone, then batches of the rest, in order. */
export function stages(pods: string[], canary: string | undefined, batchSize: number): string[][] {
  if (pods.length === 0) return [];
  const first = canary ?? pods[0];
  if (!pods.includes(first)) throw new Error(`the canary ${first} is not among the pods chosen`);
  const rest = pods.filter((p) => p !== first);
  const out = [[first]];
  for (let i = 0; i < rest.length; i += batchSize) out.push(rest.slice(i, i + batchSize));
  return out;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const isObject = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);

/**
 * Pushes the config stage by stage; resolves with every pod's outcome, those never sent
 * included. Every pod's text is made before anything is sent: a pod without its values stops
 * the push before it starts (thrown).
 */
export async function pushConfig(w: FleetWatch, o: PushOptions): Promise<PodPushOutcome[]> {
  const texts = new Map(o.pods.map((p) => [p, renderFor(o.template, p, o.vars)]));
  const plan = stages(o.pods, o.canary, o.batchSize);
  const outcomes: PodPushOutcome[] = [];
  let stopped = false;
  for (const [k, batch] of plan.entries()) {
    const stage = k === 0 ? "canary" : `batch ${k}`;
    if (stopped) {
      for (const pod of batch) outcomes.push({ pod, result: "not pushed", why: "the push stopped at an earlier stage", transaction: null });
      continue;
    }
    const got = await Promise.all(batch.map((pod) => pushOne(w, o, pod, texts.get(pod)!)));
    for (const g of got) {
      o.progress?.(g, stage);
      outcomes.push(g);
    }
    if (got.some((g) => g.result !== "applied" && g.result !== "unchanged")) stopped = true;
  }
  return outcomes;
}

async function pushOne(w: FleetWatch, o: PushOptions, pod: string, yaml: string): Promise<PodPushOutcome> {
  const params = { action: "apply", yaml, ...(o.windowS === undefined ? {} : { windowS: o.windowS }) };
  const [a] = await w.command([pod], "config", params, o.signer, o.answerMs);
  const tx = a?.transaction ?? null;
  const r = a?.response ?? null;
  if (r !== null && r.status !== "ok") return { pod, result: "refused", why: isObject(r.error) ? String(r.error.message) : "refused", transaction: tx };
  const data = r === null ? null : r.data;
  if (isObject(data) && data.state === "unchanged") return { pod, result: "unchanged", why: null, transaction: tx };
  const windowS = isObject(data) && typeof data.windowS === "number" ? data.windowS : (o.windowS ?? 3600);
  // the answer may be lost while the pod's uplink restarts for a structural change: its status
  // says whether the push was taken all the same
  const deadline = Date.now() + windowS * 1000 + o.verdictSlackMs;
  while (Date.now() < deadline) {
    await sleep(o.pollMs ?? 2000);
    const [s] = await w.command([pod], "config", { action: "status" }, o.signer, o.answerMs);
    const last = isObject(s?.response?.data) ? s.response.data.last : null;
    if (!isObject(last) || last.id !== tx) {
      if (r === null && s?.response !== null && s?.response !== undefined) return { pod, result: "no answer", why: "the pod answered its status but has no record of this push", transaction: tx };
      continue;
    }
    if (last.state === "applied") return { pod, result: "applied", why: null, transaction: tx };
    if (last.state === "reverted") return { pod, result: "reverted", why: Array.isArray(last.why) ? last.why.join("; ") : null, transaction: tx };
  }
  return { pod, result: "no answer", why: `no verdict within its ${windowS} s window and ${o.verdictSlackMs / 1000} s more`, transaction: tx };
}
