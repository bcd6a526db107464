import assert from "node:assert/strict";
import { test } from "node:test";
import type { Event } from "../../src/client";
import { contextValueOf, describeRun, isLive, RunsModel, statusBarText, statusOf } from "../../src/ui/runs";

const ts = "2026-01-01T00:00:00Z";
const ev = (e: Record<string, unknown>): Event => ({ timestamp: ts, ...e }) as unknown as Event;
const result = (ms: number) => ({ stdout: "", stderr: "", exitCode: 0, duration_ms: ms });
const usage = (i: number, o: number) => ({
  input_tokens: i,
  output_tokens: o,
  cache_read_input_tokens: 0,
  cache_creation_input_tokens: 0,
});

test("a keep_alive run: running, waiting for approval, completed per turn, closed with totals", () => {
  const m = new RunsModel();
  let changes = 0;
  m.onChange(() => changes++);
  const r = m.add("r1", "list files", true);
  assert.equal(statusOf(r), "starting");
  assert.deepEqual(m.counts(), { running: 1, approvals: 0 });

  m.apply(ev({ event: "run_started", run_id: "r1", session_id: "s1", interaction_id: "i1" }));
  assert.equal(statusOf(r), "running");
  assert.equal(r.sessionId, "s1");

  const appr = m.apply(
    ev({
      event: "approval_requested",
      run_id: "r1",
      approval_id: "a1",
      tool_name: "Bash",
      input: { command: "ls" },
      kind: "tool",
    }),
  );
  assert.equal(appr?.approval?.approval_id, "a1");
  assert.equal(statusOf(r), "waiting");
  assert.equal(describeRun(r), "waiting for approval");
  assert.deepEqual(m.counts(), { running: 1, approvals: 1 });
  assert.ok(m.isPending("r1", "a1"));
  assert.ok(m.resolveApproval("r1", "a1"));
  assert.ok(!m.resolveApproval("r1", "a1"), "a second answer finds nothing pending");
  assert.equal(statusOf(r), "running");

  m.apply(ev({ event: "stream", run_id: "r1", session_id: "s1", payload: { type: "assistant", session_id: "conv-1" } }));
  assert.equal(r.conversationId, "conv-1");

  const t1 = m.apply(
    ev({ event: "turn_completed", run_id: "r1", turn: 1, result: result(1234), usage: usage(100, 20), total_cost_usd: 0.0123 }),
  );
  assert.equal(t1?.endLine, "Run completed · $0.0123 · 1.2s");
  assert.equal(statusOf(r), "completed");
  assert.ok(isLive(r), "a keep_alive run stays open between turns");
  assert.equal(describeRun(r), "completed · $0.0123 · 100 in / 20 out tokens");
  assert.deepEqual(m.counts(), { running: 0, approvals: 0 });

  m.turnSent("r1");
  assert.equal(statusOf(r), "running");
  m.apply(
    ev({ event: "turn_completed", run_id: "r1", turn: 2, result: result(500), usage: usage(50, 5), total_cost_usd: 0.001 }),
  );
  assert.equal(r.turns, 2);
  assert.equal(r.costUsd?.toFixed(4), "0.0133", "turn costs add up");
  assert.equal(r.usage?.input_tokens, 150);

  const end = m.apply(
    ev({
      event: "run_completed",
      run_id: "r1",
      session_id: "s1",
      result: result(3000),
      usage: usage(150, 25),
      total_cost_usd: 0.0133,
    }),
  );
  assert.equal(end?.endLine, "Run closed after 2 turns · $0.0133 · 3.0s");
  assert.equal(statusOf(r), "completed");
  assert.ok(!isLive(r));
  assert.ok(changes > 5);

  // The client's synthetic end after a real one changes nothing.
  assert.equal(m.apply(ev({ event: "run_failed", run_id: "r1", result: result(0), reason: "helper_exited" })), undefined);
  assert.equal(statusOf(r), "completed");
});

