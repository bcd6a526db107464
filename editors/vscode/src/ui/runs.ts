// The runs the extension started and what is known about each: status,
// cost, tokens, pending approvals. Fed with the helper's events; the Runs
// view, the status bar and the commands read it. No vscode import.
import type { ApprovalRequestedEvent as ApprovalEvent, Event, Usage } from "../client";
import { endLine, formatCost, formatTokens } from "./format";

export type RunStatus = "starting" | "running" | "waiting" | "completed" | "failed" | "cancelled";

/** The words the Runs view and the pickers show for each status. */
export const STATUS_TEXT: Readonly<Record<RunStatus, string>> = {
  starting: "starting",
  running: "running",
  waiting: "waiting for approval",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
};

export interface RunRecord {
  readonly id: string;
  readonly prompt: string;
  readonly keepAlive: boolean;
  sessionId?: string | undefined;
  conversationId?: string | undefined;
  /** run_started seen. */
  started: boolean;
  /** A turn is running (or queued to start). */
  turnActive: boolean;
  /** The run ended (run_completed/failed/cancelled, or the helper died). */
  ended?: "completed" | "failed" | "cancelled" | undefined;
  turns: number;
  costUsd?: number | undefined;
  usage?: Usage | undefined;
  /** The last end line ("Run completed · $0.0123 · 1.2s"). */
  lastEnd?: string | undefined;
  /** Approvals waiting for an answer, in arrival order. */
  readonly pending: Map<string, ApprovalEvent>;
}

/** What a run's status is now. */
export function statusOf(r: RunRecord): RunStatus {
  if (r.ended) {
    return r.ended;
  }
  if (r.pending.size > 0) {
    return "waiting";
  }
  if (r.turnActive) {
    return r.started ? "running" : "starting";
  }
  // A keep_alive run between turns: what was asked is done; it still takes
  // a follow-up.
  return "completed";
}

/** A run still open to send, interrupt, cancel and end. */
export function isLive(r: RunRecord): boolean {
  return r.ended === undefined;
}

/**
 * The Runs view item's contextValue, which picks its menu entries
 * (package.json "menus"): run.busy (a turn runs: interrupt), run.idle
 * (between turns: follow up), run.ended.
 */
export function contextValueOf(r: RunRecord): "run.busy" | "run.idle" | "run.ended" {
  if (!isLive(r)) {
    return "run.ended";
  }
  return r.turnActive ? "run.busy" : "run.idle";
}

/** "completed · $0.0123 · 1.2k in / 345 out tokens". */
export function describeRun(r: RunRecord): string {
  return [STATUS_TEXT[statusOf(r)], formatCost(r.costUsd), formatTokens(r.usage)].filter((p) => p !== "").join(" · ");
}

export interface Counts {
  running: number;
  approvals: number;
}

/** The helper's state; "notStarted" until a command first needs it. */
export type HelperState = "notStarted" | "starting" | "ready" | "failed";

const QUIET_TEXT: Readonly<Record<Exclude<HelperState, "failed">, string>> = {
  notStarted: "$(hubot) Claude Relay",
  starting: "$(sync~spin) Claude Relay: starting",
  ready: "$(check) Claude Relay: idle",
};

/** The status bar's text: spinning while something runs or waits. */
export function statusBarText(c: Counts, helper: HelperState): string {
  if (helper === "failed") {
    return "$(error) Claude Relay: helper not running";
  }
  if (c.running === 0 && c.approvals === 0) {
    return QUIET_TEXT[helper];
  }
  const approvals = `${c.approvals} ${c.approvals === 1 ? "approval" : "approvals"}`;
  return `$(sync~spin) Claude Relay: ${c.running} running · ${approvals}`;
}

function addUsage(a: Usage | undefined, b: Usage): Usage {
  if (!a) {
    return { ...b };
  }
  return {
    input_tokens: (a.input_tokens ?? 0) + (b.input_tokens ?? 0),
    output_tokens: (a.output_tokens ?? 0) + (b.output_tokens ?? 0),
    cache_read_input_tokens: (a.cache_read_input_tokens ?? 0) + (b.cache_read_input_tokens ?? 0),
    cache_creation_input_tokens: (a.cache_creation_input_tokens ?? 0) + (b.cache_creation_input_tokens ?? 0),
  };
}

/** What apply() did, for the caller to show. */
export interface Change {
  run: RunRecord;
  /** A turn or the run ended: its end line. */
  endLine?: string;
  /** A new approval to ask. */
  approval?: ApprovalEvent;
  /** An approval withdrawn by the helper (timeout, run ended). */
  withdrawn?: { approvalId: string; reason: string };
}

/**
 * Every run of this window. Records are created by add() before the prompt
 * is sent (so events find their run whatever order the promise and the
 * events arrive in) or by a run_started the extension did not announce.
 */
export class RunsModel {
  private readonly runs = new Map<string, RunRecord>();
  private readonly listeners = new Set<() => void>();

