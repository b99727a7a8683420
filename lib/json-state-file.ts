// Small JSON state files in the state directory (leak latches, command replay guard, power
// budget, operator decisions, applied gains): state that must survive a restart. Written to a temporary file, flushed and renamed,
// so a crash leaves the old file or the new one, never half of one. Every write also syncs the
// directory after the rename: until then the rename itself may not survive a power cut. A file
// that cannot be read is moved aside (quarantined), never silently overwritten: the caller raises
// an alarm. In a state directory with a manifest (state-manifest.ts), a file that is missing but
// listed there is lost, and reported as a damaged one is.
import { Ajv } from "ajv";
import { existsSync, renameSync } from "node:fs";
import { open, rename } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { readTextBounded } from "./bounded-read.js";
import { inStateDirectory, onceWritten, recordWritten, recordWrittenInBackground, STATE_FILES } from "./state-manifest.js";
import { replaceFile, syncDirectory, syncDirectoryInBackground } from "./sync-directory.js";

export interface StateLoad<T> {
  /** undefined when there was no file (or it was quarantined) */
  value?: T;
  /** the file existed but could not be read (it was moved aside), or it is missing though it was once written */
  problem?: string;
}

/**
 * A state file's check from its JSON Schema: the data as T, or an Error naming what is wrong.
 * No defaults are filled in: a state file says what was saved, or it is damaged.
 */
export function stateFileCheck<T>(schema: object): (data: unknown) => T {
  const validate = new Ajv({ strict: true, useDefaults: false }).compile(schema);
  return (data) => {
    if (!validate(data)) throw new Error(validate.errors?.map((e) => `${e.instancePath || "/"} ${e.message ?? ""}`).join("; ") ?? "invalid");
    return data as T;
  };
}

export class JsonStateFile<T> {
  constructor(
    readonly file: string,
    /** throws if the parsed data is not a valid T */
    private readonly check: (data: unknown) => T,
  ) {}

  /** whether the manifest (if any) lists this file: then no save needs to list it */
  private listed = false;

  load(): StateLoad<T> {
    if (inStateDirectory(this.file) && !(STATE_FILES as readonly string[]).includes(basename(this.file))) {
      throw new Error(`${this.file}: not a state file the manifest knows (lib/state-manifest.ts STATE_FILES)`);
    }
    if (!existsSync(this.file)) {
      if (onceWritten(this.file)) return { problem: `${this.file} is missing, though the state directory's manifest says it was written (deleted?)` };
      return {};
    }
    try {
      // bounded before it is parsed: an oversized file is damaged, and quarantined like one
      const value = this.check(JSON.parse(readTextBounded(this.file)));
      this.listed = true; // openStateDirectory listed every file present
      return { value };
    } catch (err) {
      return { problem: `${this.file} unreadable (${(err as Error).message}); moved to ${quarantine(this.file)}` };
    }
  }

  /** the background saves, one after another (each writes the same temporary file) */
  private background: Promise<void> = Promise.resolve();

  /**
   * save(value) without blocking the event loop: the write and the fsync run on libuv's
   * thread pool. Background saves land in the order they were asked for; the promise settles
   * when this one is on disk (or failed).
   */
  saveInBackground(value: T): Promise<void> {
    const tmp = `${this.file}.bg.tmp`;
    const run = async (): Promise<void> => {
      const fh = await open(tmp, "w", 0o600);
      try {
        await fh.writeFile(JSON.stringify(value));
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, this.file);
      await syncDirectoryInBackground(dirname(this.file));
      if (!this.listed) {
        await recordWrittenInBackground(this.file);
        this.listed = true;
      }
    };
    const done = this.background.then(run, run);
    this.background = done.catch(() => undefined);
    return done;
  }

  /** Writes atomically and durably: the data and the rename are on disk (fsync) before this returns. */
  save(value: T): void {
    replaceFile(this.file, JSON.stringify(value));
    syncDirectory(dirname(this.file));
    this.list();
  }

  /** Lists the file in the manifest once it is on disk (a few syscalls, once in the file's life). */
  private list(): void {
    if (this.listed) return;
    recordWritten(this.file);
    this.listed = true;
  }
}

/** Moves a damaged file aside for later inspection; returns where it went. */
export function quarantine(file: string): string {
  const aside = `${file}.corrupt-${Date.now()}`;
  try {
    renameSync(file, aside);
    return aside;
  } catch {
    return `${file} (could not be moved)`;
  }
}
