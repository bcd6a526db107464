// client.mjs drives an ACP agent with the official TypeScript SDK's client
// (@agentclientprotocol/sdk) over the agent's stdio, plays one scenario and
// prints what happened as JSON lines on stdout, for acp/client_e2e_test.go
// and acp/bench_test.go to assert on. It is the "client nobody here wrote" of
// issue 14: every message goes through the SDK's connection and schemas.
//
//   node client.mjs --scenario NAME --cwd DIR [options] -- AGENT ARGV...
//
// The agent command is the argv after `--`, or $ACP_CLIENT_AGENT (a JSON
// array). The agent inherits this process's environment; its stderr is
// passed through to ours. The SDK is the package directory in --sdk or
// $CLAUDE_RELAY_ACP_SDK (`make deps` installs the pinned 2.4.0 and exports
// that variable). SDK 2.x replaced ClientSideConnection with
// `client().onRequest(...).connect(ndJsonStream(...))`, which is what this
// uses.
//
// Scenarios (issue 14, "Tested against a client nobody here wrote"):
// initialize; new_session; bash (a prompt the model answers with a Bash
// call); write_reject (a Write this client rejects); cancel (session/cancel
// while a Bash sleep runs, then a follow-up prompt); load (a new agent
// process loads the first one's session, then continues it); set_mode
// (acceptEdits, then a Write that must run unasked); image (a PNG content
// block from --image); prompts (a resource link and an embedded resource
// among text, an image alone, a follow-up: issue 23); probe (list,
// set_model, set_config_option, resume, fork, close, an unknown method,
// authenticate: answers only, for the feature table); queue (prompts sent
// while one runs, then a cancel with one queued: issue 24); bench (a Bash
// prompt and a cancel, timed, and the peak RSS).
// Permission requests are answered allow_once, reject_once in write_reject.
//
// Output: one JSON object per line, each with "t" (ms since this script
// started) and "event":
//   spawn        {agent, pid, argv}               an agent process started
//   request      {agent, method, tag, params}     a request or notification sent
//   response     {agent, method, tag, ms, result} its answer, ms after sending
//   error        {agent, method, tag, ms, code, message, data}  an error answer
//                                                  (tag: the scenario's name for
//                                                  the request, where it has one)
//   update       {agent, seq, sessionId, kind, update}     a session/update, as it
//                                                  arrived on the wire (before the SDK)
//   notification {agent, method, params}          any other notification
//   permission   {agent, params, answer}          session/request_permission and
//                                                  what this client answered
//   mark         {agent, name, ...}               a scenario milestone (sleep_running,
//                                                  cancel_sent, sleep_gone, ...)
//   rss          {agent, pid, agent_hwm_kb, agent_rss_kb, tree_hwm_kb, tree}
//                                                  peak RSS before the agent is closed
//   exit         {agent, code, signal, stdin_close_exit, leftovers}
//   sdk_error    {message}                        the SDK reported a bad message
//   result       {scenario, ...figures}           the scenario's measurements
//   fail         {message}                        then the exit status is 1
//   done         {scenario}                       the last line of a good run
//
// Any error answer the scenario did not ask for, a message the SDK rejects,
// an agent that exits early or a step that takes too long is a failure: the
// script prints "fail" with what it was doing, kills the agent's process
// tree and exits non-zero. It never waits longer than --timeout-ms in all.

import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { format, parseArgs } from "node:util";

const started = performance.now();
const now = () => Math.round((performance.now() - started) * 10) / 10;

function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ t: now(), event, ...fields }) + "\n");
}

// ---- arguments --------------------------------------------------------

const SCENARIOS = [
  "initialize",
  "new_session",
  "bash",
  "write_reject",
  "cancel",
  "load",
  "set_mode",
  "image",
  "prompts",
  "probe",
  "queue",
  "bench",
];

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    scenario: { type: "string" },
    cwd: { type: "string" },
    sdk: { type: "string" },
    "timeout-ms": { type: "string", default: "120000" },
    "step-timeout-ms": { type: "string", default: "60000" },
    prompt: { type: "string" },
    "followup-prompt": { type: "string", default: "and now?" },
    image: { type: "string" },
    mode: { type: "string", default: "acceptEdits" },
    "sleep-arg": { type: "string", default: "30" },
    // The queue scenario's five prompts, A to E, in order.
    "queue-prompt": { type: "string", multiple: true },
  },
});

