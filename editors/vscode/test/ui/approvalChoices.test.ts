import assert from "node:assert/strict";
import { test } from "node:test";
import type { ApprovalRequestedEvent } from "../../src/client";
import {
  answerOf,
  approvalChoices,
  approvalMessage,
  dashboardOnly,
  editedInput,
  kindOf,
  needsModal,
  policyDeniedMessage,
  policyOf,
  proposedContent,
  questionsOf,
  waitingLine,
} from "../../src/ui/approvalChoices";

const appr = (e: Record<string, unknown>): ApprovalRequestedEvent =>
  ({
    event: "approval_requested",
    timestamp: "t",
    run_id: "0f1e2d3c-aaaa",
    approval_id: "a1",
    ...e,
  }) as unknown as ApprovalRequestedEvent;

const labels = (e: ApprovalRequestedEvent) => approvalChoices(e).map((c) => c.label);

test("Bash: Allow, Always, Deny and Edit, mapped to the protocol's decisions", () => {
  const e = appr({
    tool_name: "Bash",
    kind: "tool",
    options: ["allow", "allow_always", "deny"],
    input: { command: "make test" },
  });
  assert.deepEqual(labels(e), ["Allow", "Always", "Deny", "Edit"]);
  assert.deepEqual(
    approvalChoices(e).map((c) => (c.action === "decide" ? c.decision : c.action)),
    ["allow", "allow_always", "deny", "edit"],
  );
});

test("file tools offer Show Diff; other tools only what their options allow", () => {
  for (const tool of ["Edit", "Write", "MultiEdit"]) {
    assert.deepEqual(labels(appr({ tool_name: tool, kind: "tool", options: ["allow", "allow_always", "deny"] })), [
      "Allow",
      "Always",
      "Deny",
      "Show Diff",
    ]);
  }
  assert.deepEqual(labels(appr({ tool_name: "WebFetch", kind: "tool", options: ["allow", "deny"] })), ["Allow", "Deny"]);
  // An event without options gets the schema's defaults for its kind.
  assert.deepEqual(labels(appr({ tool_name: "WebFetch" })), ["Allow", "Always", "Deny"]);
});

test("plans: Accept Edits, Manual, Keep Planning", () => {
  const e = appr({
    tool_name: "ExitPlanMode",
    kind: "plan",
    options: ["accept_edits", "default", "keep_planning"],
    title: "Plan: 1. x",
  });
  assert.deepEqual(labels(e), ["Accept Edits", "Manual", "Keep Planning"]);
  assert.deepEqual(
    approvalChoices(e).map((c) => (c.action === "decide" ? c.decision : c.action)),
    ["accept_edits", "default", "keepPlanning"],
  );
  assert.equal(kindOf(appr({ tool_name: "ExitPlanMode" })), "plan");
  assert.equal(kindOf(appr({ tool_name: "AskUserQuestion" })), "question");
  assert.equal(approvalMessage(e), "Claude Relay has a plan (run 0f1e2d3c): Plan: 1. x");
});

test("the message holds the whole command; long or link-like ones go to a dialog", () => {
  const cmd = `rm -rf build && ${"x".repeat(500)} && echo done`;
  const e = appr({ tool_name: "Bash", title: `$ ${cmd}` });
  const msg = approvalMessage(e);
  assert.equal(msg, `Claude Relay wants to use Bash (run 0f1e2d3c): $ ${cmd}`);
  assert.ok(!needsModal(msg));
  // Without a title (an older helper), the title is built from the input.
  assert.ok(approvalMessage(appr({ tool_name: "Bash", input: { command: cmd } })).endsWith(`$ ${cmd}`));
  assert.ok(needsModal(approvalMessage(appr({ tool_name: "Bash", title: `$ ${"y".repeat(2000)}` }))));
  assert.ok(needsModal(approvalMessage(appr({ tool_name: "Bash", title: "$ echo '[a](b)'" }))));
});

test("Edit keeps the rest of the input", () => {
  const e = appr({ tool_name: "Bash", input: { command: "ls", description: "list", timeout: 5 } });
  assert.deepEqual(editedInput(e, "ls -la"), { command: "ls -la", description: "list", timeout: 5 });
});

test("questions from the event or the input; answers comma-separated", () => {
  const qs = [
    {
      question: "Which color?",
      header: "Color",
      multiSelect: false,
      options: [{ label: "Blue", description: "calm" }, { label: "Red" }],
    },
    { question: "Which sizes?", multiSelect: true, options: ["S", "M"] },
    { nope: true },
  ];
  const fromEvent = questionsOf(appr({ tool_name: "AskUserQuestion", kind: "question", questions: qs }));
  assert.deepEqual(fromEvent, [
    {
      question: "Which color?",
      header: "Color",
      multiSelect: false,
      options: [
        { label: "Blue", description: "calm" },
        { label: "Red", description: "" },
      ],
    },
    {
      question: "Which sizes?",
      header: "",
      multiSelect: true,
      options: [
        { label: "S", description: "" },
        { label: "M", description: "" },
      ],
    },
  ]);
  assert.deepEqual(questionsOf(appr({ tool_name: "AskUserQuestion", questions: { questions: qs } })), fromEvent);
  assert.deepEqual(questionsOf(appr({ tool_name: "AskUserQuestion", input: { questions: qs } })), fromEvent);
  assert.deepEqual(questionsOf(appr({ tool_name: "AskUserQuestion" })), []);
  assert.equal(answerOf(["S", "M"]), "S, M");
});

