// Leak latches that survive a restart. A rack isolated for a leak must not come back into
// service because the agent restarted (systemd restarts it after a crash): the latched racks
// are written to the state directory on every change, and restored, isolated again, at start.
import { join } from "node:path";
import { JsonStateFile } from "../../lib/json-state-file.js";

export interface LatchLoad {
  racks: string[];
  /** the file existed but could not be read: it was moved aside */
  problem?: string;
}

interface LatchFile {
  racks: string[];
  savedAt: string;
}

function checkLatchFile(data: unknown): LatchFile {
  const racks = (data as { racks?: unknown } | null)?.racks;
  if (!Array.isArray(racks) || !racks.every((r) => typeof r === "string")) throw new Error("no list of rack names");
  return data as LatchFile;
}

export class LatchStore {
  private readonly store: JsonStateFile<LatchFile> | null;
  /** the set on disk or on its way there (sorted, as JSON); null when unknown, so the next save writes */
  private wanted: string | null = null;
  private lastWrite: Promise<void> = Promise.resolve();

  constructor(stateDir: string | undefined) {
    this.store = stateDir === undefined ? null : new JsonStateFile(join(stateDir, "latches.json"), checkLatchFile);
  }

  get file(): string | null {
    return this.store?.file ?? null;
  }

  load(): LatchLoad {
    const got = this.store?.load() ?? {};
    const racks = got.value?.racks ?? [];
    this.wanted = JSON.stringify([...racks].sort());
    return got.problem === undefined ? { racks } : { racks, problem: got.problem };
  }

  /**
   * Writes the latched set if it differs from what is on disk or on its way there. The write is
   * durable (fsync: a leak can trip the controller's own power a moment later) and runs off the
   * event loop, so a slow disk holds up neither the drivers nor the valves. The promise settles
   * when this write has landed or failed; after a failure the next save() writes again. null when
   * there is nothing to write.
   */
  save(racks: string[]): Promise<void> | null {
    if (this.store === null) return null;
    const sorted = [...racks].sort();
    const key = JSON.stringify(sorted);
    if (key === this.wanted) return null;
    this.wanted = key;
    const written = this.store.saveInBackground({ racks: sorted, savedAt: new Date().toISOString() });
    this.lastWrite = written.catch(() => {
      if (this.wanted === key) this.wanted = null;
    });
    return written;
  }

  /** Settles once every write asked for so far has landed or failed: await it before exiting. */
  settled(): Promise<void> {
    return this.lastWrite;
  }
}
