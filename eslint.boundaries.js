// Who may import whom: the stages' boundaries, enforced by `npm run lint` (docs/architecture.md
// says why). Each entry names a folder and the folders its code must not import. A dynamic
// import() is not covered by no-restricted-imports; only cli/ uses one, for lazy subcommands.
const TOOLING = ["tooling", "bench", "test", "scripts"];

/** Folder -> folders it may not import (static imports and re-exports). */
export const FORBIDDEN_IMPORTS = {
  // pure computation: nothing of ours
  "hotpath-as": ["lib", "pod", "drivers", "sim", "agent", "hil", "cli", "fleet", ...TOOLING],
  // generic helpers the product uses
  lib: ["hotpath-as", "pod", "drivers", "sim", "agent", "hil", "cli", "fleet", ...TOOLING],
  // every byte to the field, and nothing of racks or loops
  drivers: ["hotpath-as", "pod", "sim", "agent", "hil", "cli", "fleet", ...TOOLING],
  // points to actuators: the hot path and generic helpers only
  pod: ["drivers", "sim", "agent", "hil", "cli", "fleet", ...TOOLING],
  // the plant and its devices: may run the pod stage and the drivers' codecs, never the agent
  sim: ["agent", "hil", "cli", "fleet", ...TOOLING],
  // the daemon's parts: never the simulator, the HIL runner, the entry points or tooling
  agent: ["sim", "hil", "cli", "fleet", ...TOOLING],
  // the HIL runner judges the pod from outside: it runs the simulator and the pod stage, never
  // the agent's internals (in real time it talks to the daemon as a rig would, and signs commands
  // as mission control does: the command format, allowed below). In virtual time it runs the
  // daemon's own supervisor beside the virtual pod (pure, allowed below), so the alarms and
  // events it judges there are the daemon's rules, not a copy of them
  hil: ["agent", "cli", "fleet", ...TOOLING],
  // mission control's side (the reference consumer, the pod emulator): it knows the pods by their
  // topics and the command format only (agent/commands/, allowed below), never the daemon
  fleet: ["hotpath-as", "pod", "drivers", "sim", "agent", "hil", "cli", ...TOOLING],
  // entry points: product, never tooling
  cli: [...TOOLING],
};

/** Folder -> forbidden folder -> subfolders of it that stay allowed (the command format is a contract, not the daemon). */
export const ALLOWED_INSIDE = {
  fleet: { agent: ["commands"] },
  hil: { agent: ["commands", "supervisor"] },
};

// gitignore patterns: an allowed subfolder is re-included itself (its parent's `*` excluded it)
// and then everything in it
const patterns = (folders, allowed = []) => folders.flatMap((f) => [`**/${f}/*`, `**/${f}/**`, ...allowed.flatMap((a) => [`!**/${f}/${a}`, `!**/${f}/${a}/**`])]);

/** A service inside agent/ takes the narrow face it needs (agent/pod-api.ts), never the Agent class. */
export const AGENT_CLASS_MESSAGE = "a service takes the narrow face it needs (agent/pod-api.ts), never the Agent class (docs/architecture.md)";
const AGENT_CLASS = { group: ["./agent.js", "../agent.js", "../../agent.js", "../../../agent.js"], message: AGENT_CLASS_MESSAGE };

/**
 * The files inside agent/ that host the Agent rather than serve it: the control plane's thread
 * builds, starts, reloads and stops it (as the daemon's main did before the two planes), or the
 * main thread does, on a pod with RS-485 buses; agent-host.ts is what both do alike.
 */
export const AGENT_HOSTS = ["agent/plane/agent-host.ts", "agent/plane/control-plane-worker.ts", "agent/plane/in-process-plane.ts"];

const folderPatterns = (folder, forbidden) =>
  forbidden.map((f) => ({
    group: patterns([f], ALLOWED_INSIDE[folder]?.[f]),
    message: `${folder}/ may not import ${f}/ (docs/architecture.md: who may import whom)`,
  }));

/**
 * The pod's features, each a folder under agent/ given the pod context (agent/pod-context.ts). A
 * feature may import its own folder, the pod context, the narrow faces and their types
 * (agent/pod-api.ts), the shared-memory formats the control worker writes (agent/control/: the
 * recorder's ring, a tuning's state), and pod/, lib/ and hotpath-as/; nothing else of the agent
 * (not the Agent, the pod loop, a service, or another feature) and no driver.
 */
export const FEATURES = ["operator", "recorder", "tuning", "health"];
export const FEATURE_MESSAGE = "a feature imports its own folder, agent/pod-context.ts, agent/pod-api.ts, agent/control/, pod/, lib/ and hotpath-as/ only (docs/architecture.md: pod features)";
const FEATURE_IMPORTS = [
  { regex: "^\\.\\./(?!pod-context\\.js$|pod-api\\.js$|control/|\\.\\./)", message: FEATURE_MESSAGE },
  { regex: "^\\.\\./\\.\\./(?!pod/|lib/|hotpath-as/)", message: FEATURE_MESSAGE },
];

/** Flat-config entries, one per folder, and the Agent's host after agent/'s. */
export const boundaries = [
  ...Object.entries(FORBIDDEN_IMPORTS).map(([folder, forbidden]) => ({
    files: [`${folder}/**/*.ts`],
    rules: {
      "no-restricted-imports": ["error", { patterns: [...folderPatterns(folder, forbidden), ...(folder === "agent" ? [AGENT_CLASS] : [])] }],
    },
  })),
  { files: AGENT_HOSTS, rules: { "no-restricted-imports": ["error", { patterns: folderPatterns("agent", FORBIDDEN_IMPORTS.agent) }] } },
  {
    files: FEATURES.map((f) => `agent/${f}/**/*.ts`),
    rules: { "no-restricted-imports": ["error", { patterns: [...folderPatterns("agent", FORBIDDEN_IMPORTS.agent), AGENT_CLASS, ...FEATURE_IMPORTS] }] },
  },
  // the pod loop runs the features through PodFeature alone: it imports none of them
  {
    files: ["agent/loop/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [...folderPatterns("agent", FORBIDDEN_IMPORTS.agent), AGENT_CLASS, ...FEATURES.map((f) => ({ group: [`../${f}/*`, `../${f}/**`], message: "the pod loop imports no feature: it runs them through PodFeature (agent/pod-context.ts)" }))] },
      ],
    },
  },
];
