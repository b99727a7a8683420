// Replay protection that survives restarts. Every signing key has its own strictly increasing
// sequence number: a command is accepted only if its seq is above the highest one accepted for
// that key, and the new high-water mark is on disk (fsync, off the event loop) before the command
// acts. A replayed or reordered command is refused; the sender re-signs with a fresh seq. Gaps
// are fine.
//
// Why a counter and not a nonce set: the check needs no clock, so a wall-clock jump can neither
// reopen an old command nor expire the memory of one.
//
// If the file is lost or damaged, the high-water marks are unknown. The guard then also refuses
// every command issued before it started (`notBefore`): whatever an attacker may have recorded
// is older than that, and new commands from mission control still work. The marker is written
// to the new file at once and kept in every later write, so it holds across restarts too (it
// lived in memory only, and the next restart reopened every recorded command).
import { join } from "node:path";
import { JsonStateFile } from "../../lib/json-state-file.js";

interface SeqFile {
  keys: Record<string, number>;
  /** wall-clock ms: set once the file had been lost; commands issued before it are refused */
  notBeforeMs?: number;
}

function checkSeqFile(data: unknown): SeqFile {
  const keys = (data as { keys?: unknown } | null)?.keys;
  if (typeof keys !== "object" || keys === null || Array.isArray(keys)) throw new Error("no key map");
  for (const [k, v] of Object.entries(keys)) if (!Number.isSafeInteger(v) || (v as number) < 0) throw new Error(`bad sequence number for key ${k}`);
  const nb = (data as { notBeforeMs?: unknown }).notBeforeMs;
  if (nb !== undefined && (typeof nb !== "number" || !Number.isFinite(nb) || nb < 0)) throw new Error("bad notBeforeMs");
  return data as SeqFile;
}

export type ReplayVerdict = { ok: true } | { ok: false; reason: string };

export class ReplayGuard {
  private readonly store: JsonStateFile<SeqFile>;
  private readonly high = new Map<string, number>();
  /** wall-clock ms: commands issued before this are refused (set when the file was lost) */
  readonly notBeforeMs: number | null;
  readonly problem: string | null;

  constructor(stateDir: string, nowMs: number) {
    this.store = new JsonStateFile(join(stateDir, "command-seq.json"), checkSeqFile);
    const got = this.store.load();
    for (const [k, v] of Object.entries(got.value?.keys ?? {})) this.high.set(k, v);
    this.problem = got.problem ?? null;
    this.notBeforeMs = got.problem === undefined ? (got.value?.notBeforeMs ?? null) : nowMs;
    // the loss marker goes to disk before any command is checked; if it cannot, the authorizer
    // has no guard (the constructor throws) and refuses every command as unavailable
    if (got.problem !== undefined) this.store.save(this.file());
  }

  private file(): SeqFile {
    return { keys: Object.fromEntries(this.high), ...(this.notBeforeMs === null ? {} : { notBeforeMs: this.notBeforeMs }) };
  }

  highWater(keyId: string): number {
    return this.high.get(keyId) ?? 0;
  }

  /**
   * Checks the seq and, if fresh, records it durably. The write and its fsync run off the event
   * loop (a flash disk can take tens of ms); the verdict comes once the seq is on disk, so the
   * command acts only then. The seq is claimed at once, before the write lands: a copy arriving
   * meanwhile is refused. Rejects if the seq cannot be recorded, and then gives the claim back
   * unless a later seq has been claimed since: the disk still holds the old mark.
   */
  async admit(keyId: string, seq: number, issuedAtMs: number): Promise<ReplayVerdict> {
    const last = this.highWater(keyId);
    if (seq <= last) return { ok: false, reason: `seq ${seq} is not above ${last}, the last accepted for key ${keyId} (replayed or out of order)` };
    if (this.notBeforeMs !== null && issuedAtMs < this.notBeforeMs) return { ok: false, reason: "issued before the replay guard's state was lost; re-sign the command" };
    this.high.set(keyId, seq);
    try {
      await this.store.saveInBackground(this.file());
    } catch (err) {
      if (this.high.get(keyId) === seq) this.high.set(keyId, last);
      throw err;
    }
    return { ok: true };
  }
}
