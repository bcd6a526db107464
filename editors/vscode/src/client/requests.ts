// Matches the helper's answers to the commands that asked for them, by request_id.
//
// Some commands have an answer event (prompt → run_started, status → status, terminal →
// terminal_command). The others (approve, cancel, send, interrupt, set_mode, set_model, end) have
// none when they succeed: only an error event when they fail. The helper handles its stdin lines
// one at a time and writes a command's error before it reads the next line, so the client follows
// such a command with a status request (a "barrier"): the barrier's answer arriving first proves
// the command was accepted. Barrier answers are the client's own business and are not shown to
// event listeners.
import { randomUUID } from "node:crypto";
import type { ErrorEvent, Event } from "./events";

/** A command the helper refused: the error event's message, with its code. */
export class RelayError extends Error {
  override readonly name = "RelayError";
  constructor(
    message: string,
    readonly code: ErrorEvent["code"] | "helper_exited" | "disposed",
    readonly requestId?: string,
  ) {
    super(message);
  }
}

interface Pending {
  /** Returns true when e settled the request. */
  accept(e: Event): boolean;
  reject(err: Error): void;
}

const barrierSuffix = ".ack";

export class Requests {
  private readonly prefix = randomUUID().slice(0, 8);
  private next = 0;
  private readonly pending = new Map<string, Pending>();

  /** A fresh request_id. */
  newId(): string {
    return `${this.prefix}-${++this.next}`;
  }

  /** The barrier request_id that confirms the command with id. */
  barrierId(id: string): string {
    return id + barrierSuffix;
  }

  /**
   * Waits for the event that answers request id: the first event carrying it for which answer
   * returns a value. An error event carrying it rejects.
   */
  expect<T>(id: string, answer: (e: Event) => T | undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, {
        accept: (e) => {
          if (e.event === "error") {
            reject(new RelayError(e.message, e.code, id));
            return true;
          }
          const v = answer(e);
          if (v === undefined) {
            return false;
          }
          resolve(v);
          return true;
        },
        reject,
      });
    });
  }

  /** Waits until the helper accepted the command with id (see the file comment). */
  expectAccepted(id: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const barrier = this.barrierId(id);
      const settle = (): void => {
        this.pending.delete(id);
        this.pending.delete(barrier);
      };
      this.pending.set(id, {
        accept: (e) => {
          if (e.event !== "error") {
            return false;
          }
          settle();
          reject(new RelayError(e.message, e.code, id));
          return true;
        },
        reject,
      });
      this.pending.set(barrier, {
        accept: (e) => {
          if (e.event !== "status" && e.event !== "error") {
            return false;
          }
          settle();
          resolve();
          return true;
        },
        reject: () => undefined, // the command's own entry reports the failure
      });
    });
  }

  /** Offers e to the request it answers; true when it settled that request. */
  handle(e: Event): boolean {
    const id = e.request_id;
    if (id === undefined) {
      return false;
    }
    const p = this.pending.get(id);
    if (p?.accept(e)) {
      this.pending.delete(id);
      return true;
    }
    return false;
  }

  /** Whether e answers one of this client's barriers: only the client needs to see it. */
  isBarrierAnswer(e: Event): boolean {
    const id = e.request_id;
    if (id === undefined) {
      return false;
    }
    return id.startsWith(this.prefix) && id.endsWith(barrierSuffix);
  }

  /** Forgets request id without settling it (its write failed and the caller rejects it). */
  drop(id: string): void {
    this.pending.delete(id);
    this.pending.delete(this.barrierId(id));
  }

  /** Rejects every pending request, e.g. because the helper exited. */
  failAll(err: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) {
      p.reject(err);
    }
  }
}