function usage(msg) {
  process.stderr.write(
    `client.mjs: ${msg}\n` +
      `usage: node client.mjs --scenario (${SCENARIOS.join("|")}) --cwd DIR [--sdk DIR] [--prompt TEXT] ` +
      `[--image PNG] [--mode ID] [--timeout-ms N] -- AGENT ARGV...\n`,
  );
  process.exit(2);
}

const scenario = opt.scenario;
if (!SCENARIOS.includes(scenario)) usage(`--scenario ${JSON.stringify(scenario)} is not one of ${SCENARIOS.join(", ")}`);
if (!opt.cwd || !path.isAbsolute(opt.cwd)) usage(`--cwd ${JSON.stringify(opt.cwd)} must be an absolute directory (ACP paths are absolute)`);
let agentArgv = positionals;
if (agentArgv.length === 0 && process.env.ACP_CLIENT_AGENT) {
  try {
    agentArgv = JSON.parse(process.env.ACP_CLIENT_AGENT);
  } catch (e) {
    usage(`$ACP_CLIENT_AGENT is not a JSON array of strings: ${e.message}`);
  }
}
if (!Array.isArray(agentArgv) || agentArgv.length === 0) usage("no agent command: give it after `--` or as $ACP_CLIENT_AGENT (JSON array)");
const sdkDir = opt.sdk || process.env.CLAUDE_RELAY_ACP_SDK;
if (!sdkDir) usage("no SDK: pass --sdk DIR or set $CLAUDE_RELAY_ACP_SDK to the @agentclientprotocol/sdk package directory (make deps installs it)");
const totalTimeout = Number(opt["timeout-ms"]);
const stepTimeout = Number(opt["step-timeout-ms"]);

// The unstable profile knows every update kind and method of the schema
// (usage_update, session/fork, ...), so an agent using them is understood,
// not rejected. It is the same connection code as the stable profile.
let acp;
try {
  const req = createRequire(path.join(sdkDir, "package.json"));
  acp = await import(pathToFileURL(req.resolve("@agentclientprotocol/sdk/unstable")).href);
} catch (e) {
  usage(`cannot load @agentclientprotocol/sdk from ${sdkDir}: ${e.message}; run make deps`);
}

// The SDK reports messages it cannot use (invalid JSON-RPC, a notification
// that fails its schema, a response to an unknown request) on console.error:
// each is a protocol error of the agent.
const sdkErrors = [];
console.error = (...args) => {
  const message = format(...args);
  sdkErrors.push(message);
  emit("sdk_error", { message });
};

// ---- failing, and the overall timeout ---------------------------------

let step = "starting";
const agents = [];

class ScenarioError extends Error {}

let failed = false;

// fail reports the first failure only: what follows it (a closed
// connection, a write to a dead pipe) is its consequence.
async function fail(message) {
  if (failed) return;
  failed = true;
  emit("fail", { message: `${scenario}: ${message} (step: ${step})` });
  for (const a of agents) a.killTree();
  process.exitCode = 1;
  // Let stdout drain, then leave even if a handle is still open.
  setTimeout(() => process.exit(1), 200).unref();
}

const overall = setTimeout(() => {
  fail(`no end after ${totalTimeout} ms overall`).then(() => process.exit(1));
}, totalTimeout);
overall.unref();

