// RelayClient against the real helper binary and the real pinned CLI on the Go scripted API.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test, type TestContext } from "node:test";
import { RelayClient, RelayError, type Event, type RestartInfo } from "../../src/client";
import { binaries, mockAPI, Recorder, tempDir, type Binaries, type Turn } from "./helpers";

const timeout = 180_000;
let bins: Binaries | undefined;
const clients: RelayClient[] = [];

before(() => {
  bins = binaries();
});

after(async () => {
  await Promise.all(clients.map((c) => c.shutdown().catch(() => undefined)));
});

interface Setup {
  client: RelayClient;
  cwd: string;
  api: NonNullable<Awaited<ReturnType<typeof mockAPI>>>;
  all: Recorder;
}

/** A client on a fresh helper whose CLI talks to script; undefined when the test was skipped. */
async function setup(t: TestContext, script: Turn[], restart = true): Promise<Setup | undefined> {
  if (!bins) {
    t.skip("go is not installed");
    return undefined;
  }
  const cwd = tempDir("claude-relay-vscode-cwd-");
  const api = await mockAPI(t, bins, script, cwd);
  if (!api) {
    return undefined;
  }
  const stderr: string[] = [];
  const client = await RelayClient.start({ path: bins.helper, env: api.env, cwd, restart, onStderr: (l) => stderr.push(l) });
  clients.push(client);
  const all = new Recorder(client);
  t.after(() => {
    all.dispose();
    return client.shutdown();
  });
  return { client, cwd, api, all };
}

const stdoutOf = (e: Event): string => (e.event === "run_completed" ? e.result.stdout : `(${e.event})`);

