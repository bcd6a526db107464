// bench.mjs runs one turn through the official TypeScript Agent SDK
// (@anthropic-ai/claude-agent-sdk) for executor's BenchmarkRealTurn, so the
// relay can be compared with what an SDK user pays for the same turn.
//
// Input, all from the environment (SDKBENCH_* are removed before the rest of
// the environment is handed to the CLI, which gets exactly what the Go
// benchmark's other variants give it):
//
//   SDKBENCH_SDK        the SDK package directory (…/node_modules/@anthropic-ai/claude-agent-sdk)
//   SDKBENCH_CLI        the Claude CLI to run (pathToClaudeCodeExecutable)
//   SDKBENCH_CWD        the working directory of the turn
//   SDKBENCH_PROMPT     the prompt
//   SDKBENCH_MAX_TURNS  the turn limit
//
// Output: one JSON line per milestone on stdout, written as it happens (stdout
// writes to a pipe are synchronous on Linux, so the reader's clock is good
// too). "ms" is milliseconds since this process started (performance.now()
// counts from the process's time origin):
//
//   {"event":"ready","ms":…}                          the SDK is imported; query() comes next
//   {"event":"init","ms":…}                           system/init arrived
//   {"event":"result","ms":…,"subtype":…,"is_error":…,"result":…}
//   {"event":"done","ms":…,"rss_mb":…,"hwm_mb":…}    the CLI exited; this process's RSS and peak RSS
//   {"event":"error","ms":…,"message":…}              and exit status 1
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

// peakRSS reads this process's peak resident set (VmHWM), in MB; 0 where
// /proc is not there.
function peakRSS() {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

async function main() {
  const { query } = await import(sdkEntry(need('SDKBENCH_SDK')));
  const cli = need('SDKBENCH_CLI');
  const cwd = need('SDKBENCH_CWD');
  const prompt = need('SDKBENCH_PROMPT');
  const maxTurns = Number(process.env.SDKBENCH_MAX_TURNS || '6');
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SDKBENCH_')));
  emit('ready');

  const q = query({
    prompt,
    options: {
      pathToClaudeCodeExecutable: cli,
      cwd,
      env, // replaces the CLI's environment entirely
      maxTurns,
      permissionMode: 'default',
      // Like the relay, answer permission prompts over stdio: with canUseTool
      // the SDK passes --permission-prompt-tool stdio. Allow everything.
      canUseTool: async (_tool, input) => ({ behavior: 'allow', updatedInput: input }),
      stderr: (data) => process.stderr.write(data),
    },
  });
  let sawResult = false;
  for await (const msg of q) {
    if (msg.type === 'system' && msg.subtype === 'init') {
      emit('init');
    } else if (msg.type === 'result') {
      sawResult = true;
      emit('result', { subtype: msg.subtype, is_error: msg.is_error, result: msg.result ?? '' });
    }
  }
  if (!sawResult) throw new Error('the SDK query ended without a result');
  emit('done', { rss_mb: process.memoryUsage().rss / (1 << 20), hwm_mb: peakRSS() });
}

main().then(
  () => process.exit(0),
  (err) => {
    emit('error', { message: String(err?.stack ?? err) });
    process.exit(1);
  },
);
