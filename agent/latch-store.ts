// Leak latches that survive a restart. A rack isolated for a leak must not come back into
// service because the agent restarted (systemd restarts it after a crash): the latched racks
// are written to the state directory on every change, and restored, isolated again, at start.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface LatchLoad {
  racks: string[];
  /** the file existed but could not be read: it was moved aside */
  problem?: string;
}

export class LatchStore {
  readonly file: string | null;
  private last = "";

  constructor(stateDir: string | undefined) {
    this.file = stateDir === undefined ? null : join(stateDir, "latches.json");
  }

  load(): LatchLoad {
    if (this.file === null || !existsSync(this.file)) return { racks: [] };
    try {
      const data = JSON.parse(readFileSync(this.file, "utf8")) as { racks?: unknown };
      if (!Array.isArray(data.racks) || !data.racks.every((r) => typeof r === "string")) throw new Error("no list of rack names");
      this.last = JSON.stringify([...data.racks].sort());
      return { racks: data.racks };
    } catch (err) {
      const aside = `${this.file}.corrupt-${Date.now()}`;
      try {
        renameSync(this.file, aside);
      } catch {
        // leave it where it is
      }
      return { racks: [], problem: `${this.file} unreadable (${(err as Error).message}); moved to ${aside}` };
    }
  }

  /** Writes the latched set if it changed (write to a temporary file, then rename: never half a file). */
  save(racks: string[]): void {
    if (this.file === null) return;
    const key = JSON.stringify([...racks].sort());
    if (key === this.last) return;
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify({ racks: [...racks].sort(), savedAt: new Date().toISOString() }));
    renameSync(tmp, this.file);
    this.last = key;
  }
}
