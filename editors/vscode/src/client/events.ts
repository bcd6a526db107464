// Thin aliases over the generated protocol types: one name per event, each with the fields every
// event carries (event, timestamp, request_id, run_id, session_id).
import type { Event } from "./protocol";

export type { Event };
export type EventName = Event["event"];
/** The event named K, e.g. EventOf<"approval_requested">. */
export type EventOf<K extends EventName> = Extract<Event, { event: K }>;

export type ReadyEvent = EventOf<"ready">;
export type RunStartedEvent = EventOf<"run_started">;
export type StreamEvent = EventOf<"stream">;
export type ApprovalRequestedEvent = EventOf<"approval_requested">;
export type ApprovalCancelledEvent = EventOf<"approval_cancelled">;
/** run_completed, run_failed or run_cancelled. */
export type RunEndedEvent = EventOf<"run_completed" | "run_failed" | "run_cancelled">;
export type TurnCompletedEvent = EventOf<"turn_completed">;
export type SessionInfoEvent = EventOf<"session_info">;
export type ModeChangedEvent = EventOf<"mode_changed">;
export type PartialEvent = EventOf<"partial">;
export type StalledEvent = EventOf<"stalled">;
export type LimitNoticeEvent = EventOf<"limit_notice">;
export type StateEvent = EventOf<"state">;
export type StatusEvent = EventOf<"status">;
export type TerminalCommandEvent = EventOf<"terminal_command">;
export type ErrorEvent = EventOf<"error">;
export type SignalEvent = EventOf<"signal">;
export type AutoShutdownEvent = EventOf<"auto_shutdown">;
export type ShutdownEvent = EventOf<"shutdown">;

const runEnds: ReadonlySet<string> = new Set(["run_completed", "run_failed", "run_cancelled"]);

/** Reports whether e ends its run. */
export function isRunEnd(e: Event): e is RunEndedEvent {
  return runEnds.has(e.event);
}

/** Parses one stdout line; undefined when it is not a protocol event. */
export function parseEvent(line: string): Event | undefined {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null || typeof (v as { event?: unknown }).event !== "string") {
    return undefined;
  }
  return v as Event;
}
