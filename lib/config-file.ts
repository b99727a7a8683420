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

/**
 * A config's problems for one alarm or answer line: the first three, each cut at `each`
 * characters, and how many more. A reload's alarm and a pushed config's refusal say it alike,
 * and neither may grow with the file that was sent.
 */
export function problemsInBrief(problems: readonly string[], each: number): string {
  const shown = problems.slice(0, 3).map((p) => (p.length > each ? `${p.slice(0, each)}…` : p));
  return `${shown.join("; ")}${problems.length > shown.length ? ` (and ${problems.length - shown.length} more)` : ""}`;
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

/**
 * One ajv error as "key.path: reason". `removed` names what took the place of a key the schema
 * no longer has (issue #51: "unknown key" alone left the operator to guess it was removed).
 */
export function describe(e: ErrorObject, removed?: (path: string) => string | undefined): string {
  const at = keyPath(e.instancePath);
  switch (e.keyword) {
    case "additionalProperties": {
      const key = `${at === "(top level)" ? "" : `${at}.`}${String(e.params.additionalProperty)}`;
      return `${key}: ${removed?.(key) ?? "unknown key"}`;
    }
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

/**
 * Every ajv error described, where a value may take one of several forms (oneOf, anyOf) as one
 * line listing each: `must be one of "open", "closed", "hold", or an object`, rather than one
 * line per form that failed and a third saying it matched none (issue #51: the allowed values).
 */
export function problemsOf(errors: readonly ErrorObject[], removed?: (path: string) => string | undefined): string[] {
  const consumed = new Set<ErrorObject>();
  const out: string[] = [];
  for (const e of errors) {
    if (e.keyword !== "oneOf" && e.keyword !== "anyOf") continue;
    const forms: string[] = [];
    for (const sub of errors) {
      if (sub === e || !sub.schemaPath.startsWith(`${e.schemaPath}/`)) continue;
      // a form the value has, wrong inside: said on its own line, and named here
      if (sub.instancePath.startsWith(`${e.instancePath}/`)) {
        forms.push("an object (its problem below)");
        continue;
      }
      if (sub.instancePath !== e.instancePath) continue;
      if (sub.keyword === "enum") forms.push(...(sub.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)));
      else if (sub.keyword === "const") forms.push(JSON.stringify(sub.params.allowedValue));
      else if (sub.keyword === "type") forms.push(`${/^[aeiou]/.test(String(sub.params.type)) ? "an" : "a"} ${String(sub.params.type)}`);
      else continue;
      consumed.add(sub);
    }
    if (forms.length === 0) continue;
    consumed.add(e);
    const unique = [...new Set(forms)];
    const list = unique.length === 1 ? unique[0] : `${unique.slice(0, -1).join(", ")}, or ${unique[unique.length - 1]}`;
    out.push(`${keyPath(e.instancePath)}: must be ${unique.length === 1 ? "" : "one of "}${list}`);
  }
  for (const e of errors) if (!consumed.has(e) && e.keyword !== "if") out.push(describe(e, removed));
  return out;
}

export interface Validator<T> {
  (data: unknown, file?: string): T;
  readonly schema: object;
}

/**
 * Compiles a schema into a function that validates (applying defaults) and returns typed data,
 * or throws a ConfigError listing every problem. `check` adds cross-field rules (min < max,
 * references that must resolve) and returns problems in the same "path: reason" form; `removed`
 * names a removed key's replacement (describe).
 */
export function validator<T>(schema: object, check?: (data: T) => string[], removed?: (path: string) => string | undefined): Validator<T> {
  const fn: ValidateFunction = ajv.compile(schema);
  const validate = (data: unknown, file = "config"): T => {
    if (!fn(data)) {
      const problems = [...new Set(problemsOf(fn.errors ?? [], removed))];
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

/** A config file's text, bounded before it is read whole (1 MiB); one that cannot be read is a ConfigError. */
export function readConfigText(path: string): string {
  try {
    return readTextBounded(path);
  } catch (err) {
    throw new ConfigError(path, [`cannot read: ${(err as Error).message}`]);
  }
}

export function loadYamlFile<T>(path: string, validate: Validator<T>): T {
  return validate(parseYaml(readConfigText(path), path) ?? {}, path);
}