function within(ms, what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new ScenarioError(`${what}: nothing after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- /proc ------------------------------------------------------------

function procStatusKB(pid, field) {
  try {
    const m = readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(`^${field}:\\s+(\\d+)\\s*kB`, "m"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

// descendants lists pid's living descendants, walking /proc by parent pid.
// A tool the CLI starts runs in a session of its own but is still a child.
function descendants(pid) {
  const children = new Map();
  let entries = [];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (rest[0] === "Z") continue; // zombies are gone; pid 1 here does not reap
      const ppid = Number(rest[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(e));
    } catch {
      // it exited while we looked
    }
  }
  const out = [];
  const todo = [pid];
  while (todo.length) {
    for (const c of children.get(todo.pop()) || []) {
      out.push(c);
      todo.push(c);
    }
  }
  return out;
}

function cmdline(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return [];
  }
}

function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

// ---- one agent process and its connection -----------------------------

class Agent {
  constructor(index) {
    this.index = index;
    this.seq = 0;
    this.waiters = [];
    this.updates = [];
    this.exited = false;
    this.known = new Set(); // every descendant pid seen, for the leftover check
    this.permissionAnswer = "allow_once";
    this.closing = false;
  }

  start() {
    step = `spawning agent ${this.index}`;
    const [cmd, ...args] = agentArgv;
    this.proc = spawn(cmd, args, { stdio: ["pipe", "pipe", "inherit"], cwd: opt.cwd });
    this.exit = new Promise((resolve) => {
      this.proc.on("exit", (code, signal) => {
        this.exited = true;
        this.exitStatus = { code, signal };
        resolve(this.exitStatus);
        if (!this.closing) fail(`agent ${this.index} exited before the scenario ended (code ${code}, signal ${signal})`);
      });
    });
    this.proc.on("error", (e) => fail(`cannot start agent ${JSON.stringify(agentArgv)}: ${e.message}`));
    emit("spawn", { agent: this.index, pid: this.proc.pid, argv: agentArgv });
    // A write to an agent that died is reported by its exit, not here.
    this.proc.stdin.on("error", () => {});

    // Every line the agent writes is logged here, before the SDK reads it,
    // so the log is in wire order and complete up to any response the SDK
    // hands back. A line that is not a JSON object is a protocol error.
    const self = this;
    let buf = "";
    const tap = new TransformStream({
      transform(chunk, controller) {
        buf += Buffer.from(chunk).toString("utf8");
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line) self.onLine(line);
        }
        controller.enqueue(chunk);
      },
    });
    const input = Readable.toWeb(this.proc.stdout).pipeThrough(tap);
    const output = Writable.toWeb(this.proc.stdin);
    const stream = acp.ndJsonStream(output, input);

    const app = acp
      .client({ name: "claude-relay acp e2e client" })
      .onRequest("session/request_permission", ({ params }) => this.onPermission(params))
      // Checked by the SDK's schema; logged by the tap above.
      .onNotification("session/update", () => {})
      .onNotification("*", () => {});
    this.conn = app.connect(stream);
    this.ctx = this.conn.agent;
  }

  onLine(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      fail(`agent ${this.index} wrote a line that is not JSON on stdout: ${JSON.stringify(line.slice(0, 200))}`);
      return;
    }
    if (msg === null || typeof msg !== "object" || Array.isArray(msg) || msg.jsonrpc !== "2.0") {
      fail(`agent ${this.index} wrote a line that is not a JSON-RPC 2.0 message: ${JSON.stringify(line.slice(0, 200))}`);
      return;
    }
    if (msg.method === "session/update" && !("id" in msg)) {
      const p = msg.params || {};
      const u = { seq: ++this.seq, t: now(), sessionId: p.sessionId, kind: p.update?.sessionUpdate, update: p.update };
      this.updates.push(u);
      emit("update", { agent: this.index, seq: u.seq, sessionId: u.sessionId, kind: u.kind, update: u.update });
      this.waiters = this.waiters.filter((w) => !w.match(u) || (w.resolve(u), false));
    } else if ("method" in msg && !("id" in msg)) {
      emit("notification", { agent: this.index, method: msg.method, params: msg.params });
    }
  }

  // waitUpdate resolves with the first update from now on that matches.
  waitUpdate(what, match, ms = stepTimeout) {
    return within(ms, `waiting for ${what} from agent ${this.index}`, new Promise((resolve) => this.waiters.push({ match, resolve })));
  }

  onPermission(params) {
    const want = this.permissionAnswer;
    const options = params.options || [];
    const chosen = options.find((o) => o.kind === want);
    if (!chosen) {
      const offered = options.map((o) => `${o.optionId} (${o.kind})`).join(", ");
      emit("permission", { agent: this.index, params, answer: null });
      fail(`session/request_permission offered no ${want} option: [${offered}]`);
      return { outcome: { outcome: "cancelled" } };
    }
    const answer = { outcome: { outcome: "selected", optionId: chosen.optionId } };
    emit("permission", { agent: this.index, params, answer, kind: want });
    return answer;
  }

  // request sends method and logs the answer; an error answer fails the
  // scenario unless allowError is set (then the error is returned). A tag
  // is logged with the request and its answer, which tells apart the
  // answers of requests in flight together (the queue scenario's prompts).
  async request(method, params, { allowError = false, timeout = stepTimeout, tag } = {}) {
    step = `${method} on agent ${this.index}`;
    emit("request", { agent: this.index, method, tag, params });
    const sent = performance.now();
    try {
      const result = await within(timeout, `the answer to ${method}`, this.ctx.request(method, params));
      const ms = Math.round((performance.now() - sent) * 10) / 10;
      emit("response", { agent: this.index, method, tag, ms, result: result ?? null });
      return { result: result ?? {}, ms, sentAt: sent };
    } catch (e) {
      const ms0 = Math.round((performance.now() - sent) * 10) / 10;
      if (e instanceof ScenarioError && allowError) {
        // A probe that gets no answer is a finding, not a broken run.
        emit("error", { agent: this.index, method, tag, ms: ms0, code: null, message: e.message, data: null });
        return { error: e, ms: ms0, sentAt: sent };
      }
      if (e instanceof ScenarioError) throw e;
      const ms = Math.round((performance.now() - sent) * 10) / 10;
      emit("error", { agent: this.index, method, tag, ms, code: e.code ?? null, message: e.message, data: e.data ?? null });
      if (allowError) return { error: e, ms, sentAt: sent };
      throw new ScenarioError(`${method} failed: ${e.code ?? ""} ${e.message}${e.data ? " " + JSON.stringify(e.data) : ""}`);
    }
  }

  async notify(method, params) {
    emit("request", { agent: this.index, method, params });
    await this.ctx.notify(method, params);
  }

  async initialize() {
    const { result } = await this.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      // An editor that lets the agent use its own tools: no fs, no terminal.
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "claude-relay-e2e", version: "1" },
    });
    if (result.protocolVersion !== acp.PROTOCOL_VERSION) {
      throw new ScenarioError(`initialize answered protocolVersion ${JSON.stringify(result.protocolVersion)}, want ${acp.PROTOCOL_VERSION}`);
    }
    this.init = result;
    return result;
  }

  async newSession() {
    const { result } = await this.request("session/new", { cwd: opt.cwd, mcpServers: [] });
    if (!result.sessionId) throw new ScenarioError(`session/new answered no sessionId: ${JSON.stringify(result)}`);
    return result;
  }

  rss() {
    const pid = this.proc.pid;
    const tree = [pid, ...descendants(pid)];
    const figures = {
      agent: this.index,
      pid,
      agent_hwm_kb: procStatusKB(pid, "VmHWM"),
      agent_rss_kb: procStatusKB(pid, "VmRSS"),
      // Each process's own peak, added up: an upper bound of the tree's
      // peak, since the peaks need not coincide.
      tree_hwm_kb: tree.reduce((s, p) => s + procStatusKB(p, "VmHWM"), 0),
      tree: tree.map((p) => ({ pid: p, hwm_kb: procStatusKB(p, "VmHWM"), argv0: path.basename(cmdline(p)[0] || "?") })),
    };
    emit("rss", figures);
    return figures;
  }

  // close ends the agent the way an editor does: stdin closes. An agent
  // that is still there after 3 s gets SIGTERM, then SIGKILL; descendants
  // still alive 10 s after it left are listed as leftovers and killed.
  async close() {
    step = `closing agent ${this.index}`;
    for (const p of descendants(this.proc.pid)) this.known.add(p);
    this.closing = true;
    try {
      await this.conn.close();
    } catch {
      // closing rejects what was pending; nothing is
    }
    this.proc.stdin.end();
    let stdinCloseExit = true;
    // CONTRACT §4's bound for a stop (10 s): stopping live runs and
    // draining the spool may take a few seconds on a loaded machine.
    const t0 = Date.now();
    const exited = await Promise.race([this.exit.then(() => true), sleep(10000).then(() => false)]);
    emit("stdin_close", { agent: this.index, ms: Date.now() - t0 });
    if (!exited) {
      stdinCloseExit = false;
      this.proc.kill("SIGTERM");
      if (!(await Promise.race([this.exit.then(() => true), sleep(3000).then(() => false)]))) {
        this.proc.kill("SIGKILL");
        await this.exit;
      }
    }
    let leftovers = [...this.known].filter(alive);
    for (let i = 0; i < 100 && leftovers.length; i++) {
      await sleep(100);
      leftovers = leftovers.filter(alive);
    }
    const described = leftovers.map((p) => ({ pid: p, argv: cmdline(p).slice(0, 4) }));
    for (const p of leftovers) {
      try {
        process.kill(p, "SIGKILL");
      } catch {
        // gone
      }
    }
    emit("exit", { agent: this.index, ...this.exitStatus, stdin_close_exit: stdinCloseExit, leftovers: described });
  }

  killTree() {
    if (!this.proc || this.exited) return;
    const pids = [...descendants(this.proc.pid), ...this.known];
    this.closing = true;
    try {
      this.proc.kill("SIGKILL");
    } catch {
      // gone
    }
    for (const p of pids) {
      try {
        process.kill(p, "SIGKILL");
      } catch {
        // gone
      }
    }
  }
}

function newAgent() {
  const a = new Agent(agents.length);
  agents.push(a);
  a.start();
  return a;
}

// ---- prompts ----------------------------------------------------------

// The update kinds that are the turn itself, for "time to the first update".
const TURN_KINDS = new Set(["agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"]);

// prompt sends session/prompt and returns its answer with when the first
// update of the turn came (ms after sending).
async function prompt(agent, sessionId, content, opts = {}) {
  const sentAt = performance.now();
  const res = await agent.request("session/prompt", { sessionId, prompt: content }, opts);
  // A turn with no update is judged by the test: firstMs stays null.
  let firstMs = null;
  const seen = agent.updates.find((u) => u.sessionId === sessionId && TURN_KINDS.has(u.kind) && u.t >= sentAt - started - 0.1);
  if (seen) firstMs = Math.round((seen.t - (sentAt - started)) * 10) / 10;
  return { ...res, firstMs, stopReason: res.result?.stopReason };
}

const text = (s) => [{ type: "text", text: s }];

// waitForSleep waits until the Bash `sleep --sleep-arg` runs under the agent
// and returns its pid; pending is the prompt that asked for it, which must
// not end first.
async function waitForSleep(agent, pending) {
  const sleepArg = opt["sleep-arg"];
  let answered = null;
  pending.then(
    (r) => (answered = r.error ? `error: ${r.error.message}` : (r.result?.stopReason ?? "no stopReason")),
    (e) => (answered = `error: ${e.message}`),
  );
  step = "waiting for the Bash sleep to run";
  let sleepPid = 0;
  const deadline = performance.now() + stepTimeout;
  while (!sleepPid) {
    if (answered !== null) throw new ScenarioError(`the prompt ended (${answered}) before its Bash \`sleep ${sleepArg}\` ran`);
    if (performance.now() > deadline) throw new ScenarioError(`no \`sleep ${sleepArg}\` process under the agent within ${stepTimeout} ms`);
    for (const p of descendants(agent.proc.pid)) {
      agent.known.add(p);
      const argv = cmdline(p);
      if (path.basename(argv[0] || "") === "sleep" && argv[1] === sleepArg) sleepPid = p;
    }
    if (!sleepPid) await sleep(20);
  }
  emit("mark", { agent: agent.index, name: "sleep_running", pid: sleepPid });
  return sleepPid;
}

