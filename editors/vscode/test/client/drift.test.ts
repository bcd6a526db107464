// src/client/protocol.ts is generated from extension/protocol.schema.json and committed; this test
// regenerates it and fails when the two differ, i.e. when the schema changed without `npm run gen`.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot, tempDir } from "./helpers";

test("protocol.ts matches extension/protocol.schema.json", () => {
  const pkg = join(repoRoot(), "editors", "vscode");
  const fresh = join(tempDir("claude-relay-vscode-gen-"), "protocol.ts");
  execFileSync(process.execPath, [join(pkg, "scripts", "gen-protocol.mjs"), fresh], { cwd: pkg, stdio: "pipe" });
  const committed = readFileSync(join(pkg, "src", "client", "protocol.ts"), "utf8");
  assert.ok(
    readFileSync(fresh, "utf8") === committed,
    "src/client/protocol.ts is out of date with extension/protocol.schema.json: run `npm run gen` in editors/vscode and commit the result",
  );
});
