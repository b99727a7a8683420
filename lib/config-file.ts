// Loading and validating YAML config files against a JSON Schema (ajv).
//
// Errors name the key path and the reason, e.g. `plant.racks: must be <= 64`. Files are only
// ever read: nothing here writes to an operator's file. Defaults from the schema are applied
// to the in-memory copy.
import { readTextBounded } from "./bounded-read.js";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { parseDocument } from "yaml";

export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: readonly string[],
  ) {
    super(`${file}: invalid config\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true, allowUnionTypes: true, discriminator: true });

/** `a.b[2].c` from ajv's `/a/b/2/c`. */
function keyPath(pointer: string): string {
  if (pointer === "") return "(top level)";
  return pointer
    .split("/")
    .slice(1)
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc === "" ? p : `${acc}.${p}`), "");
}

/** One ajv error as "key.path: reason". */
export function describe(e: ErrorObject): string {
  const at = keyPath(e.instancePath);
  switch (e.keyword) {
    case "additionalProperties":
      return `${at === "(top level)" ? "" : `${at}.`}${String(e.params.additionalProperty)}: unknown key`;
    case "required":
      return `${at === "(top level)" ? "" : `${at}.`}${String(e.params.missingProperty)}: required key is missing`;
    case "type":
      return `${at}: must be ${String(e.params.type)}${String(e.params.type).includes("number") || String(e.params.type).includes("integer") ? " (finite)" : ""}`;
    case "enum":
      // the values it may take, not ajv's "must be equal to one of the allowed values" (issue #51)
      return `${at}: must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`;
    default:
      return `${at}: ${e.message ?? e.keyword}`;
  }
}

export interface Validator<T> {
  (data: unknown, file?: string): T;
  readonly schema: object;
}

/**
 * Compiles a schema into a function that validates (applying defaults) and returns typed data,
 * or throws a ConfigError listing every problem. `check` adds cross-field rules (min < max,
 * references that must resolve) and returns problems in the same "path: reason" form.
 */
export function validator<T>(schema: object, check?: (data: T) => string[]): Validator<T> {
  const fn: ValidateFunction = ajv.compile(schema);
  const validate = (data: unknown, file = "config"): T => {
    if (!fn(data)) {
      const problems = [...new Set((fn.errors ?? []).filter((e) => e.keyword !== "if").map(describe))];
      throw new ConfigError(file, problems);
    }
    const extra = check?.(data as T) ?? [];
    if (extra.length > 0) throw new ConfigError(file, extra);
    return data as T;
  };
  return Object.assign(validate, { schema });
}

/** Parses YAML text; syntax errors and duplicate keys become ConfigErrors with line numbers. */
export function parseYaml(text: string, file: string): unknown {
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true, merge: true });
  if (doc.errors.length > 0) throw new ConfigError(file, doc.errors.map((e) => e.message.split("\n")[0]));
  return doc.toJS() as unknown;
}

export function loadYamlFile<T>(path: string, validate: Validator<T>): T {
  let text: string;
  try {
    text = readTextBounded(path);
  } catch (err) {
    throw new ConfigError(path, [`cannot read: ${(err as Error).message}`]);
  }
  return validate(parseYaml(text, path) ?? {}, path);
}
