// Scenario files: a YAML timeline of fault actions, replayed against plant time.
//
//   seed: 7            # optional: overrides the sim config's seed
//   steps:
//     - at: 5s
//       leak: rack-3
//     - at: 20s
//       sensor: rack-2.returnTempC
//       fault: stuck
import { loadYamlFile, validator } from "../lib/config-file.js";
import { FAULT_ACTION_PROPERTIES, actionProblems, type FaultAction } from "./faults.js";

export interface ScenarioStep {
  atS: number;
  action: FaultAction;
}

export interface Scenario {
  seed?: number;
  steps: ScenarioStep[];
}

const DURATION = "^\\s*\\d+(\\.\\d+)?\\s*(ms|s|m|h)?\\s*$";

const SCENARIO_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["steps"],
  properties: {
    seed: { type: "integer", minimum: 0, maximum: 2 ** 31 - 1 },
    steps: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["at"],
        properties: {
          at: { description: "plant time: 5s, 500ms, 2m, or seconds", oneOf: [{ type: "number", minimum: 0 }, { type: "string", pattern: DURATION }] },
          ...FAULT_ACTION_PROPERTIES,
        },
      },
    },
  },
};

interface RawScenario {
  seed?: number;
  steps: (Record<string, unknown> & { at: number | string })[];
}

/** "5s" -> 5, "500ms" -> 0.5, "2m" -> 120, 7 -> 7. */
export function parseDuration(at: number | string): number {
  if (typeof at === "number") return at;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(at);
  if (m === null) throw new Error(`bad duration "${at}"`);
  const unit = { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] ?? "s"] ?? 1;
  return Number(m[1]) * unit;
}

const validateRaw = validator<RawScenario>(SCENARIO_SCHEMA, (s) => s.steps.flatMap((step, i) => actionProblems(step, `steps[${i}]`)));

export function parseScenario(data: unknown, file = "scenario"): Scenario {
  const raw = validateRaw(data, file);
  const steps = raw.steps.map(({ at, ...action }) => ({ atS: parseDuration(at), action: action as FaultAction }));
  // stable sort: steps at the same time keep their file order
  steps.sort((a, b) => a.atS - b.atS);
  return { seed: raw.seed, steps };
}

export function loadScenario(path: string): Scenario {
  return parseScenario(loadYamlFile(path, validator<unknown>({})), path);
}

/** Hands out the steps that are due as plant time advances. */
export class ScenarioPlayer {
  private next = 0;

  constructor(private readonly scenario: Scenario) {}

  due(timeS: number): FaultAction[] {
    const out: FaultAction[] = [];
    while (this.next < this.scenario.steps.length && this.scenario.steps[this.next].atS <= timeS) {
      out.push(this.scenario.steps[this.next].action);
      this.next++;
    }
    return out;
  }

  get done(): boolean {
    return this.next >= this.scenario.steps.length;
  }
}
