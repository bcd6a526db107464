// common.mjs is what bench.mjs and threeturn.mjs share: reading the
// SDKBENCH_* environment, importing the Agent SDK from its directory, the
// query options both pass (so both pay what a relay run pays), and the
// milestone lines they print.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';

// emit prints one milestone line; "ms" counts from this process's start.
export function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ms: performance.now(), ...fields }) + '\n');
}

export function need(name) {
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

// setup imports the SDK and returns its query() and the options of a run:
// the pinned CLI, the cwd, the turn limit and the environment without our
// own SDKBENCH_ variables (it replaces the CLI's environment entirely).
// Permission prompts are answered over stdio, as the relay answers them
// (canUseTool makes the SDK pass --permission-prompt-tool stdio), allowing
// everything.
export async function setup() {
  const { query } = await import(sdkEntry(need('SDKBENCH_SDK')));
  const options = {
    pathToClaudeCodeExecutable: need('SDKBENCH_CLI'),
    cwd: need('SDKBENCH_CWD'),
    env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SDKBENCH_'))),
    maxTurns: Number(process.env.SDKBENCH_MAX_TURNS || '6'),
    permissionMode: 'default',
    canUseTool: async (_tool, input) => ({ behavior: 'allow', updatedInput: input }),
    stderr: (data) => process.stderr.write(data),
  };
  return { query, options };
}

// run runs main and exits 0, or prints an error milestone and exits 1.
export function run(main) {
  main().then(
    () => process.exit(0),
    (err) => {
      emit('error', { message: String(err?.stack ?? err) });
      process.exit(1);
    },
  );
}
