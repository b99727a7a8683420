// The state directory's manifest (lib/state-manifest.ts): a state file missing but once written
// is a loss, reported as a damaged file is; a first start is an empty directory or a stated one.
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { JsonStateFile } from "../lib/json-state-file.js";
import { openStateDirectory, STATE_FILES } from "../lib/state-manifest.js";
import { tempDir } from "./helpers/temp-dirs.js";

const anything = (d: unknown): unknown => d;
const file = (dir: string, name = "latches.json"): JsonStateFile<unknown> => new JsonStateFile(join(dir, name), anything);

describe("the state directory's manifest", () => {
  it("in an empty directory: a fresh start, nothing lost; a file once saved and then deleted is a loss", () => {
    const dir = tempDir("pw-manifest-");
    expect(openStateDirectory(dir, { firstStart: false })).toMatchObject({ how: "fresh", present: [] });
    expect(statSync(join(dir, ".manifest")).mode & 0o777).toBe(0o700);
    expect(file(dir).load()).toEqual({}); // never written: nothing to restore, nothing lost
    file(dir).save({ racks: ["rack-2"] });
    expect(statSync(join(dir, ".manifest", "latches.json")).mode & 0o777).toBe(0o600);
    rmSync(join(dir, "latches.json"));
    // the next start: the manifest is kept, and the deletion is seen
    expect(openStateDirectory(dir, { firstStart: false }).how).toBe("kept");
    expect(file(dir).load().problem).toMatch(/latches.json is missing, though the state directory's manifest says it was written/);
    // another file, never written, is still no loss
    expect(file(dir, "gains.json").load()).toEqual({});
  });

  it("lists a file saved in the background too", async () => {
    const dir = tempDir("pw-manifest-");
    openStateDirectory(dir, { firstStart: false });
    await file(dir, "operator.json").saveInBackground({ isolatedRacks: [] });
    rmSync(join(dir, "operator.json"));
    expect(file(dir, "operator.json").load().problem).toMatch(/missing/);
  });

  it("a directory holding state but no manifest: every state file absent is lost, and the opening says so", () => {
    const dir = tempDir("pw-manifest-");
    writeFileSync(join(dir, "command-seq.json"), JSON.stringify({ keys: {} }));
    const opening = openStateDirectory(dir, { firstStart: false });
    expect(opening.how).toBe("lost");
    expect(opening.problem).toMatch(/holds state \(command-seq.json\) but no manifest.*latches.json.*--first-start/);
    for (const f of STATE_FILES.filter((n) => n !== "command-seq.json")) expect(file(dir, f).load().problem, f).toMatch(/missing/);
    expect(file(dir, "command-seq.json").load().value).toEqual({ keys: {} });
  });

  it("a damaged file moved aside counts as state held", () => {
    const dir = tempDir("pw-manifest-");
    writeFileSync(join(dir, "latches.json.corrupt-1"), "{");
    expect(openStateDirectory(dir, { firstStart: false }).how).toBe("lost");
  });

  it("a stated first start takes the files present, and drops the entries of those absent", () => {
    const dir = tempDir("pw-manifest-");
    openStateDirectory(dir, { firstStart: false });
    file(dir).save({ racks: [] });
    file(dir, "gains.json").save({ loops: [] });
    rmSync(join(dir, "latches.json"));
    expect(openStateDirectory(dir, { firstStart: true })).toMatchObject({ how: "adopted", present: ["gains.json"] });
    expect(file(dir).load()).toEqual({});
    expect(readdirSync(join(dir, ".manifest"))).toEqual(["gains.json"]);
    // and the manifest is kept at the next start
    rmSync(join(dir, "gains.json"));
    expect(file(dir, "gains.json").load().problem).toMatch(/missing/);
  });

  it("lists at the opening a file saved before its entry was made (a crash between the two)", () => {
    const dir = tempDir("pw-manifest-");
    openStateDirectory(dir, { firstStart: false });
    writeFileSync(join(dir, "strokes.json"), "{}");
    openStateDirectory(dir, { firstStart: false });
    expect(existsSync(join(dir, ".manifest", "strokes.json"))).toBe(true);
  });

  it("refuses a state file the manifest cannot know, in a state directory; leaves other directories alone", () => {
    const dir = tempDir("pw-manifest-");
    openStateDirectory(dir, { firstStart: false });
    expect(() => file(dir, "mystery.json").load()).toThrow(/not a state file the manifest knows/);
    const other = tempDir("pw-not-state-");
    const f = file(other, "acked");
    f.save({ ackedId: 1 });
    rmSync(join(other, "acked"));
    expect(f.load()).toEqual({});
    expect(existsSync(join(other, ".manifest"))).toBe(false);
  });
});
