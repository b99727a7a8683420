// 4–20 mA transmitters read through an analogue input module: the register holds the loop
// current (after the point's scale and offset, in mA), which maps linearly 4 mA → `at4mA` and
// 20 mA → `at20mA` in engineering units. A current outside NAMUR NE 43's valid band is not a
// measurement but a signal that something failed: below 3.6 mA a broken wire, a dead transmitter
// or its downscale failure alarm; above 21 mA a short or its upscale failure alarm. Such a
// reading is never passed on as a value the PID could use.

export interface LoopCurrentConfig {
  /** engineering value at 4 mA */
  at4mA: number;
  /** engineering value at 20 mA */
  at20mA: number;
  /** a current below this is a fault, mA (NE 43: 3.6) */
  faultBelowMa: number;
  /** a current above this is a fault, mA (NE 43: 21.0) */
  faultAboveMa: number;
}

export const LOOP_CURRENT_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["at4mA", "at20mA"],
  description: "4–20 mA transmitter: the point's value (after scale and offset) is the loop current in mA, converted to engineering units; NAMUR NE 43 failure currents make the point invalid",
  properties: {
    at4mA: { type: "number", description: "engineering value at 4 mA" },
    at20mA: { type: "number", description: "engineering value at 20 mA" },
    faultBelowMa: { type: "number", minimum: 0, maximum: 4, default: 3.6, description: "a current below this is a failure (broken wire, downscale alarm), mA" },
    faultAboveMa: { type: "number", minimum: 20, maximum: 30, default: 21, description: "a current above this is a failure (short, upscale alarm), mA" },
  },
};

/** The engineering value of a loop current, or NaN if the current signals a failure (or is not a number). */
export function fromLoopCurrent(mA: number, c: LoopCurrentConfig): number {
  if (!(mA >= c.faultBelowMa && mA <= c.faultAboveMa)) return NaN;
  return c.at4mA + ((mA - 4) * (c.at20mA - c.at4mA)) / 16;
}

/** What a failure current means, in words (null for a current inside the valid band). */
export function failureCurrentWords(mA: number, c: LoopCurrentConfig): string | null {
  // every read of a 4–20 mA point comes through here: a valid current builds no string
  if (mA >= c.faultBelowMa && mA <= c.faultAboveMa) return null;
  const at = `loop current ${Number.isFinite(mA) ? mA.toFixed(2) : String(mA)} mA`;
  if (mA < c.faultBelowMa) return `${at}, below ${c.faultBelowMa} mA: a broken loop, a dead transmitter or its downscale failure alarm`;
  if (mA > c.faultAboveMa) return `${at}, above ${c.faultAboveMa} mA: a short or the transmitter's upscale failure alarm`;
  return `${at}: not a number`;
}
