// Small builders for the JSON Schemas the configs are validated against (sim and agent).

/** A number in [minimum, maximum], with a default unless `def` is undefined (then the key is optional or required by its parent). */
export const num = (minimum: number, maximum: number, def: number | undefined, description: string): object => ({
  type: "number",
  minimum,
  maximum,
  ...(def !== undefined ? { default: def } : {}),
  description,
});

export const int = (minimum: number, maximum: number, def: number | undefined, description: string): object => ({
  type: "integer",
  minimum,
  maximum,
  ...(def !== undefined ? { default: def } : {}),
  description,
});

/** A closed object that stays absent unless given (no default): its presence means something. */
export const optionalObj = (properties: Record<string, object>, description: string): object => ({
  type: "object",
  additionalProperties: false,
  properties,
  description,
});

/** A closed object; with no required keys it defaults to {} so the defaults inside it apply. */
export const obj = (properties: Record<string, object>, description: string, required: string[] = []): object => ({
  ...optionalObj(properties, description),
  ...(required.length === 0 ? { default: {} } : { required }),
});
