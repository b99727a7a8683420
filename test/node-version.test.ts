// The CLI refuses a Node.js older than package.json's engines, first thing, saying which
// (lib/node-version.ts; issue #51: Debian 12's own nodejs is 18).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { nodeVersionProblem } from "../lib/node-version.js";

describe("the Node.js version check", () => {
  it("takes what package.json's engines take, and refuses the rest naming the version found", () => {
    expect((JSON.parse(readFileSync("package.json", "utf8")) as { engines: { node: string } }).engines.node).toBe(">=20.19 <21 || >=22");
    for (const ok of ["20.19.0", "20.20.2", "22.0.0", "24.3.1", process.versions.node]) expect(nodeVersionProblem(ok), ok).toBeNull();
    for (const old of ["18.19.0", "20.18.3", "20.0.0", "21.7.3", "16.20.2"]) expect(nodeVersionProblem(old), old).toMatch(new RegExp(`needs Node\\.js 20\\.19 or later.*this is ${old.replace(/\./g, "\\.")} \\(Debian 12's own nodejs is 18`));
  });
});
