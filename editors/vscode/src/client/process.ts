// One claude-relay helper process: spawns it, turns its stdout into parsed events delivered in
// order, its stderr into lines, and reports its exit only after every event it wrote was delivered.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import type { Writable } from "node:stream";
import { LineSplitter } from "./lines";
import { parseEvent, type Event } from "./events";

export interface HelperExit {
  code: number | null;
  signal: string | null;
  /** Set when the process could not be started at all (ENOENT, EACCES, ...). */
  error?: Error;
}

export interface SpawnOptions {
  path: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** The backend token: written to the helper's file descriptor 3, never put in its environment. */
  token?: string;
}

/** The variable naming the descriptor the helper reads its backend token from. */
export const ENV_TOKEN_FD = "CLAUDE_RELAY_BACKEND_TOKEN_FD";

export interface ProcessHandlers {
  /**
   * Called for each event, in order. Returning true pauses delivery until the next macrotask, so
   * code awaiting a promise that e settled runs (and can subscribe) before the next event.
   */
  onEvent(e: Event): boolean;
  onStderr(line: string): void;
  /** Called once, after the last event was delivered. */
  onExit(exit: HelperExit): void;
}

/** How long one delivery slice may hold the event loop before it yields to other work. */
const sliceMs = 8;
/** How many stderr lines are kept to explain an early exit. */
const stderrTail = 20;

export class HelperProcess {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly queue: string[] = [];
  private draining = false;
  private closed: HelperExit | undefined;
  private exitReported = false;
  private readonly tail: string[] = [];

  constructor(opts: SpawnOptions, private readonly handlers: ProcessHandlers) {
    const token = opts.token;
    this.child = spawn(opts.path, opts.args, {
      cwd: opts.cwd,
      env: token ? { ...opts.env, [ENV_TOKEN_FD]: "3" } : opts.env,
      stdio: token ? ["pipe", "pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe"],
      windowsHide: true,
    }) as ChildProcessWithoutNullStreams;
    if (token) {
      // The helper reads the token until this end closes, then closes its own.
      const fd3 = this.child.stdio[3] as Writable | null | undefined;
      fd3?.on("error", () => undefined);
      fd3?.end(`${token}\n`);
    }
    const out = new LineSplitter();
    const err = new LineSplitter();
    this.child.stdout.on("data", (chunk: Buffer) => this.enqueue(out.push(chunk)));
    this.child.stdout.on("end", () => this.enqueue(out.end()));
    this.child.stderr.on("data", (chunk: Buffer) => this.stderrLines(err.push(chunk)));
    this.child.stderr.on("end", () => this.stderrLines(err.end()));
    // A helper that died leaves a broken pipe; the exit handler reports it, so a write error
    // here must not become an uncaught exception in the extension host.
    this.child.stdin.on("error", () => undefined);
    this.child.on("error", (error) => {
      // Spawn failures get no "close" in some Node versions; report them once either way.
      if (this.child.pid === undefined) {
        this.closed ??= { code: null, signal: null, error };
        this.schedule();
      }
    });
    this.child.on("close", (code, signal) => {
      this.closed ??= { code, signal };
      this.schedule();
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether the process has exited (its exit may not be reported yet). */
  get exited(): boolean {
    return this.closed !== undefined || this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** The last stderr lines, for error messages. */
  stderrTail(): string {
    return this.tail.join("\n");
  }

  /** Writes one command line; false when stdin is closed. Never blocks: Node buffers the write. */
  write(command: object): boolean {
    if (this.exited || !this.child.stdin.writable) {
      return false;
    }
    this.child.stdin.write(`${JSON.stringify(command)}\n`);
    return true;
  }

  /** Closes stdin: the helper then shuts down as for a shutdown command. */
  closeStdin(): void {
    this.child.stdin.end();
  }

  kill(signal: NodeJS.Signals = "SIGTERM"): void {
    if (!this.exited) {
      this.child.kill(signal);
    }
  }

  private stderrLines(lines: string[]): void {
    for (const line of lines) {
      this.tail.push(line);
      if (this.tail.length > stderrTail) {
        this.tail.shift();
      }
      this.handlers.onStderr(line);
    }
  }

  private enqueue(lines: string[]): void {
    if (lines.length === 0) {
      return;
    }
    for (const line of lines) {
      this.queue.push(line);
    }
    this.schedule();
  }

  private schedule(): void {
    if (!this.draining) {
      this.draining = true;
      setImmediate(() => this.drain());
    }
  }

  /**
   * Delivers queued lines in slices, so a burst of output (a long transcript, many partial
   * messages) never holds the extension host's event loop for long.
   */
  private drain(): void {
    const until = Date.now() + sliceMs;
    let i = 0;
    let pause = false;
    while (!pause && i < this.queue.length && Date.now() < until) {
      const line = this.queue[i++];
      if (line === undefined || line.trim() === "") {
        continue;
      }
      const e = parseEvent(line);
      if (e) {
        pause = this.handlers.onEvent(e);
      } else {
        this.handlers.onStderr(`claude-relay wrote a stdout line that is not a protocol event: ${line.slice(0, 200)}`);
      }
    }
    this.queue.splice(0, i);
    if (this.queue.length > 0) {
      setImmediate(() => this.drain());
      return;
    }
    this.draining = false;
    if (this.closed && !this.exitReported) {
      this.exitReported = true;
      this.handlers.onExit(this.closed);
    }
  }
}
