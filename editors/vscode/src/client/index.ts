// The typed client for `claude-relay extension` (CONTRACT §4, §7): start the helper, send commands
// as promises, receive events in order, restart the helper when it dies. No vscode import here: the
// extension uses it, and node's test runner tests it against the real helper.
import { randomUUID } from "node:crypto";
import { Emitter, type Disposable } from "./emitter";
import type { Event, ReadyEvent, RunEndedEvent, RunStartedEvent, StatusEvent, TerminalCommandEvent } from "./events";
import { HelperProcess, type HelperExit } from "./process";
import type { ApproveCommand, Command, PromptOptions } from "./protocol";
import { RelayError, Requests } from "./requests";
import { Run } from "./run";

export type { Disposable } from "./emitter";
export * from "./events";
export type {
  ApproveCommand,
  Command,
  ContentBlock,
  ForwarderInfo,
  PromptOptions,
  Result,
  RunInfo,
  Usage,
} from "./protocol";
export { RelayError } from "./requests";
export { Run } from "./run";

export interface HelperOptions {
  /** The claude-relay binary. */
  path: string;
  /** Default ["extension"]. */
  args?: string[];
  /** Default process.env, passed whole (ANTHROPIC_*, CLAUDE_RELAY_*, CLAUDE_CODE_* included). */
  env?: NodeJS.ProcessEnv;
  /**
   * The backend token, handed to the helper through a pipe (file descriptor 3, named by
   * CLAUDE_RELAY_BACKEND_TOKEN_FD) rather than its environment, which processes of the same user
   * (the agent's tools among them) could read.
   */
  token?: string;
  cwd?: string;
  /** Each line the helper writes to stderr (its log). */
  onStderr?: (line: string) => void;
  /** Default true: restart a helper that died, and report it to onRestart listeners. */
  restart?: boolean;
  /** How long to wait for the helper's ready event; default 30 s. */
  readyTimeoutMs?: number;
}

export interface RestartInfo {
  /** How the previous helper exited. */
  code: number | null;
  signal: string | null;
  /** Restarts so far, this one included. */
  restarts: number;
}

/** Extra fields of an approve command. */
export interface ApproveExtra {
  runId?: string;
  reason?: string;
  updatedInput?: object;
  answers?: Record<string, string>;
  interrupt?: boolean;
}

const defaultReadyTimeoutMs = 30_000;
/** A helper that exits this many times in a row before becoming ready is not restarted again. */
const maxFailedStarts = 5;
/** How long dispose() lets the helper shut down (it drains the forwarder) before SIGTERM. */
const disposeGraceMs = 5_000;

export class RelayClient implements Disposable {
  private readonly events = new Emitter<Event>();
  private readonly restartsEmitter = new Emitter<RestartInfo>();
  private readonly requests = new Requests();
  private readonly runs = new Map<string, Run>();
  private helper!: HelperProcess;
  private current!: ReadyEvent;
  /** Settles when the helper in `helper` is ready (or could not be started). */
  private starting: Promise<void> = Promise.resolve();
  private stopping = false;
  /** Whether any helper became ready: only then is a dead helper restarted. */
  private everReady = false;
  private restarts = 0;
  private failedStarts = 0;
  private fatal: Error | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  /** Settles `starting` for a restart that is waiting for its timer. */
  private restartWaiting: (() => void) | undefined;

  private constructor(private readonly opts: HelperOptions) {}

  /** Starts the helper; resolves on its ready event, rejects if it exits (or stays silent) first. */
  static async start(opts: HelperOptions): Promise<RelayClient> {
    const client = new RelayClient(opts);
    await client.launch();
    return client;
  }

  /** The current helper's ready event (a restarted helper replaces it). */
  get ready(): ReadyEvent {
    return this.current;
  }

  /** Every event, in order (the client's own bookkeeping answers excepted). */
  onEvent(listener: (e: Event) => void): Disposable {
    return this.events.on(listener);
  }

  /** Called after a helper that died was restarted and is ready again. */
  onRestart(listener: (info: RestartInfo) => void): Disposable {
    return this.restartsEmitter.on(listener);
  }

  /**
   * Starts a background run. Resolves with its handle on run_started; rejects with the error
   * event's message when the helper refuses it.
   */
  async prompt(prompt: string, options?: PromptOptions, ids?: { runId?: string; sessionId?: string }): Promise<Run> {
    const runId = ids?.runId ?? randomUUID();
    const id = this.requests.newId();
    const started = this.requests.expect(id, (e) =>
      e.event === "run_started" && e.run_id === runId ? this.runs.get(runId) : undefined,
    );
    await this.write(id, {
      action: "prompt",
      request_id: id,
      run_id: runId,
      ...(ids?.sessionId !== undefined && { session_id: ids.sessionId }),
      prompt,
      ...(options !== undefined && { options }),
    });
    return started;
  }

