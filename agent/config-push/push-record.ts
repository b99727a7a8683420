// What a pushed config leaves in the state directory, and what the daemon runs because of it
// (docs/fleet.md, Config pushed to a fleet):
//   config-push.json      the record below (a state file: fsynced, in the manifest)
//   config-pushed.yaml    the pushed config the daemon runs, when `running` is "pushed"
//   config-previous.yaml  during a trial over an earlier push: that push, to be put back
// The file given with -c stays the operator's: a push never writes it. A pushed config runs
// only over the -c file it was pushed over (`localHash`): an operator who edits that file takes
// the pod back to it at the next reload or start.
import { existsSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { readTextBounded } from "../../lib/bounded-read.js";
import { JsonStateFile, stateFileCheck } from "../../lib/json-state-file.js";
import { arr, int, nullable, obj, oneOf, str, type Infer } from "../../lib/schema-builders.js";
import { replaceFile, syncDirectory } from "../../lib/sync-directory.js";

export const PUSH_RECORD_FILE = "config-push.json";
export const PUSHED_FILE = "config-pushed.yaml";
export const PREVIOUS_FILE = "config-previous.yaml";
/** where a pushed config is written to be read and checked before anything else is decided */
export const CANDIDATE_FILE = "config-candidate.yaml";

const hash = str("sha256 of a config as loaded (docs/agent.md)", { pattern: "^[0-9a-f]{64}$" });
const source = oneOf(["local", "pushed"] as const, undefined, "the file given with -c, or config-pushed.yaml");

const RECORD_SCHEMA = obj(
  {
    running: source,
    /** the -c file's hash the pushed config was pushed over; null when the local file runs */
    localHash: nullable(hash),
    /** config-pushed.yaml's hash, when it runs */
    pushedHash: nullable(hash),
    /** during a trial: what is put back if it fails */
    previous: nullable(obj({ source, hash }, "the config that ran before the push on trial", ["source", "hash"])),
    /** the last push taken, whatever became of it */
    last: nullable(
      obj(
        {
          id: str("the push's transaction", { maxLength: 64 }),
          by: str("who signed it", { maxLength: 80 }),
          hash,
          state: oneOf(["trial", "applied", "reverted"] as const, undefined, "on trial, kept, or put back"),
          since: str("when it was taken", { maxLength: 40 }),
          at: str("when it reached its state", { maxLength: 40 }),
          windowS: int(1, 3600, undefined, "its health window, s"),
          why: arr(str("a reason", { maxLength: 2000 }), "why it was put back", { maxItems: 20 }),
        },
        "the last push",
        ["id", "by", "hash", "state", "since", "at", "windowS", "why"],
      ),
    ),
  },
  "config-push.json",
  ["running", "localHash", "pushedHash", "previous", "last"],
);

export type PushRecord = Infer<typeof RECORD_SCHEMA>;
export type LastPush = NonNullable<PushRecord["last"]>;

export const NO_PUSH: PushRecord = { running: "local", localHash: null, pushedHash: null, previous: null, last: null };

/** The record and the pushed files of one state directory. */
export class PushFiles {
  private readonly store: JsonStateFile<PushRecord>;

  constructor(readonly dir: string) {
    this.store = new JsonStateFile(join(dir, PUSH_RECORD_FILE), stateFileCheck<PushRecord>(RECORD_SCHEMA));
  }

  path(file: typeof PUSHED_FILE | typeof PREVIOUS_FILE | typeof CANDIDATE_FILE): string {
    return join(this.dir, file);
  }

  /** The record, and what was wrong with it when it could not be read (then: no push). */
  load(): { record: PushRecord; problem?: string } {
    const got = this.store.load();
    return { record: got.value ?? NO_PUSH, ...(got.problem === undefined ? {} : { problem: got.problem }) };
  }

  /** Written and fsynced before it returns: a push's state is never behind what the pod runs. */
  save(r: PushRecord): void {
    this.store.save(r);
  }

  /** `text` as `file`, durably: written, fsynced and renamed into place, the directory synced. */
  write(file: typeof CANDIDATE_FILE | typeof PREVIOUS_FILE, text: string): void {
    replaceFile(this.path(file), text);
    syncDirectory(this.dir);
  }

  /** `from` over `to`, durably (a rename in the same directory). */
  move(from: typeof CANDIDATE_FILE | typeof PREVIOUS_FILE, to: typeof PUSHED_FILE): void {
    renameSync(this.path(from), this.path(to));
    syncDirectory(this.dir);
  }

  /** The running pushed config kept aside while another is on trial. */
  keepAside(): void {
    this.write(PREVIOUS_FILE, readTextBounded(this.path(PUSHED_FILE)));
  }

  remove(file: typeof PREVIOUS_FILE | typeof CANDIDATE_FILE): void {
    if (existsSync(this.path(file))) rmSync(this.path(file));
  }
}
