// Test support: builds the real helper and the Go scripted Messages API (internal/testkit/mockapi,
// served by its cmd/mockapi), prepares an isolated HOME for the real CLI, and waits for events.
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { TestContext } from "node:test";
import { LineSplitter } from "../../src/client/lines";
import type { Disposable, Event } from "../../src/client";

/** The repository root: the directory above this file that holds go.mod. */
export function repoRoot(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "go.mod"))) {
      return dir;
    }
    if (dirname(dir) === dir) {
      throw new Error(`no go.mod above ${__dirname}: run the tests from the claude-relay repository`);
    }
  }
}

export interface Binaries {
  helper: string;
  mockapi: string;
}

const tempDirs: string[] = [];

/** A temp dir removed when the test process exits. */
export function tempDir(prefix: string): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  if (tempDirs.push(dir) === 1) {
    process.once("exit", () => {
      for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}

/**
 * The binaries under test: $CLAUDE_RELAY_BIN and $MOCKAPI_BIN when set (the Go test that runs
 * `npm test` builds them once), else built here with `go build`. Undefined when Go is missing
 * locally (the tests then skip; on CI they fail).
 */
export function binaries(): Binaries | undefined {
  const fromEnv = { helper: process.env.CLAUDE_RELAY_BIN, mockapi: process.env.MOCKAPI_BIN };
  if (fromEnv.helper && fromEnv.mockapi) {
    return { helper: fromEnv.helper, mockapi: fromEnv.mockapi };
  }
  const dir = tempDir("claude-relay-vscode-bin-");
  const out = { helper: join(dir, "claude-relay"), mockapi: join(dir, "mockapi") };
  try {
    // claude-relay-server beside the helper: the embedded default backend runs in it.
    execFileSync("go", ["build", "-o", `${dir}/`, "./cmd/claude-relay", "./cmd/claude-relay-server"], { cwd: repoRoot(), stdio: "pipe" });
    execFileSync("go", ["build", "-o", out.mockapi, "./internal/testkit/mockapi/cmd/mockapi"], { cwd: repoRoot(), stdio: "pipe" });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === "ENOENT" && process.env.CI !== "true") {
      return undefined;
    }
    throw new Error(`go build failed: ${e.stderr?.toString() ?? e.message}`);
  }
  return out;
}

/** One turn of the scripted model (internal/testkit/mockapi ScriptJSON). */
export type Turn =
  | { text: string }
  | { tool_use: { name: string; input: Record<string, unknown> } }
  | { blocks: unknown[]; stop_reason?: string; delta_delay_ms?: number };

export interface ToolResult {
  tool_use_id: string;
  content: string;
  is_error: boolean;
}

export interface MockAPI {
  url: string;
  /** The whole environment for the helper: private HOME, the mock API, the pinned CLI, PATH. */
  env: NodeJS.ProcessEnv;
  /** What the tools returned to the model so far. */
  toolResults(): Promise<ToolResult[]>;
}

/**
 * Serves script on a fresh scripted API with a fresh HOME that trusts cwd, and stops it when the
 * test ends. Skips the test when the pinned CLI is not installed (fails on CI).
 */
export async function mockAPI(t: TestContext, bins: Binaries, script: Turn[], cwd: string): Promise<MockAPI | undefined> {
  const home = tempDir("claude-relay-vscode-home-");
  const child: ChildProcessWithoutNullStreams = spawn(bins.mockapi, ["-home", home, "-trust", cwd], { stdio: "pipe" });
  t.after(() => child.stdin.end()); // its stdin closing stops it
  let stderr = "";
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  child.stdin.write(`${JSON.stringify(script)}\n`);
  const lines = await new Promise<string[]>((resolve, reject) => {
    const split = new LineSplitter();
    const got: string[] = [];
    child.stdout.on("data", (b: Buffer) => {
      got.push(...split.push(b));
      if (got.length >= 2) {
        resolve(got);
      }
    });
    child.on("exit", (code) => reject(new Error(`mockapi exited with status ${code}: ${stderr}`)));
  });
  const url = lines[0] ?? "";
  const env = JSON.parse(lines[1] ?? "{}") as Record<string, string>;
  if (env.CLAUDE_RELAY_CLAUDE_PATH === undefined) {
    const msg = "the pinned Claude CLI is not installed (set CLAUDE_RELAY_TEST_CLI or run `make deps`)";
    if (process.env.CI === "true") {
      throw new Error(msg);
    }
    t.skip(msg);
    return undefined;
  }
  return {
    url,
    env: { ...env, PATH: process.env.PATH },
    toolResults: async () => (await fetch(`${url}/_mockapi/tool_results`)).json() as Promise<ToolResult[]>,
  };
}

/** Collects every event from source, for waiting on and for failure messages. */
export class Recorder implements Disposable {
  readonly events: Event[] = [];
  private readonly waiters = new Set<() => void>();
  private readonly sub: Disposable;

  constructor(source: { onEvent(l: (e: Event) => void): Disposable }) {
    this.sub = source.onEvent((e) => {
      this.events.push(e);
      for (const w of [...this.waiters]) {
        w();
      }
    });
  }

  /** The first event (recorded already or later) that matches, within timeoutMs. */
  waitFor(what: string, match: (e: Event) => boolean, timeoutMs = 90_000): Promise<Event> {
    return new Promise<Event>((resolve, reject) => {
      const check = (): boolean => {
        const e = this.events.find(match);
        if (e) {
          this.waiters.delete(onEvent);
          clearTimeout(timer);
          resolve(e);
        }
        return e !== undefined;
      };
      const onEvent = (): void => void check();
      const timer = setTimeout(() => {
        this.waiters.delete(onEvent);
        reject(new Error(`no ${what} within ${timeoutMs} ms; events:\n${this.dump()}`));
      }, timeoutMs);
      if (!check()) {
        this.waiters.add(onEvent);
      }
    });
  }

  dump(): string {
    return this.events.map((e) => JSON.stringify(e).slice(0, 400)).join("\n");
  }

  dispose(): void {
    this.sub.dispose();
  }
}
