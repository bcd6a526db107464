// The workspace's recent conversations, from the backend's read API
// (GET /api/sessions, GET /api/sessions/{id}/events; internal/server/backend):
// the sessions that have a Claude conversation ID and whose first run
// (relay.run_started's cwd) was in one of the workspace's folders. No vscode
// import: fetch is passed in.
import * as path from "node:path";
import { formatCost } from "./format";

export interface Conversation {
  sessionId: string;
  conversationId: string;
  /** The first run's prompt ("" when the backend has none). */
  prompt: string;
  cwd: string;
  status: string;
  costUsd: number | undefined;
  updatedAt: string;
}

export interface ListOptions {
  backend: string;
  token: string | undefined;
  /** Workspace folders; [] = any cwd. */
  folders: readonly string[];
  /** How many of the newest sessions to look at. */
  limit?: number;
  fetch: typeof fetch;
  signal?: AbortSignal;
}

/** A backend answer the user must act on (bad token, unreachable, unexpected reply). */
export class BackendError extends Error {
  override readonly name = "BackendError";
}

interface SessionJson {
  id?: unknown;
  external_conversation_id?: unknown;
  status?: unknown;
  total_cost_usd?: unknown;
  updated_at?: unknown;
}

interface EventJson {
  event_type?: unknown;
  event_data?: { cwd?: unknown; prompt?: unknown; mode?: unknown };
}

function s(v: unknown): string {
  return typeof v === "string" ? v : "";
}

/** Whether dir is folder or inside it. */
export function within(dir: string, folder: string): boolean {
  if (dir === "" || folder === "") {
    return false;
  }
  const rel = path.relative(path.resolve(folder), path.resolve(dir));
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

async function getJson(o: ListOptions, pathAndQuery: string): Promise<unknown> {
  const url = new URL(pathAndQuery, o.backend.endsWith("/") ? o.backend : `${o.backend}/`).toString();
  const headers: Record<string, string> = { Accept: "application/json" };
  if (o.token) {
    headers.Authorization = `Bearer ${o.token}`;
  }
  let res: Response;
  try {
    res = await o.fetch(url, { headers, ...(o.signal ? { signal: o.signal } : {}) });
  } catch (err) {
    throw new BackendError(`Cannot reach the backend at ${o.backend} (${(err as Error).message}): is it running?`);
  }
  if (res.status === 401) {
    throw new BackendError(
      `The backend at ${o.backend} refused the token (401 Unauthorized): set it with "Claude Relay: Set Backend Token".`,
    );
  }
  if (!res.ok) {
    throw new BackendError(`The backend at ${o.backend} answered ${res.status} for GET ${pathAndQuery}.`);
  }
  try {
    return await res.json();
  } catch (err) {
    throw new BackendError(`The backend at ${o.backend} sent no JSON for GET ${pathAndQuery}: ${(err as Error).message}`);
  }
}

/** The newest sessions with a conversation, from the workspace's folders, newest first. */
export async function recentConversations(o: ListOptions): Promise<Conversation[]> {
  const limit = o.limit ?? 30;
  const list = (await getJson(o, `api/sessions?limit=${limit}`)) as { sessions?: SessionJson[] };
  const sessions = (Array.isArray(list.sessions) ? list.sessions : []).filter(
    (x) => s(x.id) !== "" && s(x.external_conversation_id) !== "",
  );
  const found = await Promise.all(
    sessions.map(async (x): Promise<Conversation | undefined> => {
      const id = s(x.id);
      // The first events hold the first run's relay.run_started: its cwd and
      // prompt. A session whose events cannot be read is left out, not fatal.
      let events: EventJson[] = [];
      try {
        const page = (await getJson(o, `api/sessions/${encodeURIComponent(id)}/events?limit=5`)) as {
          events?: EventJson[];
        };
        events = Array.isArray(page.events) ? page.events : [];
      } catch {
        return undefined;
      }
      const started = events.find((e) => e.event_type === "relay.run_started");
      const cwd = s(started?.event_data?.cwd);
      if (o.folders.length > 0 && !o.folders.some((f) => within(cwd, f))) {
        return undefined;
      }
      return {
        sessionId: id,
        conversationId: s(x.external_conversation_id),
        prompt: s(started?.event_data?.prompt),
        cwd,
        status: s(x.status),
        costUsd: typeof x.total_cost_usd === "number" ? x.total_cost_usd : undefined,
        updatedAt: s(x.updated_at),
      };
    }),
  );
  return found.filter((c): c is Conversation => c !== undefined);
}

/**
 * A conversation's description in the quick pick: its status and cost. The
 * backend says "unknown" for a session it has no end for yet (a run still
 * open); that says nothing to a person, so it is left out.
 */
export function describeConversation(c: Conversation): string {
  const status = c.status === "unknown" ? "" : c.status;
  return [status, formatCost(c.costUsd)].filter((p) => p !== "").join(" · ");
}