  /** Answers an approval_requested event with one of its options. */
  approve(approvalId: string, decision: string, extra?: ApproveExtra): Promise<void> {
    return this.command({
      action: "approve",
      approval_id: approvalId,
      decision: decision as ApproveCommand["decision"],
      ...(extra?.runId !== undefined && { run_id: extra.runId }),
      ...(extra?.reason !== undefined && { reason: extra.reason }),
      ...(extra?.updatedInput !== undefined && { updated_input: extra.updatedInput as Record<string, unknown> }),
      ...(extra?.answers !== undefined && { answers: extra.answers }),
      ...(extra?.interrupt !== undefined && { interrupt: extra.interrupt }),
    });
  }

  /** The helper's live runs and forwarder figures. */
  async status(): Promise<StatusEvent> {
    const id = this.requests.newId();
    const answer = this.requests.expect(id, (e) => (e.event === "status" ? e : undefined));
    await this.write(id, { action: "status", request_id: id });
    return answer;
  }

  /** How to start a visible-terminal run of prompt: argv, cwd and env for a terminal. */
  async terminalCommand(prompt: string, options?: PromptOptions): Promise<TerminalCommandEvent> {
    const id = this.requests.newId();
    const answer = this.requests.expect(id, (e) => (e.event === "terminal_command" ? e : undefined));
    await this.write(id, { action: "terminal", request_id: id, prompt, ...(options !== undefined && { options }) });
    return answer;
  }

  /**
   * Cancels every run, lets the helper drain its forwarder, and resolves when it has exited. The
   * helper is not restarted.
   */
  async shutdown(): Promise<void> {
    this.stopping = true;
    this.cancelRestart();
    await this.settled();
    const helper = this.helper;
    if (helper.exited) {
      return;
    }
    const exited = new Promise<void>((resolve) => (this.onHelperGone = resolve));
    helper.write({ action: "shutdown", request_id: this.requests.newId() });
    helper.closeStdin();
    await exited;
  }

  /** Stops the helper (it shuts down as for shutdown(), then is killed if slow) and every listener. */
  dispose(): void {
    this.stopping = true;
    this.cancelRestart();
    const helper = this.helper;
    if (!helper.exited) {
      helper.write({ action: "shutdown", request_id: this.requests.newId() });
      helper.closeStdin();
      setTimeout(() => helper.kill("SIGTERM"), disposeGraceMs).unref();
    }
    this.requests.failAll(new RelayError("the claude-relay client was disposed", "disposed"));
    for (const run of this.runs.values()) {
      run.dispose();
    }
    this.runs.clear();
    this.events.dispose();
    this.restartsEmitter.dispose();
  }

  /** Resolves when the current helper is gone (set by shutdown). */
  private onHelperGone: (() => void) | undefined;

  /** A command without an answer event: resolves once the helper accepted it. */
  private async command(cmd: Command): Promise<void> {
    const id = this.requests.newId();
    const accepted = this.requests.expectAccepted(id);
    const barrier = this.requests.barrierId(id);
    await this.write(id, { ...cmd, request_id: id }, { action: "status", request_id: barrier });
    return accepted;
  }

  /** Waits until no helper start or restart is in progress. */
  private async settled(): Promise<void> {
    for (;;) {
      const s = this.starting;
      await s;
      if (s === this.starting) {
        return;
      }
    }
  }

  private cancelRestart(): void {
    clearTimeout(this.restartTimer);
    this.restartWaiting?.();
    this.restartWaiting = undefined;
  }

  /**
   * Writes the commands (together, so nothing comes between them) once a helper is ready; on
   * failure the request's pending answer is dropped and the error thrown.
   */
  private async write(id: string, ...cmds: Command[]): Promise<void> {
    await this.settled();
    if (this.fatal) {
      this.requests.drop(id);
      throw this.fatal;
    }
    const action = cmds[0]?.action ?? "command";
    if (this.stopping || !cmds.every((cmd) => this.helper.write(cmd))) {
      this.requests.drop(id);
      throw new RelayError(
        this.stopping
          ? `the claude-relay helper is shutting down; ${action} was not sent`
          : `the claude-relay helper (${this.opts.path}) has exited; ${action} was not sent (it is being restarted: try again)`,
        this.stopping ? "disposed" : "helper_exited",
        id,
      );
    }
  }

  /** Spawns a helper and waits for its ready event. */
  private launch(): Promise<void> {
    const attempt = new Promise<void>((resolve, reject) => {
      let readyYet = false;
      const timeoutMs = this.opts.readyTimeoutMs ?? defaultReadyTimeoutMs;
      const helper = new HelperProcess(
        {
          path: this.opts.path,
          args: this.opts.args ?? ["extension"],
          env: this.opts.env ?? process.env,
          ...(this.opts.cwd !== undefined && { cwd: this.opts.cwd }),
          ...(this.opts.token !== undefined && this.opts.token !== "" && { token: this.opts.token }),
        },
        {
          onEvent: (e) => {
            let settled = false;
            if (!readyYet && e.event === "ready") {
              readyYet = true;
              clearTimeout(timer);
              this.current = e;
              this.everReady = true;
              this.failedStarts = 0;
              resolve();
              settled = true;
            }
            return this.dispatch(e) || settled;
          },
          onStderr: (line) => this.opts.onStderr?.(line),
          onExit: (exit) => {
            clearTimeout(timer);
            if (!readyYet) {
              reject(this.startError(exit, helper));
            }
            this.exited(helper, exit, readyYet);
          },
        },
      );
      this.helper = helper;
      const timer = setTimeout(() => {
        helper.kill("SIGKILL");
        reject(
          new RelayError(
            `claude-relay (${this.opts.path}) did not say ready within ${timeoutMs} ms; ` +
              `run \`${this.opts.path} doctor\` to see what is wrong${tailOf(helper)}`,
            "helper_exited",
          ),
        );
      }, timeoutMs);
    });
    // Later commands wait for this attempt, and must not see its rejection as unhandled.
    this.starting = attempt.catch(() => undefined);
    return attempt;
  }

