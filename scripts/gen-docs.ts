// `npm run docs`: regenerates the generated sections of docs/ from the code (schemas, register maps).
// test/docs.test.ts fails when a committed doc is out of date.
import { readFileSync, writeFileSync } from "node:fs";
import { fillGenerated } from "../lib/schema-doc.js";
import { generatedDocs } from "./generated-docs.js";

for (const [file, sections] of Object.entries(generatedDocs())) {
  let doc = readFileSync(file, "utf8");
  for (const [name, body] of Object.entries(sections)) doc = fillGenerated(doc, name, body);
  writeFileSync(file, doc);
  console.log(`updated ${file}`);
}
