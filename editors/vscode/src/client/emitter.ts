// A minimal typed event emitter: the client cannot import vscode.EventEmitter (it must run in plain
// node for its tests), and Node's EventEmitter is untyped and throws on a listener's error.

export interface Disposable {
  dispose(): void;
}

export class Emitter<T> implements Disposable {
  private readonly listeners = new Set<(value: T) => void>();

  /** Adds listener; dispose the result to remove it. */
  on(listener: (value: T) => void): Disposable {
    // A wrapper per subscription, so the same function subscribed twice is two subscriptions.
    const entry = (value: T): void => listener(value);
    this.listeners.add(entry);
    return { dispose: () => void this.listeners.delete(entry) };
  }

  get size(): number {
    return this.listeners.size;
  }

  /**
   * Calls every listener. One listener's exception must not stop the others or the reading of the
   * helper's output, so it is reported and dropped.
   */
  fire(value: T): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(value);
      } catch (err) {
        console.error("claude-relay client: an event listener threw:", err);
      }
    }
  }

  dispose(): void {
    this.listeners.clear();
  }
}
