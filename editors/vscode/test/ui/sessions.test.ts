import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { BackendError, describeConversation, recentConversations, within } from "../../src/ui/sessions";

// A stand-in for `claude-relay serve`'s read API (internal/server/backend/read.go):
// the same paths, auth and JSON shapes.
const sessions = [
  {
    id: "s-new",
    external_conversation_id: "conv-new",
    status: "completed",
    total_cost_usd: 0.0123,
    updated_at: "2026-01-02T00:00:00Z",
  },
  {
    id: "s-other",
    external_conversation_id: "conv-other",
    status: "completed",
    total_cost_usd: 0.5,
    updated_at: "2026-01-01T12:00:00Z",
  },
  { id: "s-noconv", external_conversation_id: "", status: "failed", total_cost_usd: 0, updated_at: "2026-01-01T11:00:00Z" },
  { id: "s-sub", external_conversation_id: "conv-sub", status: "running", updated_at: "2026-01-01T10:00:00Z" },
  { id: "s-broken", external_conversation_id: "conv-broken", status: "completed", updated_at: "2026-01-01T09:00:00Z" },
];
const firstEvents: Record<string, unknown[]> = {
  "s-new": [{ event_type: "relay.run_started", event_data: { run_id: "r", cwd: "/work/proj", prompt: "fix the tests" } }],
  "s-other": [{ event_type: "relay.run_started", event_data: { cwd: "/elsewhere", prompt: "other" } }],
  "s-sub": [
    { event_type: "system", event_data: {} },
    { event_type: "relay.run_started", event_data: { cwd: "/work/proj/sub", prompt: "in a subfolder" } },
  ],
};
let server: http.Server;
let url = "";
const seen: string[] = [];

before(async () => {
  server = http.createServer((req, res) => {
    seen.push(req.url ?? "");
    if (req.headers.authorization !== "Bearer tok") {
      res.writeHead(401, { "Content-Type": "application/json" }).end('{"error":"missing or invalid token"}');
      return;
    }
    const u = new URL(req.url ?? "/", "http://x");
    if (u.pathname === "/api/sessions") {
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ sessions }));
      return;
    }
    const m = /^\/api\/sessions\/([^/]+)\/events$/.exec(u.pathname);
    if (m && m[1] === "s-broken") {
      res.writeHead(500).end("boom");
      return;
    }
    if (m) {
      res
        .writeHead(200, { "Content-Type": "application/json" })
        .end(JSON.stringify({ events: firstEvents[m[1] ?? ""] ?? [], next: 0 }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => {
  server.close();
});

test("the workspace's conversations, newest first, with their first prompt", async () => {
  const found = await recentConversations({ backend: url, token: "tok", folders: ["/work/proj"], fetch });
  assert.deepEqual(
    found.map((c) => [c.sessionId, c.conversationId, c.prompt, c.cwd]),
    [
      ["s-new", "conv-new", "fix the tests", "/work/proj"],
      ["s-sub", "conv-sub", "in a subfolder", "/work/proj/sub"],
    ],
  );
  assert.equal(found[0]?.costUsd, 0.0123);
  assert.ok(seen.includes("/api/sessions?limit=30"));
  assert.ok(!seen.some((p) => p.includes("s-noconv")), "sessions without a conversation are not read");
});

test("no folder open: every conversation whose events can be read", async () => {
  const found = await recentConversations({ backend: `${url}/`, token: "tok", folders: [], fetch });
  assert.deepEqual(
    found.map((c) => c.sessionId),
    ["s-new", "s-other", "s-sub"],
  );
});

test("a refused token says how to set one", async () => {
  await assert.rejects(recentConversations({ backend: url, token: "bad", folders: [], fetch }), (err: unknown) => {
    assert.ok(err instanceof BackendError);
    assert.match(err.message, /refused the token \(401 Unauthorized\).*Set Backend Token/);
    return true;
  });
});

test("an unreachable backend is named", async () => {
  const dead = http.createServer();
  await new Promise<void>((resolve) => dead.listen(0, "127.0.0.1", resolve));
  const deadUrl = `http://127.0.0.1:${(dead.address() as AddressInfo).port}`;
  await new Promise<void>((resolve) => dead.close(() => resolve()));
  await assert.rejects(recentConversations({ backend: deadUrl, token: "tok", folders: [], fetch }), (err: unknown) => {
    assert.ok(err instanceof BackendError);
    assert.ok(err.message.includes(`Cannot reach the backend at ${deadUrl}`), err.message);
    return true;
  });
});

test("within", () => {
  assert.ok(within("/a/b", "/a/b"));
  assert.ok(within("/a/b/c", "/a/b"));
  assert.ok(!within("/a/bc", "/a/b"));
  assert.ok(!within("/a", "/a/b"));
  assert.ok(!within("", "/a"));
});

test("a conversation's description leaves out the backend's unknown status", () => {
  const c = { sessionId: "s", conversationId: "c", prompt: "p", cwd: "/w", status: "unknown", costUsd: 0.0123, updatedAt: "" };
  assert.equal(describeConversation(c), "$0.0123");
  assert.equal(describeConversation({ ...c, status: "completed" }), "completed · $0.0123");
  assert.equal(describeConversation({ ...c, status: "failed", costUsd: undefined }), "failed");
});
