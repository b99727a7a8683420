// Generated doc sections must match the code they are generated from (`npm run docs` updates them).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { fillGenerated } from "../lib/schema-doc.js";
import { generatedDocs } from "../scripts/generated-docs.js";

describe("generated docs", () => {
  for (const [file, sections] of Object.entries(generatedDocs())) {
    for (const [name, body] of Object.entries(sections)) {
      it(`${file} section "${name}" is up to date (run npm run docs)`, () => {
        const doc = readFileSync(file, "utf8");
        expect(fillGenerated(doc, name, body)).toBe(doc);
      });
    }
  }
});
