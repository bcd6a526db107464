// `npm test`: bundles every test/**/*.test.ts (but test/e2e, which the Go package editors/vscode/e2e
// runs in code-server) with esbuild into out/ and runs them with node's test runner, one file at a
// time (the real-CLI tests are heavy on a small machine).
// Extra arguments go to `node --test`, e.g. `npm test -- --test-name-pattern=deny`.
import { spawnSync } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = join(dir, d.name);
    if (d.isDirectory()) return p === join(root, "test", "e2e") ? [] : testFiles(p);
    return d.name.endsWith(".test.ts") ? [p] : [];
  });
}

const entries = testFiles(join(root, "test"));
const outdir = join(root, "out");
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: entries,
  outdir,
  outbase: root,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  sourcemap: "inline",
  // The extension's modules run under node against a recording stand-in.
  alias: { vscode: join(root, "test", "ui", "fakeVscode.ts") },
  logLevel: "warning",
});
const outs = entries.map((e) => join(outdir, relative(root, e)).replace(/\.ts$/, ".js"));
const res = spawnSync(process.execPath, ["--enable-source-maps", "--test", "--test-concurrency=1", ...process.argv.slice(2), ...outs], {
  stdio: "inherit",
  cwd: root,
});
process.exit(res.status ?? 1);
