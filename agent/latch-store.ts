// Leak latches that survive a restart. A rack isolated for a leak must not come back into
// service because the agent restarted (systemd restarts it after a crash): the latched racks
// are written to the state directory on every change, and restored, isolated again, at start.
import { join } from "node:path";
import { JsonStateFile } from "../lib/json-state-file.js";

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
  private last = "";

  constructor(stateDir: string | undefined) {
    this.store = stateDir === undefined ? null : new JsonStateFile(join(stateDir, "latches.json"), checkLatchFile);
  }

  get file(): string | null {
    return this.store?.file ?? null;
  }

  load(): LatchLoad {
    const got = this.store?.load() ?? {};
    const racks = got.value?.racks ?? [];
    this.last = JSON.stringify([...racks].sort());
    return got.problem === undefined ? { racks } : { racks, problem: got.problem };
  }

  /** Writes the latched set if it changed. */
  save(racks: string[]): void {
    if (this.store === null) return;
    const sorted = [...racks].sort();
    const key = JSON.stringify(sorted);
    if (key === this.last) return;
    this.store.save({ racks: sorted, savedAt: new Date().toISOString() });
    this.last = key;
  }
}
