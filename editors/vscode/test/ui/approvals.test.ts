// The approval prompts against the recording stand-in for `vscode`: what a
// dashboard-only approval shows and what its button does, and how a
// policy_denied refusal of an answer is shown.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ApprovalRequestedEvent } from "../../src/client";
import { type Answer, type ApprovalHost, ApprovalPrompter } from "../../src/ui/approvals";
import type { ProposedDiffs } from "../../src/ui/diffView";
import * as fake from "./fakeVscode";

const appr = (e: Record<string, unknown>): ApprovalRequestedEvent =>
  ({
    event: "approval_requested",
    timestamp: "t",
    run_id: "0f1e2d3c-aaaa",
    approval_id: "a1",
    tool_name: "Bash",
    kind: "tool",
    options: ["allow", "allow_always", "deny"],
    title: "$ git push origin main",
    input: { command: "git push origin main" },
    ...e,
  }) as unknown as ApprovalRequestedEvent;

const dashboardEvent = appr({
  approver: "dashboard",
  policy_rule: "Bash(git push *)",
  policy_reason: "pushes need a reviewer",
});

/** Lets the prompter's promises settle. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

class Host implements ApprovalHost {
  answers: Answer[] = [];
  lines: string[] = [];
  dashboards = 0;
  pending = true;
  failWith: Error | undefined;

  answer(_e: ApprovalRequestedEvent, a: Answer): Promise<void> {
    this.answers.push(a);
    return this.failWith ? Promise.reject(this.failWith) : Promise.resolve();
  }
  isPending(): boolean {
    return this.pending;
  }
  cwdOf(): string | undefined {
    return undefined;
  }
  log(_e: ApprovalRequestedEvent, line: string): void {
    this.lines.push(line);
  }
  openDashboard(): Promise<void> {
    this.dashboards++;
    return Promise.resolve();
  }
}

const noDiffs = { show: () => Promise.resolve(false), forget: () => undefined } as unknown as ProposedDiffs;

test("a dashboard-only approval is information with Open Dashboard, which answers nothing", async () => {
  fake.reset();
  const host = new Host();
  const p = new ApprovalPrompter(host, noDiffs);
  fake.picks.push("Open Dashboard");
  p.ask(dashboardEvent);
  await settle();
  assert.equal(fake.recorded.prompts.length, 1);
  const shown = fake.recorded.prompts[0];
  assert.equal(shown?.severity, "information");
  assert.deepEqual(shown?.buttons, ["Open Dashboard"]);
  assert.match(shown?.message ?? "", /waits for the dashboard: \$ git push origin main/);
  assert.match(shown?.message ?? "", /rule Bash\(git push \*\): pushes need a reviewer/);
  assert.match(shown?.message ?? "", /lets only the dashboard decide/);
  assert.equal(host.dashboards, 1);
  assert.deepEqual(host.answers, [], "no approve is sent: the helper would refuse it");

  // Dismissed, or clicked after the dashboard decided: still nothing sent, no "late answer" line.
  host.pending = false;
  p.ask(dashboardEvent);
  fake.picks.push("Open Dashboard");
  p.ask(dashboardEvent);
  await settle();
  assert.equal(host.dashboards, 2);
  assert.deepEqual(host.answers, []);
  assert.deepEqual(host.lines, []);
  p.dispose();
});

test("a long dashboard-only command goes to a dialog that shows it whole", async () => {
  fake.reset();
  const p = new ApprovalPrompter(new Host(), noDiffs);
  const long = appr({ ...dashboardEvent, title: `$ git push ${"x".repeat(1000)}` });
  p.ask(long);
  await settle();
  const shown = fake.recorded.prompts[0];
  assert.equal(shown?.message, "Claude Relay: Bash waits for the dashboard");
  assert.equal(shown?.options?.modal, true);
  assert.match(shown?.options?.detail ?? "", /x{1000}/);
  assert.deepEqual(shown?.buttons, ["Open Dashboard"]);
  p.dispose();
});

test("an answer refused with policy_denied shows the helper's message, not a failure to retry", async () => {
  fake.reset();
  const host = new Host();
  const msg = "approval answer refused: the central policy lets only the dashboard decide this approval (rule Bash(git push *))";
  host.failWith = Object.assign(new Error(msg), { code: "policy_denied" });
  const p = new ApprovalPrompter(host, noDiffs);
  // An event without approver (say, the policy changed since): the buttons are there.
  fake.picks.push("Allow", "Open Dashboard");
  p.ask(appr({}));
  await settle();
  await settle();
  assert.deepEqual(
    fake.recorded.prompts.map((x) => [x.severity, x.buttons]),
    [
      ["warning", ["Allow", "Always", "Deny", "Edit"]],
      ["information", ["Open Dashboard"]],
    ],
  );
  assert.equal(fake.recorded.prompts[1]?.message, `Claude Relay: ${msg}`);
  assert.equal(host.dashboards, 1);

  // Any other refusal is still a failure that says the approval waits.
  fake.reset();
  host.failWith = Object.assign(new Error("boom"), { code: "internal" });
  fake.picks.push("Deny");
  p.ask(appr({}));
  await settle();
  await settle();
  assert.equal(fake.recorded.prompts[1]?.severity, "error");
  assert.match(fake.recorded.prompts[1]?.message ?? "", /with deny failed: boom\. It still waits/);
  p.dispose();
});
