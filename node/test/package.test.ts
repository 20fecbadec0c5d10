/**
 * The built package loads both ways: ESM import and CommonJS require, with its .d.ts shipped; and
 * every test file has a time limit.
 */
import "./timeout.js";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

const PACKAGE = join(import.meta.dirname, "../..");

test("CommonJS require and ESM import give the same classes; .d.ts files ship", () => {
  const names = "LockManager,Lock,LockContendedError,NoQuorumError,LockLostError,ValidityExpiredError,NodeError,WrongKindError";
  const check = `for (const n of "${names}".split(",")) if (typeof m[n] !== "function") throw new Error(n + " missing");`;
  execFileSync(process.execPath, ["-e", `const m = require(${JSON.stringify(PACKAGE)}); ${check}`]);
  execFileSync(process.execPath, ["--input-type=module", "-e", `const m = await import(${JSON.stringify(join(PACKAGE, "dist/esm/index.js"))}); ${check}`]);
  for (const flavour of ["esm", "cjs"]) assert.ok(existsSync(join(PACKAGE, `dist/${flavour}/index.d.ts`)), flavour);
});

test("every test file imports the file time limit first", () => {
  const dir = join(PACKAGE, "test");
  const files = readdirSync(dir).filter((f) => f.endsWith(".test.ts"));
  assert.ok(files.length > 5, `test files found: ${files.join(", ")}`);
  for (const file of files) {
    const first = readFileSync(join(dir, file), "utf8").match(/^import .*$/m)?.[0];
    assert.equal(first, 'import "./timeout.js";', file);
  }
});
