// The state directory's manifest: which state files it has held (issue #54). A state file that
// is missing but was once written is damage, handled as a damaged one is (moved aside, a
// `state:*` alarm, the file's safe state); before, a deleted `latches.json` read as a first start
// and reopened a leak-latched rack.
//
// The manifest is a folder, `<stateDir>/.manifest/`, with one empty marker per state file ever
// written there, made with O_EXCL and the folder synced. One file per entry, not one JSON list:
// the control plane's thread and the service plane's (the replay guard) both write state files,
// and each adds its own entry without a read-modify-write of a shared file that the other could
// undo.
//
// The manifest says nothing until the daemon opens the directory (openStateDirectory, before
// anything reads a state file). Then:
// - a directory holding no state file, or a start stated as the first (`podwarden run
//   --first-start`): the manifest is made from the files present, with nothing lost;
// - a directory with its manifest: as it says;
// - a directory holding state files but no manifest (it was deleted, or the directory was made
//   by a version before it): every state file is taken as once written, so each one absent is
//   lost, and the opening says so for an alarm. A version before the manifest is upgraded with
//   one `--first-start` (docs/operations.md).
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { open } from "node:fs/promises";
import { syncDirectory, syncDirectoryInBackground } from "./sync-directory.js";

/**
 * Every state file the daemon keeps in its state directory. A JsonStateFile of another name in
 * a state directory is refused (it throws): a file the manifest cannot know would vanish unseen.
 */
export const STATE_FILES = ["latches.json", "operator.json", "command-seq.json", "power-budget.json", "gains.json", "strokes.json", "sparkplug-bdseq.json", "release.json", "config-push.json"] as const;

const MANIFEST = ".manifest";

export interface StateDirectoryOpening {
  /** fresh: no state yet; kept: the manifest was there; adopted: a stated first start took what is there; lost: state without a manifest */
  how: "fresh" | "kept" | "adopted" | "lost";
  /** the state files present at the opening */
  present: string[];
  /** for `lost`: what to raise an alarm with */
  problem?: string;
}

function manifestDir(stateDir: string): string {
  return join(stateDir, MANIFEST);
}

/**
 * Opens `stateDir` as the daemon's state directory, creating it (0700) if need be, and makes its
 * manifest if it has none (see the file's comment). Synchronous and small: it runs once, before
 * the planes start.
 */
export function openStateDirectory(stateDir: string, o: { firstStart: boolean }): StateDirectoryOpening {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const present = STATE_FILES.filter((f) => existsSync(join(stateDir, f)));
  const dir = manifestDir(stateDir);
  if (existsSync(dir) && !o.firstStart) {
    // one written before its entry (a crash between the two) is listed now
    if (present.map((f) => mark(stateDir, f)).some(Boolean)) syncDirectory(dir);
    return { how: "kept", present };
  }
  // damaged files moved aside count as state held: the directory was used
  const used = present.length > 0 || readdirSync(stateDir).some((f) => STATE_FILES.some((s) => f.startsWith(`${s}.corrupt-`)));
  // a first start (stated, or an empty directory) lists what is there, and drops an entry for a
  // file absent now; state without a manifest lists every state file, so each absent one is lost
  const listed: readonly string[] = !used || o.firstStart ? present : STATE_FILES;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const f of STATE_FILES) {
    if (listed.includes(f)) mark(stateDir, f);
    else rmSync(join(dir, f), { force: true });
  }
  syncDirectory(dir);
  syncDirectory(stateDir);
  if (!used || o.firstStart) return { how: o.firstStart ? "adopted" : "fresh", present };
  const lost = STATE_FILES.filter((f) => !present.includes(f));
  return {
    how: "lost",
    present,
    problem: `the state directory ${stateDir} holds state (${present.join(", ") || "damaged files"}) but no manifest: each state file absent is taken as lost (${lost.join(", ")}); after an upgrade from a version without one, start once with --first-start`,
  };
}

/** Whether `file`'s state directory has a manifest, and it lists `file`: its absence is then a loss. */
export function onceWritten(file: string): boolean {
  return existsSync(join(manifestDir(dirname(file)), basename(file)));
}

/** Whether `file` lies in a directory opened as a state directory (it has a manifest). */
export function inStateDirectory(file: string): boolean {
  return existsSync(manifestDir(dirname(file)));
}

/**
 * Lists `file` in its directory's manifest, if the directory has one and the file is not listed
 * yet; the entry is on disk (the folder synced) when this returns. Called after each save: a crash
 * between the save and the entry leaves a file present and unlisted, listed at the next opening.
 */
export function recordWritten(file: string): void {
  const stateDir = dirname(file);
  if (!inStateDirectory(file) || onceWritten(file)) return;
  mark(stateDir, basename(file));
  syncDirectory(manifestDir(stateDir));
}

/**
 * recordWritten() off the event loop, for a save made there (JsonStateFile.saveInBackground): the
 * entry's creation and the folder's fsync on libuv's thread pool, so that the first save of a
 * latch cannot hold up the thread that writes the valves.
 */
export async function recordWrittenInBackground(file: string): Promise<void> {
  const dir = manifestDir(dirname(file));
  if (!inStateDirectory(file)) return;
  try {
    await (await open(join(dir, basename(file)), "wx", 0o600)).close();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return;
    throw err;
  }
  await syncDirectoryInBackground(dir);
}

/** Makes `name`'s entry; true if it was not there. */
function mark(stateDir: string, name: string): boolean {
  try {
    closeSync(openSync(join(manifestDir(stateDir), name), "wx", 0o600));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    return false;
  }
}
