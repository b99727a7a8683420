// Config migrations (issue #51 item 3): each schema change that rejects a config an earlier
// podwarden accepted ships a migration here, which rewrites such a config to say what it said
// then, in today's keys, and explains the change. `podwarden check-config -c <file> --migrate`
// prints the migrated file and each change with its reason; the operator's file is never
// rewritten in place. A config that a migration would change and that does not load names
// that command in its error (loadAgentConfig), and a removed key names its replacement
// (REMOVED_KEYS, in the "unknown key" error).
//
// A migration edits the YAML document, not the parsed data, so the operator's comments, order
// and layout survive; each value it writes carries a comment saying it was migrated.
//
// No podwarden version is tagged yet: each migration names the commit whose schema change it
// answers, and test/config-migrations.test.ts loads the configs shipped before each of them
// (test/fixtures/old-configs/).
import { isMap, isScalar, parseDocument, type Document } from "yaml";
import { expandProfiles, profileDirs } from "./device-profiles.js";

export interface MigrationChange {
  /** the migration's id */
  migration: string;
  /** the key path it changed, e.g. `racks[2].noCoolant` */
  path: string;
  /** what it did and why */
  what: string;
}

export interface Migration {
  id: string;
  /** the commit (and its date) whose schema change made such configs invalid */
  since: string;
  /** edits the document; pushes each change made, and each problem it cannot settle alone */
  apply(doc: Document, view: ConfigView, change: (path: string, what: string) => void, cannot: (problem: string) => void): void;
}

/**
 * What a migration decides from: each rack's name and the outputs it has once device profiles are
 * expanded (a rack's outputs may come from its device's profile: profiles/, issue #52), while it
 * edits the document as written.
 */
export interface ConfigView {
  racks: { name: string; outputs: ReadonlySet<string> }[];
}

/** A key the schema no longer has, and what took its place: named in the "unknown key" error. */
export const REMOVED_KEYS: ReadonlyMap<string, { since: string; replacement: string }> = new Map([
  [
    "control.pumpLoop.safeOnLeak",
    {
      since: "5ee1c07, 2026-12-02",
      replacement:
        "it acted on nothing: the pump serves every rack and holds its speed at a leak (an unproven isolation may stop it: supervisor.escalation.pumpStop); the pump's declared safe states are control.pumpLoop.safeOnSensorFault, safeOnShutdown and safeOnLeaseLoss (docs/safety.md). Delete the key",
    },
  ],
]);

type Path = (string | number)[];

const has = (doc: Document, path: Path): boolean => doc.hasIn(path);

/** Sets a value where there was none, with a comment saying it was migrated. */
function setMigrated(doc: Document, path: Path, value: unknown, why: string): void {
  // a written value is replaced in its place; the key is added where it was left to its default
  doc.setIn(path, doc.createNode(value));
  const node = doc.getIn(path, true);
  if (isScalar(node) || isMap(node)) node.comment = ` migrated (podwarden check-config --migrate): ${why}`;
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);

/** The view of a parsed config, its device profiles expanded where they can be. */
function viewOf(data: unknown, file: string): ConfigView {
  const problems: string[] = [];
  const expanded = expandProfiles(data, profileDirs(file), problems);
  const racks = isObj(expanded) && Array.isArray(expanded.racks) ? (expanded.racks as unknown[]) : [];
  return {
    racks: racks.map((r, i) => ({
      name: isObj(r) && typeof r.name === "string" ? r.name : `racks[${i}]`,
      outputs: new Set(isObj(r) && isObj(r.outputs) ? Object.keys(r.outputs) : []),
    })),
  };
}

/**
 * A flag that defaults on and needs a rack output: set false where no rack has that output (what
 * it did then), left for the operator where only some racks have it.
 */
function offWhereNoRackHas(doc: Document, view: ConfigView, change: (path: string, what: string) => void, cannot: (problem: string) => void, flag: Path, output: string, offMeans: string, before: string, still: string): void {
  const n = view.racks.length;
  const key = flag.join(".");
  // false needs nothing; true, written or by default, did nothing where no rack had the output
  if (n === 0 || doc.getIn(flag) === false) return;
  const without: number[] = [];
  for (let i = 0; i < n; i++) if (!view.racks[i].outputs.has(output)) without.push(i);
  if (without.length === 0) return;
  if (without.length < n) {
    // some racks have the output and some not: no single setting says what it did before
    const names = without.map((i) => view.racks[i].name).join(", ");
    cannot(`${key}: ${names} ${without.length === 1 ? "has" : "have"} no outputs.${output} while other racks have one: give ${without.length === 1 ? "it" : "them"} one, or set ${flag[flag.length - 1]}: false (${offMeans})`);
    return;
  }
  setMigrated(doc, flag, false, `no rack has a ${output} output`);
  change(key, `set to false: no rack has outputs.${output}, so ${before}; since 8e001b1 true (the default) without those outputs is an error rather than a silent no-op. ${still}`);
}