  private startError(exit: HelperExit, helper: HelperProcess): RelayError {
    if (exit.error) {
      return new RelayError(
        `cannot start claude-relay at ${this.opts.path}: ${exit.error.message}; ` +
          `check the path (or put claude-relay on PATH)`,
        "helper_exited",
      );
    }
    return new RelayError(
      `claude-relay (${this.opts.path} ${(this.opts.args ?? ["extension"]).join(" ")}) exited ` +
        `${describeExit(exit)} before it was ready${tailOf(helper)}`,
      "helper_exited",
    );
  }

  /**
   * Routes one event: its request, its run, then every listener. Returns true when it settled a
   * request, so that delivery pauses until the code awaiting it has run (and subscribed).
   */
  private dispatch(e: Event): boolean {
    if (e.event === "run_started" && e.run_id !== undefined && !this.runs.has(e.run_id)) {
      // Registered before the prompt's promise settles, so the run misses none of its events.
      this.runs.set(e.run_id, new Run(e as RunStartedEvent, (cmd) => this.command(cmd)));
    }
    const settled = this.requests.handle(e);
    if (this.requests.isBarrierAnswer(e)) {
      return settled;
    }
    const run = e.run_id !== undefined ? this.runs.get(e.run_id) : undefined;
    if (run && e.event !== "run_started") {
      run.deliver(e);
      if (run.isDone) {
        this.runs.delete(run.id);
      }
    }
    this.events.fire(e);
    return settled;
  }

  /** The helper exited: fail what it left behind, then restart it unless we stopped it. */
  private exited(helper: HelperProcess, exit: HelperExit, wasReady: boolean): void {
    if (helper !== this.helper) {
      return;
    }
    let why = `the claude-relay helper exited ${describeExit(exit)}`;
    if (!this.stopping && this.everReady && this.opts.restart === false) {
      why += "; restart is off, so start a new client";
    }
    why += tailOf(helper);
    this.requests.failAll(new RelayError(why, "helper_exited"));
    for (const run of [...this.runs.values()]) {
      this.dispatch(lostRun(run, why));
    }
    if (this.stopping) {
      this.onHelperGone?.();
      return;
    }
    if (!this.everReady || this.opts.restart === false) {
      // Without a ready helper ever, start() rejects: there is nothing to restart.
      this.fatal = new RelayError(why, "helper_exited");
      return;
    }
    if (!wasReady) {
      this.failedStarts++;
    }
    if (this.failedStarts >= maxFailedStarts) {
      this.fatal = new RelayError(`${why}; it did so ${maxFailedStarts} times in a row, so it is not restarted again`, "helper_exited");
      return;
    }
    this.restarts++;
    const restarts = this.restarts;
    // Back off only when restarts keep failing, so one crash is recovered at once.
    const delay = this.failedStarts === 0 ? 0 : Math.min(30_000, 500 * 2 ** (this.failedStarts - 1));
    // The first call to launch() is start()'s; later ones are awaited by commands via `starting`.
    let restarted!: () => void;
    this.starting = new Promise<void>((resolve) => (restarted = resolve));
    this.restartWaiting = restarted;
    this.restartTimer = setTimeout(() => {
      this.restartWaiting = undefined;
      this.launch().then(
        () => {
          restarted();
          this.restartsEmitter.fire({ code: exit.code, signal: exit.signal, restarts });
        },
        () => restarted(), // its own exit handler schedules the next attempt or gives up
      );
    }, delay);
  }
}

/** The end a run gets when its helper died under it, so its done promise settles. */
function lostRun(run: Run, why: string): RunEndedEvent {
  return {
    event: "run_failed",
    timestamp: new Date().toISOString(),
    run_id: run.id,
    session_id: run.sessionId,
    result: { stdout: "", stderr: why, exitCode: 1, duration_ms: 0 },
    reason: "helper_exited",
    synthetic: true,
  };
}

function describeExit(exit: HelperExit): string {
  if (exit.signal) {
    return `on signal ${exit.signal}`;
  }
  return `with status ${exit.code ?? "unknown"}`;
}

function tailOf(helper: HelperProcess): string {
  const tail = helper.stderrTail();
  return tail === "" ? "" : `; its stderr ended with:\n${tail}`;
}