describe("RelayClient on the real helper", { concurrency: false }, () => {
  test("ready describes the helper and the CLI", { timeout }, async (t) => {
    const s = await setup(t, []);
    if (!s) return;
    assert.equal(s.client.ready.event, "ready");
    assert.equal(s.client.ready.protocol, 2);
    assert.ok(s.client.ready.pid > 0);
    assert.equal(s.client.ready.cli_path, s.api.env.CLAUDE_RELAY_CLAUDE_PATH);
    const st = await s.client.status();
    assert.equal(st.state, "idle");
    assert.deepEqual(st.runs ?? [], []);
  });

  test("a Bash call asks; allow runs it and the run completes", { timeout }, async (t) => {
    const s = await setup(t, [
      // Not read-only, so the CLI's rules ask (a bare echo would be allowed without asking).
      { tool_use: { name: "Bash", input: { command: "touch allowed.txt && echo approved-ok", description: "Touch" } } },
      { text: "All done." },
    ]);
    if (!s) return;
    const run = await s.client.prompt("go", { cwd: s.cwd, approvals: true, max_turns: 4 }, { sessionId: "sess-allow" });
    assert.equal(run.sessionId, "sess-allow");
    const rec = new Recorder(run);
    const ask = await rec.waitFor("approval_requested", (e) => e.event === "approval_requested");
    assert.ok(ask.event === "approval_requested");
    assert.equal(ask.tool_name, "Bash");
    assert.match(ask.title ?? "", /touch allowed\.txt && echo approved-ok/); // the whole command
    assert.deepEqual(ask.options, ["allow", "allow_always", "deny"]);
    await s.client.approve(ask.approval_id, "allow", { runId: run.id });
    const end = await run.done;
    assert.equal(end.event, "run_completed", rec.dump());
    assert.equal(stdoutOf(end), "All done.");
    assert.equal(end.result.exitCode, 0);
    const results = await s.api.toolResults();
    assert.equal(results.length, 1);
    assert.match(results[0]?.content ?? "", /approved-ok/);
    assert.equal(results[0]?.is_error, false);
    assert.ok(existsSync(join(s.cwd, "allowed.txt")), "the allowed command did not run");
    // The run's own events came in order, from run_started to its end, and the client saw them too.
    assert.equal(rec.events[0]?.event, "run_started");
    assert.equal(rec.events.at(-1)?.event, "run_completed");
    assert.ok(s.all.events.some((e) => e.event === "approval_requested" && e.run_id === run.id));
  });

  test("deny keeps the command from running and tells the model why", { timeout }, async (t) => {
    const s = await setup(t, [
      { tool_use: { name: "Bash", input: { command: "touch denied.txt", description: "Touch" } } },
      { text: "did not touch" },
    ]);
    if (!s) return;
    const run = await s.client.prompt("go", { cwd: s.cwd, approvals: true, max_turns: 4 });
    const rec = new Recorder(run);
    const ask = await rec.waitFor("approval_requested", (e) => e.event === "approval_requested");
    assert.ok(ask.event === "approval_requested");
    await s.client.approve(ask.approval_id, "deny", { reason: "not in this test" });
    const end = await run.done;
    assert.equal(end.event, "run_completed", rec.dump());
    assert.equal(stdoutOf(end), "did not touch");
    assert.equal(existsSync(join(s.cwd, "denied.txt")), false, "the denied command ran");
    const results = await s.api.toolResults();
    assert.equal(results.length, 1);
    assert.equal(results[0]?.is_error, true);
    assert.match(results[0]?.content ?? "", /not in this test/);
  });

  test("a keep_alive run takes a follow-up and ends on end()", { timeout }, async (t) => {
    const s = await setup(t, [{ text: "first answer" }, { text: "second answer" }]);
    if (!s) return;
    const run = await s.client.prompt("one", { cwd: s.cwd, keep_alive: true });
    const rec = new Recorder(run);
    const first = await rec.waitFor("turn 1", (e) => e.event === "turn_completed" && e.turn === 1);
    assert.ok(first.event === "turn_completed");
    assert.equal(first.result.stdout, "first answer");
    await run.setMode("acceptEdits");
    const mode = await rec.waitFor("mode_changed", (e) => e.event === "mode_changed" && e.permission_mode === "acceptEdits");
    assert.equal(mode.run_id, run.id);
    await run.setModel("");
    await assert.rejects(run.setMode("sideways"), { code: "bad_value", message: /permission_mode "sideways"/ });
    await run.send("two");
    const second = await rec.waitFor("turn 2", (e) => e.event === "turn_completed" && e.turn === 2);
    assert.ok(second.event === "turn_completed");
    assert.equal(second.result.stdout, "second answer");
    await run.end();
    const end = await run.done;
    assert.equal(end.event, "run_completed", rec.dump());
  });

  test("cancel stops a running tool and the run ends cancelled", { timeout }, async (t) => {
    const s = await setup(t, [
      { tool_use: { name: "Bash", input: { command: "sleep 120", description: "Sleep" } } },
      { text: "woke up" },
    ]);
    if (!s) return;
    const run = await s.client.prompt("go", { cwd: s.cwd, max_turns: 4 });
    const rec = new Recorder(run);
    // The tool call reached the CLI: it runs now (approvals are off).
    await rec.waitFor("the Bash tool_use", (e) => e.event === "stream" && JSON.stringify(e.payload).includes("sleep 120"));
    await run.cancel();
    const end = await run.done;
    assert.equal(end.event, "run_cancelled", rec.dump());
  });

  test("refused commands reject with the helper's message and code", { timeout }, async (t) => {
    const s = await setup(t, [{ text: "hi" }]);
    if (!s) return;
    await assert.rejects(s.client.approve("no-such-approval", "allow"), (err: unknown) => {
      assert.ok(err instanceof RelayError);
      assert.equal(err.code, "unknown_approval");
      return true;
    });
    await assert.rejects(s.client.approve("x", "maybe"), { name: "RelayError", code: "bad_value", message: /decision "maybe"/ });
    await assert.rejects(s.client.prompt("go", { cwd: s.cwd, idle_timeout: "soon" }), {
      code: "bad_value",
      message: /idle_timeout "soon"/,
    });
    await assert.rejects(s.client.prompt("go", { cwd: join(s.cwd, "missing") }), { name: "RelayError" });
    // A one-shot run takes no follow-up.
    const run = await s.client.prompt("go", { cwd: s.cwd });
    await assert.rejects(run.send("more"), (err: unknown) => err instanceof RelayError && (err.code === "not_live" || err.code === "unknown_run"));
    assert.equal((await run.done).event, "run_completed");
    // The helper kept serving, and no bookkeeping answer leaked to listeners.
    assert.equal((await s.client.status()).state, "idle");
    assert.ok(!s.all.events.some((e) => e.event === "status" && (e.request_id ?? "").endsWith(".ack")), s.all.dump());
  });

  test("a killed helper is restarted and reported; its runs fail", { timeout }, async (t) => {
    const s = await setup(t, [{ text: "alive" }]);
    if (!s) return;
    const run = await s.client.prompt("hold", { cwd: s.cwd, keep_alive: true });
    const rec = new Recorder(run);
    await rec.waitFor("turn 1", (e) => e.event === "turn_completed");
    const oldPid = s.client.ready.pid;
    const restarted = new Promise<RestartInfo>((resolve) => s.client.onRestart(resolve));
    process.kill(oldPid, "SIGKILL");
    const info = await restarted;
    assert.deepEqual(info, { code: null, signal: "SIGKILL", restarts: 1 });
    assert.notEqual(s.client.ready.pid, oldPid);
    const end = await run.done;
    assert.equal(end.event, "run_failed");
    assert.equal(end.reason, "helper_exited");
    assert.match(end.result.stderr, /SIGKILL/);
    // The new helper serves.
    assert.equal((await s.client.status()).state, "idle");
  });

  test("with restart off, a killed helper is not restarted and commands say so", { timeout }, async (t) => {
    const s = await setup(t, [], false);
    if (!s) return;
    let restarts = 0;
    s.client.onRestart(() => restarts++);
    process.kill(s.client.ready.pid, "SIGKILL");
    // Until the client has seen the exit, status may still be answered; then it must fail.
    let err: unknown;
    for (let i = 0; i < 600 && err === undefined; i++) {
      err = await s.client.status().then(
        () => new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 50)),
        (e: unknown) => e,
      );
    }
    assert.ok(err instanceof RelayError, String(err));
    assert.equal(err.code, "helper_exited");
    assert.match(err.message, /on signal SIGKILL; restart is off/);
    assert.equal(restarts, 0);
  });
});

test("start rejects, naming the path, when the helper cannot start", async () => {
  await assert.rejects(RelayClient.start({ path: "/nonexistent/claude-relay" }), {
    name: "RelayError",
    message: /cannot start claude-relay at \/nonexistent\/claude-relay/,
  });
});

test("start rejects with the helper's stderr when it exits before ready", async () => {
  await assert.rejects(RelayClient.start({ path: "/bin/sh", args: ["-c", "echo broken config >&2; exit 3"] }), {
    message: /exited with status 3 before it was ready[\s\S]*broken config/,
  });
});
