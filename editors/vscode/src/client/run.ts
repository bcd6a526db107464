// A handle on one run: its events, its end, and the commands that act on it.
import { Emitter, type Disposable } from "./emitter";
import { isRunEnd, type Event, type RunEndedEvent, type RunStartedEvent } from "./events";
import type { Command, SetModeCommand } from "./protocol";

/** Sends a command on the run's behalf and resolves once the helper accepted it. */
export type Commander = (command: Command) => Promise<void>;

/**
 * Events that arrive before anyone subscribed are kept (up to this many) and replayed to the first
 * subscriber: prompt() resolves on run_started, and the run's next events can be delivered before
 * the caller's await continues and subscribes.
 */
const maxEarlyEvents = 10_000;

export class Run implements Disposable {
  readonly id: string;
  readonly sessionId: string;
  /** run_completed, run_failed or run_cancelled: how the run ended. */
  readonly done: Promise<RunEndedEvent>;

  private readonly events = new Emitter<Event>();
  private early: Event[] | undefined = [];
  private ended: RunEndedEvent | undefined;
  private resolveDone!: (e: RunEndedEvent) => void;

  constructor(
    started: RunStartedEvent,
    private readonly command: Commander,
  ) {
    this.id = started.run_id ?? "";
    this.sessionId = started.session_id ?? "";
    this.done = new Promise<RunEndedEvent>((resolve) => (this.resolveDone = resolve));
    this.deliver(started);
  }

  /** Whether the run has ended. */
  get isDone(): boolean {
    return this.ended !== undefined;
  }

  /** This run's events, in order. The first subscriber also gets those that came before it. */
  onEvent(listener: (e: Event) => void): Disposable {
    const sub = this.events.on(listener);
    const early = this.early;
    this.early = undefined;
    for (const e of early ?? []) {
      try {
        listener(e);
      } catch (err) {
        console.error("claude-relay client: an event listener threw:", err);
      }
    }
    return sub;
  }

  /** Called by the client for every event of this run. */
  deliver(e: Event): void {
    if (this.ended) {
      return; // nothing follows a run's end; a late duplicate (e.g. the synthetic one) is dropped
    }
    if (this.early) {
      this.early.push(e);
      if (this.early.length > maxEarlyEvents) {
        this.early.shift();
      }
    }
    this.events.fire(e);
    if (isRunEnd(e)) {
      this.ended = e;
      this.resolveDone(e);
    }
  }

  /** A follow-up prompt into a keep_alive run (queued behind a running turn). */
  send(prompt: string): Promise<void> {
    return this.command({ action: "send", run_id: this.id, prompt });
  }

  /** Stops the running turn; a keep_alive run stays and takes the next send. */
  interrupt(): Promise<void> {
    return this.command({ action: "interrupt", run_id: this.id });
  }

  /** Cancels the run: it ends with run_cancelled. */
  cancel(): Promise<void> {
    return this.command({ action: "cancel", run_id: this.id });
  }

  /** Closes a keep_alive run after its running turn and queued sends: it ends with run_completed. */
  end(): Promise<void> {
    return this.command({ action: "end", run_id: this.id });
  }

  /** Changes a keep_alive run's permission mode; a mode_changed event confirms it. */
  setMode(mode: string): Promise<void> {
    return this.command({ action: "set_mode", run_id: this.id, permission_mode: mode as SetModeCommand["permission_mode"] });
  }

  /** Changes a keep_alive run's model for its next turns ("" = the default model). */
  setModel(model: string): Promise<void> {
    return this.command({ action: "set_model", run_id: this.id, model });
  }

  /** Stops delivering events to this handle's listeners; the run itself goes on. */
  dispose(): void {
    this.events.dispose();
    this.early = undefined;
  }
}
