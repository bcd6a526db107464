import assert from "node:assert/strict";
import { test } from "node:test";
import {
  endLine,
  formatCost,
  formatDuration,
  formatStreamPayload,
  formatTokens,
  shortId,
  summarize,
  toolTitle,
  trimResult,
} from "../../src/ui/format";

test("costs have four decimals and a dollar sign", () => {
  assert.equal(formatCost(0.0123), "$0.0123");
  assert.equal(formatCost(0), "$0.0000");
  assert.equal(formatCost(1.23456), "$1.2346");
  assert.equal(formatCost(undefined), "");
  assert.equal(formatCost(Number.NaN), "");
});

test("durations read as seconds, then minutes", () => {
  assert.equal(formatDuration(1234), "1.2s");
  assert.equal(formatDuration(400), "0.4s");
  assert.equal(formatDuration(125_000), "2m 05s");
  assert.equal(formatDuration(undefined), "");
  assert.equal(formatDuration(-1), "");
});

test("tokens count cache reads and writes as input", () => {
  assert.equal(
    formatTokens({ input_tokens: 200, output_tokens: 345, cache_read_input_tokens: 1000, cache_creation_input_tokens: 50 }),
    "1.3k in / 345 out tokens",
  );
  assert.equal(formatTokens(undefined), "");
});

test("short ids and summaries", () => {
  assert.equal(shortId("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"), "0f1e2d3c");
  assert.equal(summarize("  fix the test\nand more"), "fix the test");
  assert.equal(summarize("x".repeat(100), 10), `${"x".repeat(9)}…`);
});

test("tool titles show the whole command or path", () => {
  const long = `echo ${"a".repeat(3000)} && rm -rf /tmp/x`;
  assert.equal(toolTitle("Bash", { command: long }), `$ ${long}`);
  assert.equal(toolTitle("Bash", { command: "ls", description: "List files" }), "$ ls — List files");
  assert.equal(toolTitle("Write", { file_path: "/w/a.txt", content: "x" }), "Write /w/a.txt");
  assert.equal(toolTitle("Edit", {}), "Edit (no path)");
  assert.equal(toolTitle("Grep", { pattern: "foo", path: "src" }), "Grep foo in src");
  assert.equal(toolTitle("WebFetch", { url: "https://example.com" }), "Fetch https://example.com");
  assert.equal(toolTitle("ExitPlanMode", { plan: "1. do it" }), "Plan: 1. do it");
  assert.equal(
    toolTitle("AskUserQuestion", { questions: [{ question: "Which?" }, { question: "Why?" }] }),
    "Question: Which? / Why?",
  );
  assert.equal(toolTitle("mcp__x__y", { a: 1 }), 'mcp__x__y {"a":1}');
  assert.equal(toolTitle("TodoWrite", {}), "TodoWrite");
});

test("long results are trimmed and say how long they were", () => {
  const lines = Array.from({ length: 40 }, (_, i) => `line ${i + 1}`).join("\n");
  const out = trimResult(lines);
  assert.match(out, /^line 1\n/);
  assert.ok(out.includes("line 12"));
  assert.ok(!out.includes("line 13"));
  assert.match(out, /… \(.* characters, 40 lines in all\)$/);
  assert.equal(trimResult("short\n\n"), "short");
  const wide = trimResult("y".repeat(5000));
  assert.ok(wide.length < 1600);
  assert.match(wide, /5k characters, 1 line in all/);
});

test("assistant text and tool calls", () => {
  const payload = {
    type: "assistant",
    session_id: "c1",
    message: {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "hmm" },
        { type: "text", text: "I'll list the files.\n" },
        { type: "tool_use", id: "t1", name: "Bash", input: { command: "ls -la /work && echo done" } },
      ],
    },
  };
  assert.deepEqual(formatStreamPayload(payload), ["I'll list the files.", "▶ $ ls -la /work && echo done"]);
});

test("tool results, errors included, are shown trimmed", () => {
  const payload = {
    type: "user",
    message: {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "t1", content: "a\nb" },
        { type: "tool_result", tool_use_id: "t2", is_error: true, content: [{ type: "text", text: "Permission denied" }] },
        { type: "tool_result", tool_use_id: "t3", content: "" },
      ],
    },
  };
  assert.deepEqual(formatStreamPayload(payload), [
    "◀ result:\n  a\n  b",
    "✖ error:\n  Permission denied",
    "◀ result: (no output)",
  ]);
});

test("init line, and lines the reader does not need", () => {
  assert.deepEqual(
    formatStreamPayload({
      type: "system",
      subtype: "init",
      claude_code_version: "2.1.330",
      model: "claude-x",
      permissionMode: "default",
    }),
    ["· Claude Code 2.1.330 · model claude-x · mode default"],
  );
  assert.deepEqual(formatStreamPayload({ type: "system", subtype: "hook_response" }), []);
  assert.deepEqual(formatStreamPayload({ type: "control_request", request: {} }), []);
  assert.deepEqual(formatStreamPayload({ type: "result", subtype: "success", is_error: false, result: "done" }), []);
  assert.deepEqual(formatStreamPayload({ type: "result", subtype: "error_during_execution", is_error: true, result: "boom" }), [
    "✖ boom",
  ]);
  assert.deepEqual(formatStreamPayload({ type: "user", message: { content: "a replayed prompt" } }), []);
  assert.deepEqual(formatStreamPayload(null), []);
  assert.deepEqual(formatStreamPayload({ type: "assistant" }), []);
});

test("end lines say completed or failed, with the cost", () => {
  assert.equal(
    endLine({ event: "turn_completed", costUsd: 0.0123, durationMs: 1234, turn: 1 }),
    "Run completed · $0.0123 · 1.2s",
  );
  assert.equal(
    endLine({ event: "turn_completed", costUsd: 0.001, durationMs: 500, turn: 2 }),
    "Run completed · $0.0010 · 0.5s · turn 2",
  );
  assert.equal(
    endLine({ event: "turn_completed", status: "interrupted", reason: "stopped from the editor", durationMs: 500, turn: 2 }),
    "Turn interrupted: stopped from the editor · 0.5s · turn 2",
  );
  assert.equal(
    endLine({ event: "turn_completed", status: "failed", stderr: "API Error: 500\nmore", turn: 1 }),
    "Turn failed: API Error: 500",
  );
  assert.equal(endLine({ event: "run_completed", costUsd: 0.02, durationMs: 3000 }), "Run completed · $0.0200 · 3.0s");
  assert.equal(
    endLine({ event: "run_completed", costUsd: 0.02, durationMs: 3000, turns: 2 }),
    "Run closed after 2 turns · $0.0200 · 3.0s",
  );
  assert.equal(
    endLine({ event: "run_failed", reason: "stalled", costUsd: 0.001, durationMs: 100 }),
    "Run failed: stalled · $0.0010 · 0.1s",
  );
  assert.equal(endLine({ event: "run_failed", stderr: "Not logged in\nmore" }), "Run failed: Not logged in");
  assert.equal(
    endLine({ event: "run_failed", reason: "helper_exited", stderr: "the claude-relay helper exited on signal SIGKILL" }),
    "Run failed: the claude-relay helper exited on signal SIGKILL",
  );
  assert.equal(endLine({ event: "run_failed" }), "Run failed");
  assert.equal(endLine({ event: "run_cancelled" }), "Run cancelled");
  assert.equal(endLine({ event: "run_cancelled", reason: "denied: no" }), "Run cancelled: denied: no");
});
