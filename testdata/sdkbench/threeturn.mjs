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

import { emit, need, run, setup } from './common.mjs';

run(async () => {
  const { query, options } = await setup();
  const prompts = JSON.parse(need('SDKBENCH_PROMPTS'));
  if (!Array.isArray(prompts) || prompts.length === 0) throw new Error('SDKBENCH_PROMPTS must be a non-empty JSON array');
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

  const q = query({ prompt: messages(), options });
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
});