test("a failed run and a withdrawn approval", () => {
  const m = new RunsModel();
  const r = m.add("r2", "rm things", true);
  m.apply(ev({ event: "approval_requested", run_id: "r2", approval_id: "a2", tool_name: "Bash" }));
  const w = m.apply(ev({ event: "approval_cancelled", run_id: "r2", approval_id: "a2", reason: "timeout" }));
  assert.deepEqual(w?.withdrawn, { approvalId: "a2", reason: "timeout" });
  assert.equal(m.apply(ev({ event: "approval_cancelled", run_id: "r2", approval_id: "a2" })), undefined, "withdrawn once");
  m.apply(ev({ event: "approval_requested", run_id: "r2", approval_id: "a3", tool_name: "Bash" }));
  const f = m.apply(
    ev({
      event: "run_failed",
      run_id: "r2",
      result: { stdout: "", stderr: "Not logged in", exitCode: 1, duration_ms: 200 },
      total_cost_usd: 0,
    }),
  );
  assert.equal(f?.endLine, "Run failed: Not logged in · $0.0000 · 0.2s");
  assert.equal(statusOf(r), "failed");
  assert.equal(r.pending.size, 0, "an ended run has nothing pending");
  assert.deepEqual(m.counts(), { running: 0, approvals: 0 });
});

test("fail() ends a run whose prompt was refused, once", () => {
  const m = new RunsModel();
  const r = m.add("r3", "x", true);
  assert.equal(m.fail("r3", "no Claude CLI")?.endLine, "Run failed: no Claude CLI");
  assert.equal(m.fail("r3", "again"), undefined);
  assert.equal(statusOf(r), "failed");
  assert.equal(m.apply(ev({ event: "run_cancelled", run_id: "r3", result: result(0) })), undefined);
  assert.deepEqual(m.clearEnded(), ["r3"]);
  assert.equal(m.list().length, 0);
});

test("events of runs the model does not know are ignored, but a run_started is listed", () => {
  const m = new RunsModel();
  assert.equal(m.apply(ev({ event: "stream", run_id: "zz", payload: {} })), undefined);
  assert.equal(m.apply(ev({ event: "state", state: "idle" })), undefined);
  const c = m.apply(ev({ event: "run_started", run_id: "other", session_id: "s", interaction_id: "i" }));
  assert.equal(c?.run.id, "other");
  assert.equal(m.list()[0]?.id, "other");
});

test("newest run first", () => {
  const m = new RunsModel();
  m.add("a", "first", true);
  m.add("b", "second", true);
  assert.deepEqual(
    m.list().map((r) => r.id),
    ["b", "a"],
  );
});

test("status bar text", () => {
  assert.equal(statusBarText({ running: 0, approvals: 0 }, "ready"), "$(check) Claude Relay: idle");
  assert.equal(statusBarText({ running: 2, approvals: 1 }, "ready"), "$(sync~spin) Claude Relay: 2 running · 1 approval");
  assert.equal(statusBarText({ running: 1, approvals: 0 }, "ready"), "$(sync~spin) Claude Relay: 1 running · 0 approvals");
  assert.equal(statusBarText({ running: 0, approvals: 0 }, "starting"), "$(sync~spin) Claude Relay: starting");
  assert.equal(statusBarText({ running: 0, approvals: 0 }, "notStarted"), "$(hubot) Claude Relay");
  assert.equal(statusBarText({ running: 0, approvals: 0 }, "failed"), "$(error) Claude Relay: helper not running");
});

test("the Runs view's menus follow the run: busy, idle between turns, ended", () => {
  const m = new RunsModel();
  const r = m.add("r", "p", true);
  assert.equal(contextValueOf(r), "run.busy");
  m.apply(ev({ event: "turn_completed", run_id: "r", turn: 1, result: result(1) }));
  assert.equal(contextValueOf(r), "run.idle");
  m.apply(ev({ event: "run_cancelled", run_id: "r", result: result(1) }));
  assert.equal(contextValueOf(r), "run.ended");
});