  onChange(listener: () => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private changed(): void {
    for (const l of [...this.listeners]) {
      l();
    }
  }

  add(id: string, prompt: string, keepAlive: boolean, sessionId?: string): RunRecord {
    const r: RunRecord = {
      id,
      prompt,
      keepAlive,
      sessionId,
      started: false,
      turnActive: true,
      turns: 0,
      pending: new Map(),
    };
    this.runs.set(id, r);
    this.changed();
    return r;
  }

  get(id: string): RunRecord | undefined {
    return this.runs.get(id);
  }

  /** Newest first. */
  list(): RunRecord[] {
    return [...this.runs.values()].reverse();
  }

  counts(): Counts {
    let running = 0;
    let approvals = 0;
    for (const r of this.runs.values()) {
      if (!isLive(r)) {
        continue;
      }
      approvals += r.pending.size;
      if (r.turnActive) {
        running++;
      }
    }
    return { running, approvals };
  }

  /** A follow-up went into a live run: a turn runs again. */
  turnSent(id: string): void {
    const r = this.runs.get(id);
    if (r && isLive(r)) {
      r.turnActive = true;
      this.changed();
    }
  }

  /** The extension answered an approval; false when it was no longer pending. */
  resolveApproval(runId: string, approvalId: string): boolean {
    const r = this.runs.get(runId);
    if (!r?.pending.delete(approvalId)) {
      return false;
    }
    this.changed();
    return true;
  }

  isPending(runId: string, approvalId: string): boolean {
    return this.runs.get(runId)?.pending.has(approvalId) ?? false;
  }

  /** A run that can no longer end by itself (its prompt was refused, the helper died). */
  fail(id: string, reason: string): Change | undefined {
    const r = this.runs.get(id);
    if (!r || !isLive(r)) {
      return undefined;
    }
    r.ended = "failed";
    r.turnActive = false;
    r.pending.clear();
    r.lastEnd = endLine({ event: "run_failed", reason });
    this.changed();
    return { run: r, endLine: r.lastEnd };
  }

  /** Removes ended runs (the Runs view's "Clear Finished Runs"); returns their ids. */
  clearEnded(): string[] {
    const gone: string[] = [];
    for (const [id, r] of this.runs) {
      if (!isLive(r)) {
        this.runs.delete(id);
        gone.push(id);
      }
    }
    if (gone.length > 0) {
      this.changed();
    }
    return gone;
  }

  /** Folds one helper event into its run; undefined for events of no run. */
  apply(e: Event): Change | undefined {
    const runId = typeof e.run_id === "string" ? e.run_id : "";
    if (runId === "") {
      return undefined;
    }
    let r = this.runs.get(runId);
    if (!r) {
      if (e.event !== "run_started") {
        return undefined;
      }
      r = this.add(runId, "", false, e.session_id);
    }
    const change: Change = { run: r };
    switch (e.event) {
      case "run_started":
        r.started = true;
        r.sessionId = e.session_id ?? r.sessionId;
        break;
      case "stream": {
        const sid = e.payload.session_id;
        if (typeof sid === "string" && sid !== "" && e.payload.type !== "system") {
          r.conversationId = sid;
        }
        // Stream lines change nothing the view shows.
        return change;
      }
      case "approval_requested":
        if (!isLive(r)) {
          return undefined;
        }
        r.pending.set(e.approval_id, e);
        change.approval = e;
        break;
      case "approval_cancelled":
        if (!r.pending.delete(e.approval_id)) {
          return undefined;
        }
        change.withdrawn = { approvalId: e.approval_id, reason: e.reason ?? "" };
        break;
      case "turn_completed":
        if (!isLive(r)) {
          return undefined;
        }
        r.turns = Math.max(r.turns + 1, e.turn);
        r.turnActive = false;
        // A turn's figures are that turn's only; the run's are their sum
        // until run_completed gives the totals.
        if (e.total_cost_usd !== undefined) {
          r.costUsd = (r.costUsd ?? 0) + e.total_cost_usd;
        }
        if (e.usage) {
          r.usage = addUsage(r.usage, e.usage);
        }
        r.conversationId = e.conversation_id || r.conversationId;
        r.lastEnd = endLine({
          event: "turn_completed",
          costUsd: e.total_cost_usd,
          durationMs: e.result.duration_ms,
          turn: e.turn,
          status: e.status,
          reason: e.reason,
          stderr: e.result.stderr,
        });
        change.endLine = r.lastEnd;
        break;
      case "run_completed":
      case "run_failed":
      case "run_cancelled":
        if (!isLive(r)) {
          // Already ended: by fail() (its prompt was refused, the helper
          // died), or this is the client's synthetic end after a real one.
          return undefined;
        }
        r.ended = e.event === "run_completed" ? "completed" : e.event === "run_failed" ? "failed" : "cancelled";
        r.turnActive = false;
        r.pending.clear();
        if (e.total_cost_usd !== undefined) {
          r.costUsd = e.total_cost_usd;
        }
        if (e.usage) {
          r.usage = { ...e.usage };
        }
        r.conversationId = e.conversation_id || r.conversationId;
        r.lastEnd = endLine({
          event: e.event,
          costUsd: r.costUsd,
          durationMs: e.result.duration_ms,
          reason: e.reason,
          stderr: e.result.stderr,
          turns: r.turns,
        });
        change.endLine = r.lastEnd;
        break;
      default:
        return undefined;
    }
    this.changed();
    return change;
  }
}