// runCancel prompts for the Bash `sleep`, waits until the sleep process
// runs under the agent, sends session/cancel and returns how long the
// prompt took to answer after it, and whether the sleep was gone within 10 s.
async function runCancel(agent, sessionId, promptText) {
  const pending = agent.request("session/prompt", { sessionId, prompt: text(promptText) }, { timeout: stepTimeout });
  const sleepPid = await waitForSleep(agent, pending);
  const cancelAt = performance.now();
  await agent.notify("session/cancel", { sessionId });
  emit("mark", { agent: agent.index, name: "cancel_sent" });
  const res = await pending;
  const cancelMs = Math.round((performance.now() - cancelAt) * 10) / 10;
  emit("mark", { agent: agent.index, name: "cancel_answered", ms: cancelMs, stopReason: res.result?.stopReason });
  let goneMs = null;
  for (const startGone = performance.now(); performance.now() - startGone < 10000; await sleep(20)) {
    if (!alive(sleepPid)) {
      goneMs = Math.round((performance.now() - cancelAt) * 10) / 10;
      break;
    }
  }
  emit("mark", { agent: agent.index, name: goneMs === null ? "sleep_left" : "sleep_gone", pid: sleepPid, ms: goneMs });
  return { stopReason: res.result?.stopReason, cancelMs, goneMs };
}

