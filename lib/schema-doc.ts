// Renders a JSON Schema as a Markdown table of key paths: type, range, default, description.
// docs/configuration.md and docs/simulator.md are generated from the same schemas the code validates with.

interface SchemaNode {
  type?: string | string[];
  description?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, SchemaNode>;
  required?: string[];
  items?: SchemaNode;
  oneOf?: SchemaNode[];
  pattern?: string;
  minLength?: number;
  minItems?: number;
  maxItems?: number;
}

/** A pattern longer than this is not printed. */
const LONG_PATTERN = 120;

const code = (x: unknown): string => `\`${JSON.stringify(x)}\``;

function typeOf(n: SchemaNode): string {
  if (n.enum !== undefined) return n.enum.map(code).join(" \\| ");
  if (n.const !== undefined) return code(n.const);
  if (n.oneOf !== undefined) return n.oneOf.map(typeOf).join(" or ");
  // an object of one key (a tagged choice: `{http: …}` or `{modbus: …}`) by its key
  const keys = Object.keys(n.properties ?? {});
  if (n.type === "object" && keys.length === 1 && n.required?.[0] === keys[0]) return `\`{${keys[0]}: …}\``;
  if (n.type === "array" && n.items !== undefined) return `list of ${typeOf(n.items)}`;
  return Array.isArray(n.type) ? n.type.join(" \\| ") : (n.type ?? "any");
}

function rangeOf(n: SchemaNode): string {
  const lo = n.minimum ?? n.exclusiveMinimum;
  const loMark = n.exclusiveMinimum !== undefined ? "(" : "[";
  if (lo !== undefined && n.maximum !== undefined) return `${loMark}${lo}, ${n.maximum}]`;
  if (lo !== undefined) return n.exclusiveMinimum !== undefined ? `> ${lo}` : `≥ ${lo}`;
  if (n.maximum !== undefined) return `≤ ${n.maximum}`;
  // a pattern built from lists (a HIL signal name's is 900 characters) says less than its description
  if (n.pattern !== undefined) return n.pattern.length > LONG_PATTERN ? "a name (as the description says)" : `matches \`${n.pattern}\``;
  if (n.minItems !== undefined || n.maxItems !== undefined) return `${n.minItems ?? 0}..${n.maxItems ?? "∞"} items`;
  return "";
}

function rows(n: SchemaNode, path: string, required: boolean, out: string[]): void {
  const leaf = n.properties === undefined || (n.type === "object" && Object.keys(n.properties).length === 0);
  if (path !== "") {
    const def = n.default !== undefined && !(typeof n.default === "object" && n.default !== null && Object.keys(n.default).length === 0) ? code(n.default) : required ? "**required**" : "";
    if (leaf || n.description !== undefined) {
      out.push(`| \`${path}\` | ${leaf ? typeOf(n) : "object"} | ${leaf ? rangeOf(n) : ""} | ${def} | ${(n.description ?? "").replace(/\|/g, "\\|")} |`);
    }
  }
  if (n.properties !== undefined) {
    for (const [k, child] of Object.entries(n.properties)) rows(child, path === "" ? k : `${path}.${k}`, n.required?.includes(k) ?? false, out);
  }
  if (n.type === "array" && n.items?.properties !== undefined) rows({ ...n.items, description: undefined }, `${path}[]`, false, out);
  // tagged unions (a discriminator key with a const per branch): one block of rows per branch
  const tag = (n as { discriminator?: { propertyName: string } }).discriminator?.propertyName;
  if (tag !== undefined && n.oneOf !== undefined) {
    for (const branch of n.oneOf) {
      const value = branch.properties?.[tag]?.const;
      for (const [k, child] of Object.entries(branch.properties ?? {})) {
        if (k === tag) continue;
        const desc = `with ${tag} ${code(value)}: ${child.description ?? ""}`;
        rows({ ...child, description: desc }, `${path}.${k}`, branch.required?.includes(k) ?? false, out);
      }
    }
  }
}

export function schemaTable(schema: object): string {
  const out = ["| key | type | range | default | description |", "|---|---|---|---|---|"];
  rows(schema, "", false, out);
  return out.join("\n");
}

/** Replaces the text between `<!-- BEGIN GENERATED: name -->` and `<!-- END GENERATED: name -->`. */
export function fillGenerated(doc: string, name: string, body: string): string {
  const begin = `<!-- BEGIN GENERATED: ${name} -->`;
  const end = `<!-- END GENERATED: ${name} -->`;
  const i = doc.indexOf(begin);
  const j = doc.indexOf(end);
  if (i < 0 || j < i) throw new Error(`markers for "${name}" not found`);
  return `${doc.slice(0, i + begin.length)}\n${body}\n${doc.slice(j)}`;
}
