// Activation starts nothing (issue 25): no helper, so no CLI discovery
// (`npm root -g`), until a command needs the helper. activate() runs against
// the recording stand-in for `vscode` (fakeVscode.ts) with a fake helper
// that notes each start in a file.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type * as vscode from "vscode";
import { activate } from "../../src/extension";
import * as fake from "./fakeVscode";

/** A helper that appends its pid to started, says ready and waits for stdin to close. */
function fakeHelper(dir: string, started: string): string {
  const file = join(dir, "claude-relay");
  writeFileSync(
    file,
    [
      "#!/bin/sh",
      `echo $$ >> '${started}'`,
      `printf '{"event":"ready","protocol":2,"pid":%s,"timestamp":"2026-01-01T00:00:00Z"}\\n' $$`,
      "exec cat >/dev/null",
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  return file;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Lets every promise the extension has settled run its callbacks. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test("activation starts no helper; a settings change does not either; the first command that needs it does", async (t) => {
  fake.reset();
  const dir = mkdtempSync(join(tmpdir(), "claude-relay-activation-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const started = join(dir, "started");
  fake.settings.set("claudeRelay.path", fakeHelper(dir, started));
  const secretsAsked: string[] = [];
  const subscriptions: { dispose(): unknown }[] = [];
  const ctx = {
    subscriptions,
    extensionPath: dir,
    secrets: {
      get: (key: string) => {
        secretsAsked.push(key);
        return Promise.resolve(undefined);
      },
      store: () => Promise.resolve(),
      delete: () => Promise.resolve(),
    },
  };
  t.after(() => {
    for (const d of subscriptions) {
      d.dispose();
    }
  });

  activate(ctx as unknown as vscode.ExtensionContext);
  await settle();
  // Activation did its part (the status bar item is up) and nothing of a start.
  assert.equal(fake.recorded.statusBar.text, "$(hubot) Claude Relay");
  assert.deepEqual(secretsAsked, [], "activation read the backend token: a helper start began");
  assert.ok(!fake.recorded.configReads.includes("claudeRelay.path"), "activation looked for the helper binary");
  assert.ok(!existsSync(started), "activation started the helper");

  // A changed setting is read at the first start; there is nothing to restart.
  fake.changeSettings("claudeRelay.backendUrl");
  await settle();
  assert.ok(!fake.recorded.configReads.includes("claudeRelay.path"), "a settings change started the helper");
  assert.ok(!existsSync(started), "a settings change started the helper");

  // Open Dashboard needs the helper's ready event: it starts the helper.
  await fake.commands.executeCommand("claudeRelay.openDashboard");
  const pids = readFileSync(started, "utf8").trim().split("\n").map(Number);
  const pid = pids[0] ?? 0;
  assert.ok(pids.length === 1 && pid > 0, `the helper started ${pids.length} times: pids ${pids}`);
  assert.equal(fake.recorded.statusBar.text, "$(check) Claude Relay: idle");
  assert.ok(
    fake.recorded.messages.some((m) => m.includes("reports no dashboard")),
    `Open Dashboard did not answer from the helper's ready event; messages: ${JSON.stringify(fake.recorded.messages)}`,
  );

  // Disposing the extension stops the helper it started.
  for (const d of subscriptions.splice(0)) {
    d.dispose();
  }
  const deadline = Date.now() + 10_000;
  while (alive(pid) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.ok(!alive(pid), `the helper (pid ${pid}) outlived the extension`);
});
