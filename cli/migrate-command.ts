// `podwarden check-config -c <file> --migrate [--out <new.yaml>]` (issue #51 item 3): the config
// rewritten by every migration that applies (agent/config/migrations.ts), each change and its
// reason, and whether the result is valid. The migrated file goes to stdout (or --out), the
// changes to stderr, so `> new.yaml` keeps a clean file. The operator's file itself is never
// written: they read the changes, then put the new file in place.
import { ConfigError, parseYaml, readConfigText } from "../lib/config-file.js";
import { agentConfigFromData } from "../agent/config/load.js";
import { migrateConfigText } from "../agent/config/migrations.js";
import { resolve } from "node:path";
import { writeFileSync } from "node:fs";
import { UsageError } from "./usage-error.js";

export interface MigrateOptions {
  config: string;
  out?: string;
  stdout: (text: string) => void;
  stderr: (line: string) => void;
}

/** 0: the migrated config is valid; 2: it still is not (its problems listed, each migration's undecided ones first). */
export function migrateCommand(o: MigrateOptions): number {
  if (o.out !== undefined && resolve(o.out) === resolve(o.config)) throw new UsageError("--out: not the config itself; write the migrated file beside it, read the changes, then put it in place");
  const text = readConfigText(o.config);
  const m = migrateConfigText(text, o.config);
  if (m.changes.length === 0) o.stderr(`${o.config}: no migration applies`);
  for (const c of m.changes) o.stderr(`migrated ${c.path} [${c.migration}]: ${c.what}`);
  for (const p of m.cannot) o.stderr(`to decide: ${p}`);
  if (o.out !== undefined) writeFileSync(o.out, m.text, { mode: 0o640 });
  else o.stdout(m.text);
  const where = o.out ?? "the migrated config";
  try {
    // validated as if it were the file itself: its device profiles are found beside it
    agentConfigFromData(parseYaml(m.text, o.config) ?? {}, o.config);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    o.stderr(`${where}: still invalid\n${err.problems.map((p) => `  - ${p}`).join("\n")}`);
    return 2;
  }
  o.stderr(`${where}: valid${m.changes.length > 0 ? ` (${m.changes.length} change${m.changes.length === 1 ? "" : "s"}); check it with podwarden check-config, then put it in place of ${o.config}` : ""}`);
  return 0;
}
