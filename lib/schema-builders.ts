// Small builders for the JSON Schemas the configs are validated against (sim and agent).
//
// Each builder returns the plain JSON Schema object ajv compiles and the docs are generated from,
// typed as a `Schema<T>`: T, the type of the data the schema validates (with its defaults filled
// in), exists for the type checker only. A config section's TypeScript type is then `Infer<typeof
// ITS_SCHEMA>`, derived from the schema rather than written a second time beside it.

declare const TYPE: unique symbol;
declare const OPTIONAL: unique symbol;

/** A JSON Schema for data of type T (T is for the type checker only). */
export type Schema<T> = object & { readonly [TYPE]: T };
/** A property that may be absent after validation: no default, and not required. */
export type Optional<T> = Schema<T> & { readonly [OPTIONAL]: true };
/** The type of the data a schema validates; unknown for a schema built without these builders. */
export type Infer<S> = S extends { readonly [TYPE]: infer T } ? T : unknown;

type Flat<T> = { [K in keyof T]: T[K] } & {};
type Props = Record<string, object>;
/** The type of a closed object with these properties. */
export type ObjectOfProps<P extends Props> = Flat<
  { -readonly [K in keyof P as P[K] extends Optional<unknown> ? never : K]: Infer<P[K]> } & { -readonly [K in keyof P as P[K] extends Optional<unknown> ? K : never]?: Infer<P[K]> }
>;

/** The schemas marked optional(): obj() checks every key without a default is required or one of these. */
const optionals = new WeakSet<object>();

/** Declares the type of a schema not built with these builders (one whose type is written beside it). */
export const typed = <T>(schema: object): Schema<T> => schema as Schema<T>;

/** A property that stays absent unless given: no default, and not required. */
export function optional<T>(s: Schema<T>): Optional<T> {
  optionals.add(s);
  return s as Optional<T>;
}

/** A number in [minimum, maximum], with a default unless `def` is undefined (then the key is optional or required by its parent). */
export const num = (minimum: number, maximum: number, def: number | undefined, description: string): Schema<number> =>
  typed<number>({ type: "number", minimum, maximum, ...(def !== undefined ? { default: def } : {}), description });

export const int = (minimum: number, maximum: number, def: number | undefined, description: string): Schema<number> =>
  typed<number>({ type: "integer", minimum, maximum, ...(def !== undefined ? { default: def } : {}), description });

export const bool = (def: boolean, description: string): Schema<boolean> => typed<boolean>({ type: "boolean", default: def, description });

/** A string; `extra` adds keywords (pattern, minLength, default, ...). */
export const str = (description: string, extra: object = {}): Schema<string> => typed<string>({ type: "string", ...extra, description });

/** One of a list of values, with a default unless `def` is undefined. */
export const oneOf = <const E extends readonly (string | number)[]>(values: E, def: E[number] | undefined, description: string): Schema<E[number]> =>
  typed<E[number]>({ enum: values, ...(def !== undefined ? { default: def } : {}), description });

/** `s`, or null (a state file's field that is there with nothing in it). */
export const nullable = <T>(s: Schema<T>): Schema<T | null> => typed<T | null>({ anyOf: [{ type: "null" }, s] });

/** An array of `items`; `extra` adds keywords (minItems, maxItems, default, ...). */
export const arr = <T>(items: Schema<T>, description: string, extra: object = {}): Schema<T[]> => typed<T[]>({ type: "array", items, ...extra, description });

function closed<P extends Props>(properties: P, description: string, required: readonly string[]): object {
  for (const [key, s] of Object.entries(properties)) {
    // a key the type calls present must be present after validation: defaulted, required, or marked optional
    if (!("default" in s) && !required.includes(key) && !optionals.has(s)) throw new Error(`schema "${description}": key "${key}" has no default, is not required and is not marked optional()`);
  }
  return { type: "object", additionalProperties: false, properties, description };
}

/** A closed object that stays absent unless given (no default): its presence means something. */
export const optionalObj = <P extends Props>(properties: P, description: string): Optional<ObjectOfProps<P>> => optional(typed<ObjectOfProps<P>>(closed(properties, description, [])));

/** A closed object; with no required keys it defaults to {} so the defaults inside it apply. */
export const obj = <P extends Props>(properties: P, description: string, required: readonly (keyof P & string)[] = []): Schema<ObjectOfProps<P>> =>
  typed<ObjectOfProps<P>>({ ...closed(properties, description, required), ...(required.length === 0 ? { default: {} } : { required }) });
