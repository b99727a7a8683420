// The two documents DSP0266 requires of every Redfish service besides its resources: the OData
// service document (/redfish/v1/odata: the service root's top-level resources) and the CSDL
// metadata document (/redfish/v1/$metadata: a reference to the DMTF schema file of every type
// the tree serves, by namespace, and the service's entity container). Both are computed from the
// tree itself, so they cannot name a type it does not serve, or miss one it does.
import { ROOT, type RedfishTree } from "./tree.js";

type Resource = Record<string, unknown>;

/** Every @odata.id a resource links to, in nested objects and arrays too, its own excepted. */
export function links(r: unknown, own: string, out: string[] = []): string[] {
  if (Array.isArray(r)) for (const x of r) links(x, own, out);
  else if (r !== null && typeof r === "object") {
    for (const [k, v] of Object.entries(r)) {
      if (k === "@odata.id" && typeof v === "string" && v !== own) out.push(v);
      else links(v, own, out);
    }
  }
  return out;
}

/** The @odata.type of every resource reachable from the service root. */
export function servedTypes(tree: Pick<RedfishTree, "get">): Set<string> {
  const types = new Set<string>();
  const seen = new Set<string>();
  const queue = [ROOT];
  while (queue.length > 0) {
    const path = queue.shift()!;
    if (seen.has(path)) continue;
    seen.add(path);
    const r = tree.get(path);
    if (r === null) continue;
    if (typeof r["@odata.type"] === "string") types.add(r["@odata.type"]);
    queue.push(...links(r, path).filter((p) => p.startsWith(`${ROOT}/`) || p === ROOT));
  }
  return types;
}

/**
 * "#CoolingUnit.v1_5_0.CoolingUnit" -> the schema "CoolingUnit" and its namespaces "CoolingUnit"
 * and "CoolingUnit.v1_5_0"; a collection's "#ChassisCollection.ChassisCollection" -> its one.
 */
function schemaOf(type: string): { schema: string; namespaces: string[] } {
  const parts = type.replace(/^#/, "").split(".");
  const schema = parts[0];
  const versioned = parts.length === 3 ? `${schema}.${parts[1]}` : null;
  return { schema, namespaces: versioned === null ? [schema] : [schema, versioned] };
}

/** The types every payload leans on without naming them: Status, Location, the annotations. */
const ALWAYS: Record<string, string[]> = { Resource: ["Resource", "Resource.v1_0_0"], RedfishExtensions: ["RedfishExtensions.v1_0_0"] };

export function metadataDocument(types: Iterable<string>): string {
  const schemas = new Map<string, Set<string>>(Object.entries(ALWAYS).map(([k, v]) => [k, new Set(v)]));
  let root = "ServiceRoot.v1_0_0";
  for (const t of types) {
    const { schema, namespaces } = schemaOf(t);
    const set = schemas.get(schema) ?? new Set<string>();
    for (const n of namespaces) set.add(n);
    schemas.set(schema, set);
    if (schema === "ServiceRoot" && namespaces[1] !== undefined) root = namespaces[1];
  }
  const refs = [...schemas.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([schema, ns]) => {
      const includes = [...ns].sort().map((n) => `    <edmx:Include Namespace="${n}"${n === "RedfishExtensions.v1_0_0" ? ' Alias="Redfish"' : ""}/>`);
      return [`  <edmx:Reference Uri="http://redfish.dmtf.org/schemas/v1/${schema}_v1.xml">`, ...includes, "  </edmx:Reference>"].join("\n");
    });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">',
    ...refs,
    "  <edmx:DataServices>",
    '    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">',
    `      <EntityContainer Name="Service" Extends="${root}.ServiceContainer"/>`,
    "    </Schema>",
    "  </edmx:DataServices>",
    "</edmx:Edmx>",
    "",
  ].join("\n");
}

/** The OData service document: the service root and each resource it links to at the top level. */
export function odataDocument(root: Resource): Resource {
  const value = [{ name: "Service", kind: "Singleton", url: `${ROOT}/` }];
  for (const [k, v] of Object.entries(root)) {
    const id = (v as { "@odata.id"?: unknown } | null)?.["@odata.id"];
    if (k !== "Links" && typeof id === "string") value.push({ name: k, kind: "Singleton", url: id });
  }
  return { "@odata.context": `${ROOT}/$metadata`, value };
}
