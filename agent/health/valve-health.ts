// A control valve's health from its command and its position feedback: how far the command must
// move before the valve does (the stick band: dead band or stiction), whether it then creeps or
// slips (which of the two), how fast it strokes, and whether it has seized. Pure: the agent feeds
// it each new position sample with the command in force, and reads the figures and problems.
//
// The estimates need movement to see: a valve whose command does not move shows nothing, and the
// figures stay null until enough breakaways (or one stroke) have been seen.

export interface ValveHealthConfig {
  /** a position change larger than this is movement, % (above the feedback's resolution and noise) */
  positionEpsPct: number;
  /** a valve with the command this far from its position, and no movement for stuckS, has seized, % */
  stuckErrorPct: number;
  stuckS: number;
  /** a stick band (dead band or stiction) wider than this is a Warning, % */
  stickBandWarnPct: number;
  /** a full stroke slower than this is a Warning, s */
  travelMaxS: number;
  /** breakaways the stick band is the median of */
  breakaways: number;
  /**
   * how long a command takes to show in the position feedback on a sound valve (the write, the
   * stroke's start, the next poll), ms: only the command the valve has had this long to answer
   * counts toward a breakaway's travel. Without it, a loop whose command moves in steps (a PI
   * loop on a quantised PV with a deadband steps ~2 %) showed a clean valve a "dead band" of
   * each step, 2.0 %, over a 24 h virtual run.
   */
  responseMs: number;
}

export interface ValveHealthFigures {
  /** command − position at the last sample, % */
  trackingErrorPct: number | null;
  /**
   * how far the command had moved from where the valve sat, when the valve broke away: median
   * over the last breakaways, % (null: too few seen). Stiction shows its full width here; a dead
   * band half of its width (the valve then settles half of it short of the command).
   */
  breakawayPct: number | null;
  /** how a breakaway moves: "stiction" (slips the whole way at once) or "deadband" (creeps); null: no band to speak of */
  kind: "stiction" | "deadband" | null;
  /** the stiction, or the dead band's width, %; 0 with no band to speak of (null: too few breakaways seen) */
  stickBandPct: number | null;
  /** full-stroke time at the speed it was last seen to stroke, s (null: no stroke seen) */
  travelS: number | null;
  stuck: boolean;
  /** since when it has not moved against a demand (stuck or not), ms */
  frozenSinceMs: number | null;
}

const RING = 32;

export class ValveHealth {
  private last: { tMs: number; cmd: number; pos: number } | null = null;
  /** where the valve was last seen to move to, and when */
  private anchor: { pos: number; tMs: number } | null = null;
  /** the still samples since the anchor: their time and command (bounded) */
  private readonly still: { tMs: number; cmd: number }[] = [];
  /** a stroke under way: a run of moves one way, each soon after the last, towards a distant command */
  private stroke: { pos: number; tMs: number; dir: number } | null = null;
  private readonly breaks: number[] = [];
  private readonly slips: number[] = [];
  private readonly rates: number[] = [];
  private stuck = false;
  private frozenSinceMs: number | null = null;

  constructor(private c: ValveHealthConfig) {}

  /** New thresholds (a reload); what has been seen is kept. */
  reconfigure(c: ValveHealthConfig): void {
    this.c = c;
  }

