// The short soak that runs with every `npm test`: 10 s of random faults from the catalogue on the
// demo pod with mission control at the far end. The long one is `npm run soak -- --minutes N`.
import { describe, expect, it } from "vitest";
import { runSoak } from "../bench/soak.js";

describe("soak (short)", () => {
  it("survives 10 s of random faults and loses no event or alarm", async () => {
    const r = await runSoak({ seconds: 10, seed: Number(process.env.SOAK_SEED ?? 7), windowS: 5 });
    expect(r.failures).toEqual([]);
    expect(r.faults).toBeGreaterThan(2);
    expect(r.survived).toBe(r.faults);
    expect(r.events.produced).toBeGreaterThan(0);
    expect(r.events.lost).toBe(0);
    expect(r.spoolDropped).toBe(0);
  }, 180_000);
});
