// The controller's wiring of a dashboard-only approval, against the
// recording stand-in for `vscode` and stubs for the helper and the views:
// the run's output lines, the decision made in the dashboard, and a
// policy_denied error event that is no command's answer.
import assert from "node:assert/strict";
import { test } from "node:test";
import type * as vscode from "vscode";
import type { Event } from "../../src/client";
import { Controller } from "../../src/ui/controller";
import type { ProposedDiffs } from "../../src/ui/diffView";
import type { Helper } from "../../src/ui/helper";
import type { RunOutputs } from "../../src/ui/outputs";
import { RunsModel, statusOf } from "../../src/ui/runs";
import type { RunsView } from "../../src/ui/runsView";
import * as fake from "./fakeVscode";

const ev = (e: Record<string, unknown>): Event => ({ timestamp: "t", ...e }) as unknown as Event;
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function setup() {
  fake.reset();
  const lines = new Map<string, string[]>();
  const outputs = {
    append: (runId: string, ls: readonly string[]) => lines.set(runId, [...(lines.get(runId) ?? []), ...ls]),
    show: () => undefined,
  } as unknown as RunOutputs;
  const log: string[] = [];
  const channel = { appendLine: (l: string) => log.push(l), show: () => undefined } as unknown as vscode.OutputChannel;
  const opened: string[] = [];
  const helper = {
    get: () => Promise.resolve({ ready: { dashboard: "http://127.0.0.1:7070/", backend: "http://127.0.0.1:7070" } }),
    peek: () => undefined,
  } as unknown as Helper;
  fake.env.openExternal = ((uri: { toString(): string }) => {
    opened.push(uri.toString());
    return Promise.resolve(true);
  }) as typeof fake.env.openExternal;
  const model = new RunsModel();
  const c = new Controller(
    {} as vscode.ExtensionContext,
    model,
    outputs,
    helper,
    channel,
    { show: () => Promise.resolve(false), forget: () => undefined } as unknown as ProposedDiffs,
    {} as RunsView,
  );
  return { c, model, lines, log, opened };
}

test("a dashboard-only approval: waits for the dashboard in the output, Open Dashboard opens it, its decision ends the wait", async (t) => {
  const { c, model, lines, opened } = setup();
  t.after(() => c.dispose());
  model.add("r1", "push it", true);
  c.onEvent(ev({ event: "run_started", run_id: "r1", session_id: "s1", interaction_id: "i1" }));
  fake.picks.push("Open Dashboard");
  c.onEvent(
    ev({
      event: "approval_requested",
      run_id: "r1",
      approval_id: "a1",
      tool_name: "Bash",
      kind: "tool",
      title: "$ git push origin main",
      approver: "dashboard",
      policy_rule: "Bash(git push *)",
      policy_reason: "pushes need a reviewer",
    }),
  );
  await settle();
  await settle();
  assert.match(lines.get("r1")?.[0] ?? "", /^\? Waiting for the dashboard: \$ git push origin main \(the team's central policy \(rule Bash\(git push \*\): pushes need a reviewer\)/);
  assert.deepEqual(
    fake.recorded.prompts.map((p) => [p.severity, p.buttons]),
    [["information", ["Open Dashboard"]]],
  );
  assert.deepEqual(opened, ["http://127.0.0.1:7070/"]);
  assert.equal(statusOf(model.get("r1") ?? assert.fail("no run")), "waiting");

  // The dashboard decided: the helper withdraws it here, as for any decision made elsewhere.
  c.onEvent(ev({ event: "approval_cancelled", run_id: "r1", approval_id: "a1", reason: "already decided by dashboard (phone): allow" }));
  assert.equal(lines.get("r1")?.[1], "Approval withdrawn (already decided by dashboard (phone): allow)");
  assert.equal(statusOf(model.get("r1") ?? assert.fail("no run")), "running");
});

test("a policy_denied error event that answers no command is shown with its message", async (t) => {
  const { c, model, lines, log } = setup();
  t.after(() => c.dispose());
  model.add("r2", "push it", true);
  const message = "approval answer refused: the central policy lets only the dashboard decide this approval (rule Bash(git push *))";
  c.onEvent(ev({ event: "error", run_id: "r2", code: "policy_denied", message }));
  await settle();
  assert.deepEqual(lines.get("r2"), [`! error (policy_denied): ${message}`]);
  assert.deepEqual(log, [`Helper error (policy_denied): ${message}`]);
  assert.deepEqual(
    fake.recorded.prompts.map((p) => [p.severity, p.message, p.buttons]),
    [["information", `Claude Relay: ${message}`, ["Open Dashboard"]]],
  );
});
