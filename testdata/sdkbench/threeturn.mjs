// threeturn.mjs runs a three-turn conversation through the official
// TypeScript Agent SDK's streaming input mode (query() with an async iterable
// of user messages) for executor's BenchmarkThreeTurn: each message is
// yielded only after the previous turn's result, so the turns run one after
// the other in one CLI process, as a live relay run does.
//
// Input, all from the environment (SDKBENCH_* are removed before the rest of
// the environment is handed to the CLI, which gets exactly what the Go
// benchmark's relay variant gives it):
//
//   SDKBENCH_SDK        the SDK package directory (…/node_modules/@anthropic-ai/claude-agent-sdk)
//   SDKBENCH_CLI        the Claude CLI to run (pathToClaudeCodeExecutable)
//   SDKBENCH_CWD        the working directory of the conversation
//   SDKBENCH_PROMPTS    the prompts, a JSON array of strings, one per turn
//   SDKBENCH_MAX_TURNS  the turn limit
//
// Output: one JSON line per milestone on stdout, written as it happens (see
// bench.mjs). "ms" is milliseconds since this process started:
//
//   {"event":"ready","ms":…}                                   the SDK is imported; query() comes next
//   {"event":"init","ms":…}                                    system/init arrived
//   {"event":"result","ms":…,"turn":…,"subtype":…,"is_error":…,"result":…}   one per turn
//   {"event":"done","ms":…}                                    the query ended (the CLI exited)
//   {"event":"error","ms":…,"message":…}                       and exit status 1
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';

function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ms: performance.now(), ...fields }) + '\n');
}

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

// sdkEntry finds the module the package exports as ".", as `import` would.
function sdkEntry(dir) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const dot = pkg.exports?.['.'];
  const file = (typeof dot === 'string' ? dot : dot?.import ?? dot?.default) ?? pkg.main ?? 'index.js';
  return pathToFileURL(join(dir, file)).href;
}

async function main() {
  const { query } = await import(sdkEntry(need('SDKBENCH_SDK')));
  const cli = need('SDKBENCH_CLI');
  const cwd = need('SDKBENCH_CWD');
  const prompts = JSON.parse(need('SDKBENCH_PROMPTS'));
  if (!Array.isArray(prompts) || prompts.length === 0) throw new Error('SDKBENCH_PROMPTS must be a non-empty JSON array');
  const maxTurns = Number(process.env.SDKBENCH_MAX_TURNS || '6');
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SDKBENCH_')));
  emit('ready');

  // Each result resolves the promise the generator waits on before it
  // yields the next message.
  let resultSeen = () => {};
  const nextResult = () => new Promise((resolve) => { resultSeen = resolve; });
  async function* messages() {
    for (let i = 0; i < prompts.length; i++) {
      const waitForResult = nextResult();
      yield {
        type: 'user',
        message: { role: 'user', content: prompts[i] },
        parent_tool_use_id: null,
        session_id: '',
      };
      // After the last message the generator returns: the SDK then closes
      // the CLI's stdin once that turn is over.
      if (i < prompts.length - 1) await waitForResult;
    }
  }

  const q = query({
    prompt: messages(),
    options: {
      pathToClaudeCodeExecutable: cli,
      cwd,
      env, // replaces the CLI's environment entirely
      maxTurns,
      permissionMode: 'default',
      // As in bench.mjs: answer permission prompts over stdio, like the relay.
      canUseTool: async (_tool, input) => ({ behavior: 'allow', updatedInput: input }),
      stderr: (data) => process.stderr.write(data),
    },
  });
  let turn = 0;
  for await (const msg of q) {
    if (msg.type === 'system' && msg.subtype === 'init' && turn === 0) {
      emit('init');
    } else if (msg.type === 'result') {
      turn++;
      emit('result', { turn, subtype: msg.subtype, is_error: msg.is_error, result: msg.result ?? '' });
      resultSeen();
    }
  }
  if (turn !== prompts.length) throw new Error(`the SDK query ended after ${turn} results, want ${prompts.length}`);
  emit('done');
}

main().then(
  () => process.exit(0),
  (err) => {
    emit('error', { message: String(err?.stack ?? err) });
    process.exit(1);
  },
);