test("proposed content of Write, Edit and MultiEdit", () => {
  assert.equal(proposedContent("Write", { content: "new\n" }, "old\n"), "new\n");
  assert.equal(proposedContent("Edit", { old_string: "b", new_string: "B" }, "a b b"), "a B b");
  assert.equal(proposedContent("Edit", { old_string: "b", new_string: "B", replace_all: true }, "a b b"), "a B B");
  assert.equal(proposedContent("Edit", { old_string: "$&", new_string: "$1" }, "x $& y"), "x $1 y", "no replacement patterns");
  assert.equal(proposedContent("Edit", { old_string: "zz", new_string: "B" }, "a b"), undefined);
  assert.equal(proposedContent("Edit", { old_string: "", new_string: "fresh" }, ""), "fresh");
  assert.equal(
    proposedContent(
      "MultiEdit",
      {
        edits: [
          { old_string: "a", new_string: "b" },
          { old_string: "b b", new_string: "c" },
        ],
      },
      "a b",
    ),
    "c",
  );
  assert.equal(proposedContent("MultiEdit", { edits: [{ old_string: "q", new_string: "b" }] }, "a"), undefined);
  assert.equal(proposedContent("Bash", { command: "x" }, ""), undefined);
});

const pushEvent = (extra: Record<string, unknown> = {}) =>
  appr({
    tool_name: "Bash",
    kind: "tool",
    options: ["allow", "allow_always", "deny"],
    title: "$ git push origin main",
    input: { command: "git push origin main" },
    approver: "dashboard",
    policy_rule: "Bash(git push *)",
    policy_reason: "pushes need a reviewer",
    ...extra,
  });

test("a dashboard-only approval offers only Open Dashboard, whatever its kind and options", () => {
  const e = pushEvent();
  assert.ok(dashboardOnly(e));
  assert.deepEqual(approvalChoices(e), [{ label: "Open Dashboard", action: "openDashboard" }]);
  for (const tool of ["Edit", "ExitPlanMode", "AskUserQuestion"]) {
    assert.deepEqual(labels(pushEvent({ tool_name: tool, kind: undefined })), ["Open Dashboard"], tool);
  }
  // Without approver, the same event keeps its buttons.
  const own = pushEvent({ approver: undefined });
  assert.ok(!dashboardOnly(own));
  assert.deepEqual(labels(own), ["Allow", "Always", "Deny", "Edit"]);
});

test("a dashboard-only approval's message and output line name the command, the rule, its reason and who decides", () => {
  const e = pushEvent();
  assert.equal(
    approvalMessage(e),
    "Claude Relay: Bash (run 0f1e2d3c) waits for the dashboard: $ git push origin main — " +
      "the team's central policy (rule Bash(git push *): pushes need a reviewer) lets only the dashboard decide.",
  );
  assert.ok(!needsModal(approvalMessage(e)));
  assert.equal(
    waitingLine(e),
    "? Waiting for the dashboard: $ git push origin main (the team's central policy " +
      '(rule Bash(git push *): pushes need a reviewer) lets only the dashboard decide; "Open Dashboard" to decide it there)',
  );
  // A rule without a reason, a reason without a rule, neither.
  assert.equal(policyOf(pushEvent({ policy_reason: undefined })), "rule Bash(git push *)");
  assert.equal(policyOf(pushEvent({ policy_rule: "" })), "pushes need a reviewer");
  const bare = pushEvent({ policy_rule: undefined, policy_reason: undefined });
  assert.equal(policyOf(bare), "");
  assert.ok(approvalMessage(bare).endsWith("— the team's central policy lets only the dashboard decide."));
  // A long command still goes to a dialog, whole.
  assert.ok(needsModal(approvalMessage(pushEvent({ title: `$ git push ${"x".repeat(1000)}` }))));
});

test("an approval the extension answers says it waits for the user", () => {
  assert.equal(waitingLine(pushEvent({ approver: undefined })), "? Waiting for your answer: $ git push origin main");
});

test("a policy_denied error is shown with the helper's own message", () => {
  const msg = "approval answer refused: the central policy lets only the dashboard decide this approval (rule Bash(git push *))";
  assert.equal(policyDeniedMessage(msg), `Claude Relay: ${msg}`);
});