// ---- scenarios --------------------------------------------------------

const run = {
  async initialize() {
    const a = newAgent();
    await a.initialize();
    await a.close();
  },

  async new_session() {
    const a = newAgent();
    await a.initialize();
    await a.newSession();
    await a.close();
  },

  async bash() {
    const a = newAgent();
    await a.initialize();
    const { sessionId } = await a.newSession();
    const p = await prompt(a, sessionId, text(opt.prompt ?? "run the echo"));
    const r = a.rss();
    emit("result", {
      scenario,
      first_update_ms: p.firstMs,
      response_ms: p.ms,
      stop_reason: p.stopReason,
      agent_hwm_kb: r.agent_hwm_kb,
      tree_hwm_kb: r.tree_hwm_kb,
    });
    await a.close();
  },

  // write_reject rejects a Write in the default mode: an agent whose new
  // sessions start in another one (the reference adapter starts in `auto`,
  // where the CLI decides alone) is first set to `default`, as a user who
  // wants to be asked would.
  async write_reject() {
    const a = newAgent();
    a.permissionAnswer = "reject_once";
    await a.initialize();
    const { sessionId, modes } = await a.newSession();
    const current = modes?.currentModeId;
    if (current && current !== "default" && modes.availableModes?.some((m) => m.id === "default")) {
      await a.request("session/set_mode", { sessionId, modeId: "default" });
      emit("mark", { agent: 0, name: "mode_set", from: current, to: "default" });
    }
    const p = await prompt(a, sessionId, text(opt.prompt ?? "write the file"));
    emit("result", { scenario, response_ms: p.ms, stop_reason: p.stopReason });
    await a.close();
  },

  async cancel() {
    const a = newAgent();
    await a.initialize();
    const { sessionId } = await a.newSession();
    const c = await runCancel(a, sessionId, opt.prompt ?? "sleep a while");
    // The prompt after a cancel must get its own answer, not nothing.
    const f = await prompt(a, sessionId, text(opt["followup-prompt"]));
    emit("result", {
      scenario,
      cancel_ms: c.cancelMs,
      stop_reason: c.stopReason,
      sleep_gone_ms: c.goneMs,
      followup_stop_reason: f.stopReason,
      followup_ms: f.ms,
    });
    await a.close();
  },

  async load() {
    const first = newAgent();
    await first.initialize();
    const { sessionId } = await first.newSession();
    const p = await prompt(first, sessionId, text(opt.prompt ?? "run the echo"));
    await first.close();

    const second = newAgent();
    const init = await second.initialize();
    if (!init.agentCapabilities?.loadSession) throw new ScenarioError("initialize says agentCapabilities.loadSession is not true");
    emit("mark", { agent: 1, name: "load_start" });
    const l = await second.request("session/load", { sessionId, cwd: opt.cwd, mcpServers: [] });
    emit("mark", { agent: 1, name: "load_answered" });
    const f = await prompt(second, sessionId, text(opt["followup-prompt"]));
    emit("result", { scenario, session_id: sessionId, first_stop_reason: p.stopReason, load_ms: l.ms, followup_stop_reason: f.stopReason });
    await second.close();
  },

  async set_mode() {
    const a = newAgent();
    await a.initialize();
    const session = await a.newSession();
    const modes = session.modes?.availableModes?.map((m) => m.id) ?? [];
    if (!modes.includes(opt.mode)) {
      throw new ScenarioError(`session/new offers modes [${modes.join(", ")}], not ${opt.mode}`);
    }
    const update = a.waitUpdate(`current_mode_update to ${opt.mode}`, (u) => u.sessionId === session.sessionId && u.kind === "current_mode_update", 3000);
    update.catch(() => {});
    await a.request("session/set_mode", { sessionId: session.sessionId, modeId: opt.mode });
    let sawUpdate = true;
    try {
      await update; // it may come just after the answer
    } catch {
      sawUpdate = false;
    }
    emit("mark", { agent: 0, name: sawUpdate ? "mode_update_seen" : "mode_update_missing" });
    // The mode must reach the CLI: in acceptEdits a Write runs unasked.
    const p = await prompt(a, session.sessionId, text(opt.prompt ?? "write the file"));
    emit("result", { scenario, stop_reason: p.stopReason, mode_update: sawUpdate });
    await a.close();
  },

  async image() {
    if (!opt.image) usage("the image scenario needs --image PNG");
    const data = readFileSync(opt.image).toString("base64");
    const a = newAgent();
    const init = await a.initialize();
    if (!init.agentCapabilities?.promptCapabilities?.image) throw new ScenarioError("initialize says promptCapabilities.image is not true");
    const { sessionId } = await a.newSession();
    const p = await prompt(a, sessionId, [
      { type: "text", text: opt.prompt ?? "what is in this picture?" },
      { type: "image", mimeType: "image/png", data },
    ]);
    emit("result", { scenario, stop_reason: p.stopReason, response_ms: p.ms });
    await a.close();
  },

  // prompts sends what an editor sends (issue 23): text around a resource
  // link and an embedded resource, then an image alone (--image), then a
  // text follow-up; the test reads what the backend stored of each.
  async prompts() {
    if (!opt.image) usage("the prompts scenario needs --image PNG");
    const data = readFileSync(opt.image).toString("base64");
    const a = newAgent();
    await a.initialize();
    const { sessionId } = await a.newSession();
    const file = path.join(opt.cwd, "parser_test.go");
    const first = await prompt(a, sessionId, [
      { type: "text", text: opt.prompt ?? "Explain why the parser test is flaky in " },
      { type: "resource_link", uri: pathToFileURL(file).href, name: "parser_test.go" },
      { type: "text", text: " and fix it" },
      { type: "resource", resource: { uri: pathToFileURL(path.join(opt.cwd, "notes.md")).href, mimeType: "text/markdown", text: "the flake shows under -race" } },
    ]);
    const image = await prompt(a, sessionId, [{ type: "image", mimeType: "image/png", data, uri: pathToFileURL(opt.image).href }]);
    const followup = await prompt(a, sessionId, text(opt["followup-prompt"]));
    emit("result", { scenario, session_id: sessionId, stop_reasons: [first.stopReason, image.stopReason, followup.stopReason] });
    await a.close();
  },

  // probe asks for everything beyond the scenarios above, for the feature
  // table: each answer, error or not, is in the log.
  async probe() {
    const a = newAgent();
    await a.initialize();
    const session = await a.newSession();
    const sid = session.sessionId;
    // A conversation to list, resume and fork.
    const p = await prompt(a, sid, text(opt.prompt ?? "hello probe"));
    if (p.stopReason !== "end_turn") throw new ScenarioError(`the probe's prompt ended with ${p.stopReason}, want end_turn`);
    // Every probe gets 10 s: an agent that never answers one is noted, and
    // the next probe still runs.
    const probe = { allowError: true, timeout: 10000 };
    await a.request("session/list", { cwd: opt.cwd }, probe);
    const model = session.models?.availableModels?.[0]?.modelId;
    if (model) await a.request("session/set_model", { sessionId: sid, modelId: model }, probe);
    const cfg = (session.configOptions || []).find((o) => o.id === "model" || o.category === "model");
    if (cfg) {
      const value = cfg.options?.flatMap((o) => (o.options ? o.options : [o]))?.[0]?.value;
      if (value) await a.request("session/set_config_option", { sessionId: sid, configId: cfg.id, value }, probe);
    }
    await a.request("session/resume", { sessionId: sid, cwd: opt.cwd, mcpServers: [] }, probe);
    await a.request("session/fork", { sessionId: sid, cwd: opt.cwd, mcpServers: [] }, probe);
    await a.request("session/close", { sessionId: sid }, probe);
    await a.request("_claude_relay/no_such_method", {}, probe);
    await a.request("authenticate", { methodId: "no-such-method" }, probe);
    await a.close();
  },

  // queue sends prompts while one runs (issue 24). Part 1: prompt A, then
  // at once prompt B; a queueing agent answers A, then runs B as a turn of
  // its own. Part 2: prompt C runs a Bash sleep, prompt D is sent behind
  // it, then session/cancel: both answer cancelled and D never reaches the
  // model; prompt E then gets its own answer. B's and D's answers are taken
  // as they come (an error, a steer into the running turn): the test judges
  // them, so one agent's way does not stop the run.
  async queue() {
    const texts = opt["queue-prompt"] ?? [];
    if (texts.length !== 5) usage(`the queue scenario needs --queue-prompt five times (A to E), got ${texts.length}`);
    const [textA, textB, textC, textD, textE] = texts;
    const a = newAgent();
    const init = await a.initialize();
    emit("mark", { agent: 0, name: "prompt_queueing", value: init.agentCapabilities?._meta?.claudeCode?.promptQueueing ?? null });
    const { sessionId } = await a.newSession();
    const ask = (tag, s) => prompt(a, sessionId, text(s), { allowError: true, tag });
    const outcome = (r) => r.stopReason ?? `error ${r.error?.code ?? ""} ${r.error?.message ?? ""}`.trim();

    // Both requests are on the wire before either is answered.
    const [ra, rb] = await Promise.all([ask("A", textA), ask("B", textB)]);
    emit("mark", { agent: 0, name: "queue_ab", a: outcome(ra), b: outcome(rb) });
    // An agent that refused B gets it again now, as an editor without
    // queueing would send it: the conversation then holds B's turn either
    // way, which the scripted API's next replies count on.
    if (rb.error) {
      const again = await ask("B-again", textB);
      emit("mark", { agent: 0, name: "queue_b_again", b: outcome(again) });
    }

    const pc = ask("C", textC);
    await waitForSleep(a, pc);
    const pd = ask("D", textD);
    // A round trip after D, so that the agent has read D before the
    // cancel (it answers the unknown method once it read the line after D).
    await a.request("_claude_relay/no_such_method", {}, { allowError: true, timeout: 10000 });
    await a.notify("session/cancel", { sessionId });
    emit("mark", { agent: 0, name: "cancel_sent" });
    const [rc, rd] = await Promise.all([pc, pd]);
    emit("mark", { agent: 0, name: "queue_cd", c: outcome(rc), d: outcome(rd) });
    const re = await ask("E", textE);
    emit("result", { scenario, a: outcome(ra), b: outcome(rb), c: outcome(rc), d: outcome(rd), e: outcome(re) });
    await a.close();
  },

  // bench is one measured run: a one-Bash-tool prompt, then a cancel
  // during a Bash sleep, then the agent's peak RSS.
  async bench() {
    const a = newAgent();
    await a.initialize();
    const { sessionId } = await a.newSession();
    await sleep(200); // let the session settle, as an editor would before the user types
    const p = await prompt(a, sessionId, text(opt.prompt ?? "run the echo"));
    if (p.stopReason !== "end_turn") throw new ScenarioError(`the Bash prompt ended with ${p.stopReason}, want end_turn`);
    const c = await runCancel(a, sessionId, "sleep a while");
    if (c.stopReason !== "cancelled") throw new ScenarioError(`the cancelled prompt ended with ${c.stopReason}, want cancelled`);
    const r = a.rss();
    emit("result", {
      scenario,
      first_update_ms: p.firstMs,
      response_ms: p.ms,
      cancel_ms: c.cancelMs,
      agent_hwm_kb: r.agent_hwm_kb,
      tree_hwm_kb: r.tree_hwm_kb,
    });
    await a.close();
  },
};

try {
  await run[scenario]();
  if (sdkErrors.length) throw new ScenarioError(`the SDK rejected ${sdkErrors.length} message(s) from the agent; first: ${sdkErrors[0]}`);
  if (!failed) {
    emit("done", { scenario });
    clearTimeout(overall);
  }
  // Nothing should hold the process open now; if something does, leave.
  setTimeout(() => process.exit(process.exitCode ?? 0), 500).unref();
} catch (e) {
  await fail(e instanceof ScenarioError ? e.message : `${e.stack || e}`);
}
