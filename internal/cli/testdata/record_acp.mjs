// record_acp.mjs drives `claude-relay acp` with the official ACP client
// (@agentclientprotocol/sdk) through the session internal/cli's
// TestRecordEverySource reads back from the dashboard (issue 23): initialize,
// session/new, a first prompt, a second whose Bash `sleep` is stopped with
// session/cancel once the sleep runs, a third prompt, then stdin closes
// while the session is idle, as an editor quitting does.
//
//   node record_acp.mjs --cwd DIR --prompts JSON [--sleep-arg N] [--sdk DIR] -- AGENT ARGV...
//
// --prompts is a JSON array of the three prompts' texts. The SDK is the
// package directory in --sdk or $CLAUDE_RELAY_ACP_SDK. Permission requests
// are answered allow_once.
//
// Output, one JSON object per line: {"event":"session","sessionId"},
// {"event":"stop","n","stopReason"} per prompt, {"event":"exit","code",
// "signal","ms"} once the agent left after stdin closed, then
// {"event":"done"}; or {"event":"fail","message"} and exit status 1. The
// whole script gives up after --timeout-ms.

import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values: opt, positionals: agentArgv } = parseArgs({
  allowPositionals: true,
  options: {
    cwd: { type: "string" },
    prompts: { type: "string" },
    sdk: { type: "string" },
    "sleep-arg": { type: "string", default: "3195" },
    "timeout-ms": { type: "string", default: "180000" },
  },
});

const emit = (event, fields = {}) => process.stdout.write(JSON.stringify({ event, ...fields }) + "\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let agent;
function fail(message) {
  emit("fail", { message });
  if (agent && agent.exitCode === null) {
    for (const p of descendants(agent.pid)) {
      try {
        process.kill(p, "SIGKILL");
      } catch {
        // gone
      }
    }
    agent.kill("SIGKILL");
  }
  process.exit(1);
}

const prompts = JSON.parse(opt.prompts || "[]");
if (!opt.cwd || prompts.length !== 3 || agentArgv.length === 0) fail("usage: --cwd DIR --prompts '[p1,p2,p3]' -- AGENT ARGV...");
const sdkDir = opt.sdk || process.env.CLAUDE_RELAY_ACP_SDK;
if (!sdkDir) fail("no SDK: pass --sdk DIR or set $CLAUDE_RELAY_ACP_SDK");
setTimeout(() => fail(`no end after ${opt["timeout-ms"]} ms`), Number(opt["timeout-ms"])).unref();

let acp;
try {
  const req = createRequire(path.join(sdkDir, "package.json"));
  acp = await import(pathToFileURL(req.resolve("@agentclientprotocol/sdk/unstable")).href);
} catch (e) {
  fail(`cannot load @agentclientprotocol/sdk from ${sdkDir}: ${e.message}`);
}

// descendants lists pid's living descendants by walking /proc: the Bash
// tool's shell runs in a session of its own but is still a child.
function descendants(pid) {
  const children = new Map();
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (rest[0] === "Z") continue;
      const ppid = Number(rest[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(e));
    } catch {
      // it exited while we looked
    }
  }
  const out = [];
  for (const todo = [pid]; todo.length; ) {
    for (const c of children.get(todo.pop()) || []) {
      out.push(c);
      todo.push(c);
    }
  }
  return out;
}

function argvOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return [];
  }
}

let closing = false;
const [cmd, ...args] = agentArgv;
agent = spawn(cmd, args, { stdio: ["pipe", "pipe", "inherit"], cwd: opt.cwd });
const exited = new Promise((resolve) =>
  agent.on("exit", (code, signal) => {
    if (!closing) fail(`the agent exited before the session ended (code ${code}, signal ${signal})`);
    resolve({ code, signal });
  }),
);
agent.on("error", (e) => fail(`cannot start ${JSON.stringify(agentArgv)}: ${e.message}`));
agent.stdin.on("error", () => {});

const conn = acp
  .client({ name: "claude-relay record e2e client" })
  .onRequest("session/request_permission", ({ params }) => {
    const chosen = (params.options || []).find((o) => o.kind === "allow_once");
    if (!chosen) fail(`session/request_permission offered no allow_once: ${JSON.stringify(params.options)}`);
    return { outcome: { outcome: "selected", optionId: chosen.optionId } };
  })
  .onNotification("session/update", () => {})
  .onNotification("*", () => {})
  .connect(acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout)));
const rpc = conn.agent;

async function prompt(n, sessionId) {
  const res = await rpc.request("session/prompt", { sessionId, prompt: [{ type: "text", text: prompts[n - 1] }] });
  emit("stop", { n, stopReason: res?.stopReason ?? null });
  return res?.stopReason;
}

try {
  await rpc.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "claude-relay-record-e2e", version: "1" },
  });
  const { sessionId } = await rpc.request("session/new", { cwd: opt.cwd, mcpServers: [] });
  emit("session", { sessionId });

  await prompt(1, sessionId);

  // The second prompt runs a Bash sleep: cancel it once the sleep runs.
  const second = prompt(2, sessionId);
  let answered = false;
  second.then(() => (answered = true), () => (answered = true));
  const sleepArg = opt["sleep-arg"];
  for (let found = false; !found; ) {
    if (answered) throw new Error(`the second prompt ended before its Bash \`sleep ${sleepArg}\` ran`);
    found = descendants(agent.pid).some((p) => {
      const argv = argvOf(p);
      return path.basename(argv[0] || "") === "sleep" && argv[1] === sleepArg;
    });
    if (!found) await sleep(50);
  }
  await rpc.notify("session/cancel", { sessionId });
  await second;

  await prompt(3, sessionId);

  // Idle now: the editor goes away.
  closing = true;
  const t0 = Date.now();
  try {
    await conn.close();
  } catch {
    // nothing was pending
  }
  agent.stdin.end();
  const st = await Promise.race([exited, sleep(15000).then(() => null)]);
  if (!st) throw new Error("the agent did not exit within 15 s of its stdin closing");
  emit("exit", { ...st, ms: Date.now() - t0 });
  emit("done");
  process.exit(0);
} catch (e) {
  fail(`${e.message || e}${e.data ? " " + JSON.stringify(e.data) : ""}`);
}