export const MIGRATIONS: readonly Migration[] = [
  {
    // 784a4cc: coolant and power together. Before it an isolated rack kept its power, and a rack
    // with no power output was valid; since, noCoolant.action defaults to power-off, which needs
    // outputs.powerOff. Such a rack is said to have no power output, explicitly: what it did then.
    id: "no-coolant-power-output",
    since: "784a4cc, 2026-12-01",
    apply(doc, view, change, cannot) {
      for (let i = 0; i < view.racks.length; i++) {
        if (has(doc, ["racks", i, "noCoolant"])) continue;
        const off = view.racks[i].outputs.has("powerOff");
        const cap = view.racks[i].outputs.has("powerCap");
        if (off) continue;
        if (cap) {
          // the cap a rack may keep without coolant is the plant's to say, not a migration's
          cannot(
            `racks[${i}].noCoolant: ${view.racks[i].name} has outputs.powerCap but no powerOff, and the default noCoolant.action power-off needs powerOff: set noCoolant: { action: cap, capKw: <the draw it may keep without coolant> } (or none, which leaves an isolated rack's power on)`,
          );
          continue;
        }
        setMigrated(doc, ["racks", i, "noCoolant"], { action: "none" }, "this rack has no power output; an isolated rack keeps its power (the Warning no-power-output alarm says so from the start)");
        change(
          `racks[${i}].noCoolant`,
          `set to { action: none }: ${view.racks[i].name} has no power output (outputs.powerOff or powerCap), which every config said before coolant and power moved together (784a4cc); now it is said explicitly. Its consequence: an isolated rack keeps its power, its own thermal protection the only thing that stops it, and the Warning alarm no-power-output:${view.racks[i].name} stands from the start. Give the rack a powerOff output to have podwarden power it off with its coolant`,
        );
      }
    },
  },
  {
    // 8e001b1: a configured escalation with no output to act on became an error. Before it,
    // supervisor.powerBudget.writeCaps (default true) with no rack's powerCap output computed
    // caps and wrote none, and supervisor.escalation.rackPowerOff (default true) with no rack's
    // powerOff output requested what nothing could do; since, each is an error until it is set
    // false, which says the same.
    id: "escalation-without-outputs",
    since: "8e001b1, 2026-12-01",
    apply(doc, view, change, cannot) {
      offWhereNoRackHas(doc, view, change, cannot, ["supervisor", "powerBudget", "writeCaps"], "powerCap", "then no rack's cap is in force", "no cap was ever written", "Telemetry reports each rack's powerCapKw as null, as before");
      offWhereNoRackHas(doc, view, change, cannot, ["supervisor", "escalation", "rackPowerOff"], "powerOff", "then an unproven isolation powers no rack off", "no rack was ever powered off by an unproven isolation", "An unproven isolation still raises isolation-failed (Critical)");
    },
  },
  {
    id: "pump-loop-safe-on-leak",
    since: "5ee1c07, 2026-12-02",
    apply(doc, _view, change) {
      const path = ["control", "pumpLoop", "safeOnLeak"];
      if (!has(doc, path)) return;
      doc.deleteIn(path);
      // a pumpLoop left empty goes too: `pumpLoop: {}` says nothing
      const loop = doc.getIn(["control", "pumpLoop"], true);
      if (isMap(loop) && loop.items.length === 0) doc.deleteIn(["control", "pumpLoop"]);
      change("control.pumpLoop.safeOnLeak", `removed: ${REMOVED_KEYS.get("control.pumpLoop.safeOnLeak")!.replacement.replace(/\. Delete the key$/, "")}`);
    },
  },
];

export interface MigrationResult {
  /** the migrated file (the input unchanged when nothing applies) */
  text: string;
  changes: MigrationChange[];
  /** what a migration found and could not settle alone: the operator's decision */
  cannot: string[];
}

/**
 * Runs every migration over a config's text; `file` is where it lives (its device profiles are
 * found beside it). Syntax errors are the loader's to report: nothing applies.
 */
export function migrateConfigText(text: string, file: string): MigrationResult {
  const doc = parseDocument(text, { uniqueKeys: true, merge: true });
  if (doc.errors.length > 0 || !isMap(doc.contents)) return { text, changes: [], cannot: [] };
  const changes: MigrationChange[] = [];
  const cannot: string[] = [];
  for (const m of MIGRATIONS) {
    // each migration sees the config as the ones before it left it
    m.apply(
      doc,
      viewOf(doc.toJS(), file),
      (path, what) => changes.push({ migration: `${m.id} (${m.since})`, path, what }),
      (problem) => cannot.push(`${problem} [${m.id}, ${m.since}]`),
    );
  }
  return { text: changes.length === 0 ? text : doc.toString({ lineWidth: 0, flowCollectionPadding: false }), changes, cannot };
}

/** The hint for a removed key, by its path with indices dropped (`racks[2].x` is `racks.x`). */
export function removedKeyHint(path: string): string | undefined {
  const r = REMOVED_KEYS.get(path.replace(/\[\d+\]/g, ""));
  return r === undefined ? undefined : `removed (${r.since}): ${r.replacement}; podwarden check-config --migrate does it`;
}
