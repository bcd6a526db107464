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
import { emit, need, run, setup } from './common.mjs';

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

run(async () => {
  const { query, options } = await setup();
  const prompt = need('SDKBENCH_PROMPT');
  emit('ready');

  const q = query({ prompt, options });
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
});