  /**
   * A new position sample at tMs, with the command in force then (non-finite values are skipped).
   *
   * Movement is measured from the anchor, the position the valve was last seen to move to, not
   * sample to sample: a clean valve following a slow command moves less than the feedback's
   * resolution between two samples, and would otherwise never be seen to move. A breakaway is a
   * move after at least one still sample: how far the command had got from the valve's position
   * by then (counting only the command the valve had had responseMs to answer) is its size, and
   * how much of that the first move covered says stiction (nearly all: a slip) or a dead band
   * (little: the valve creeps, and stops half the band short).
   */
  sample(tMs: number, cmd: number, pos: number): void {
    if (!Number.isFinite(tMs) || !Number.isFinite(cmd) || !Number.isFinite(pos)) return;
    const c = this.c;
    const prev = this.last;
    this.last = { tMs, cmd, pos };
    const a = this.anchor;
    if (prev === null || a === null || !(tMs > prev.tMs)) {
      this.anchor = { pos, tMs };
      return;
    }
    const move = pos - a.pos;
    if (Math.abs(move) > c.positionEpsPct) {
      const dir = Math.sign(move);
      if (this.still.length > 0) {
        // A slip: the first move covers most of the way to the command, and lands on it: what
        // is left between the command (this sample's or the last: the valve saw one of them)
        // and the position is under half the jump. A dead band stops half
        // its width short, and a stroke the feedback caught midway leaves the rest of its way:
        // both leave at least the move's size. (Judged by where the valve landed, not by its
        // speed over the sample interval: under load the position polls came 300 ms apart and
        // a 4 % slip looked no faster than a 10 %/s stroke; the agent's test then read the
        // stiction as a dead band. The command read here may be a step ahead of the one the
        // valve saw, hence half, not all, of the way.) Its size is the jump. Otherwise the size
        // is how far the command the valve had had responseMs to answer had got from its
        // position (a dead band: half its width).
        const first = Math.abs(pos - prev.pos);
        const toCmd = Math.abs(prev.cmd - a.pos);
        const slip = first >= 0.5 * toCmd && Math.min(Math.abs(cmd - pos), Math.abs(prev.cmd - pos)) < 0.5 * first;
        let answered = a.pos;
        for (const x of this.still) if (x.tMs <= tMs - c.responseMs) answered = x.cmd;
        const size = slip ? first : Math.abs(answered - a.pos);
        if (size <= c.positionEpsPct || Math.sign((slip ? prev.cmd : answered) - a.pos) === dir) {
          push(this.breaks, size);
          push(this.slips, slip ? 1 : 0);
        }
      }
      // a stroke: moves one way, each within 500 ms of the last, towards a command over 10
      // resolutions away; its speed once it has run a second (slips of a sticking valve are
      // seconds apart, so they never make one)
      const s = this.stroke;
      const far = Math.abs(prev.cmd - prev.pos) > 10 * c.positionEpsPct;
      if (s !== null && s.dir === dir && far && tMs - a.tMs <= 500) {
        if (tMs - s.tMs >= 1000) push(this.rates, Math.abs(pos - s.pos) / ((tMs - s.tMs) / 1000));
      } else {
        // it sat at the anchor until the sample before this one
        this.stroke = far ? { pos: a.pos, tMs: prev.tMs, dir } : null;
      }
      this.anchor = { pos, tMs };
      this.still.length = 0;
      this.frozenSinceMs = null;
      this.stuck = false;
      return;
    }
    this.still.push({ tMs, cmd });
    if (this.still.length > 4096) this.still.splice(0, 2048);
    if (Math.abs(cmd - pos) > c.stuckErrorPct) {
      this.frozenSinceMs ??= a.tMs;
      if (tMs - this.frozenSinceMs >= c.stuckS * 1000) this.stuck = true;
    } else {
      this.frozenSinceMs = null;
      this.stuck = false;
    }
  }

  figures(): ValveHealthFigures {
    const n = this.c.breakaways;
    const breakaway = this.breaks.length >= n ? median(this.breaks.slice(-n)) : null;
    // how it moved says which only when there is a band to speak of (a clean valve's breakaway
    // is a move of the feedback's resolution after a command change of about as much)
    const banded = breakaway !== null && breakaway > 3 * this.c.positionEpsPct;
    // most of the breakaways slips: stiction
    const kind = banded ? (mean(this.slips.slice(-n)) >= 0.5 ? "stiction" : "deadband") : null;
    const rate = this.rates.length >= 3 ? median(this.rates.slice(-8)) : null;
    return {
      trackingErrorPct: this.last === null ? null : this.last.cmd - this.last.pos,
      breakawayPct: breakaway,
      kind,
      stickBandPct: breakaway === null ? null : kind === "stiction" ? breakaway : kind === "deadband" ? 2 * breakaway : 0,
      travelS: rate === null || !(rate > 0) ? null : 100 / rate,
      stuck: this.stuck,
      frozenSinceMs: this.frozenSinceMs,
    };
  }

  /** What is wrong: its kind, and in words with the figures (none: nothing seen). */
  problems(): { kind: "stuck" | "stiction" | "deadband" | "slow"; text: string }[] {
    const f = this.figures();
    const c = this.c;
    const out: { kind: "stuck" | "stiction" | "deadband" | "slow"; text: string }[] = [];
    if (f.stuck && this.last !== null) out.push({ kind: "stuck", text: `stuck: position ${this.last.pos.toFixed(1)} % against a command of ${this.last.cmd.toFixed(1)} % for ${Math.round((this.last.tMs - (f.frozenSinceMs ?? this.last.tMs)) / 1000)} s` });
    if (f.stickBandPct !== null && f.stickBandPct > c.stickBandWarnPct) {
      const stiction = f.kind === "stiction";
      out.push({ kind: stiction ? "stiction" : "deadband", text: `${stiction ? "stiction (stick-slip)" : "dead band"} of ${f.stickBandPct.toFixed(1)} %: the command moves that far before the valve answers (limit ${c.stickBandWarnPct} %)` });
    }
    if (f.travelS !== null && f.travelS > c.travelMaxS) out.push({ kind: "slow", text: `slow: a full stroke takes ${f.travelS.toFixed(0)} s (limit ${c.travelMaxS} s)` });
    return out;
  }
}

function push(a: number[], x: number): void {
  a.push(x);
  if (a.length > RING) a.shift();
}

function mean(a: readonly number[]): number {
  return a.reduce((x, y) => x + y, 0) / a.length;
}

function median(a: readonly number[]): number {
  const s = [...a].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}
