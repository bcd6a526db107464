// The package.json contributions users and the end-to-end tests rely on
// (CONTRACT §9): exact command titles, activation on use, settings.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";

interface Manifest {
  activationEvents?: string[];
  extensionKind?: string[];
  engines: { vscode: string };
  contributes: {
    commands: { command: string; title: string; category?: string }[];
    configuration: { properties: Record<string, { type: string; default: unknown; scope?: string }> };
    views: Record<string, { id: string }[]>;
  };
}

/** The extension's package.json: above this (bundled) test file, else in the cwd (npm test runs in editors/vscode). */
function findManifest(): string {
  for (const start of [__dirname, process.cwd()]) {
    for (let dir = start; ; dir = dirname(dir)) {
      const p = join(dir, "package.json");
      if (existsSync(p) && (JSON.parse(readFileSync(p, "utf8")) as { name?: string }).name === "claude-relay") {
        return p;
      }
      if (dirname(dir) === dir) {
        break;
      }
    }
  }
  throw new Error(`no claude-relay package.json above ${__dirname} or ${process.cwd()}`);
}

const manifest = JSON.parse(readFileSync(findManifest(), "utf8")) as Manifest;

test("commands have the exact titles, under the Claude Relay category", () => {
  const titles = Object.fromEntries(manifest.contributes.commands.map((c) => [c.command, `${c.category}: ${c.title}`]));
  assert.deepEqual(
    {
      runPrompt: titles["claudeRelay.runPrompt"],
      runInTerminal: titles["claudeRelay.runInTerminal"],
      followUp: titles["claudeRelay.followUp"],
      interrupt: titles["claudeRelay.interrupt"],
      cancelRun: titles["claudeRelay.cancelRun"],
      resume: titles["claudeRelay.resume"],
      openDashboard: titles["claudeRelay.openDashboard"],
      setBackendToken: titles["claudeRelay.setBackendToken"],
    },
    {
      runPrompt: "Claude Relay: Run Prompt in Background",
      runInTerminal: "Claude Relay: Run in Terminal",
      followUp: "Claude Relay: Follow Up",
      interrupt: "Claude Relay: Interrupt",
      cancelRun: "Claude Relay: Cancel Run",
      resume: "Claude Relay: Resume Conversation…",
      openDashboard: "Claude Relay: Open Dashboard",
      setBackendToken: "Claude Relay: Set Backend Token",
    },
  );
});

test("activated by its commands and views only, never at startup", () => {
  // VS Code 1.74 and later activate on contributed commands and views with
  // no activation event declared; an older engine would need them listed.
  const engine = /^\^?(\d+)\.(\d+)\./.exec(manifest.engines.vscode);
  assert.ok(engine && (Number(engine[1]) > 1 || Number(engine[2]) >= 74), `engines.vscode ${manifest.engines.vscode} is older than 1.74`);
  for (const e of manifest.activationEvents ?? []) {
    assert.match(e, /^(onCommand|onView):claudeRelay\./, `activation event ${e} is not a use of the extension`);
  }
});

test("runs where the workspace is (remote, WSL, containers)", () => {
  assert.deepEqual(manifest.extensionKind, ["workspace"]);
});

test("settings: path, backend URL, permission mode, approvals on by default; no token setting", () => {
  const p = manifest.contributes.configuration.properties;
  assert.equal(p["claudeRelay.path"]?.type, "string");
  assert.equal(p["claudeRelay.path"]?.scope, "machine", "a workspace must not choose the binary");
  assert.equal(p["claudeRelay.backendUrl"]?.scope, "machine", "a workspace must not redirect the token");
  assert.equal(p["claudeRelay.permissionMode"]?.default, "");
  assert.equal(p["claudeRelay.approvals"]?.default, true);
  assert.ok(!Object.keys(p).some((k) => /token/i.test(k)), "the token lives in SecretStorage only");
});

test("the Runs view is contributed", () => {
  const ids = Object.values(manifest.contributes.views)
    .flat()
    .map((v) => v.id);
  assert.ok(ids.includes("claudeRelay.runs"));
});
