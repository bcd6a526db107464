// Pure text formatting for the extension's UI: a run's output lines from the
// CLI's stream-json payloads, tool titles, costs, durations, token counts and
// the end-of-run line. No vscode import, so node's test runner covers it.
import type { Usage } from "../client";

/** How much of a tool result a run's output shows; the rest is summarised. */
export const RESULT_MAX_LINES = 12;
export const RESULT_MAX_CHARS = 1500;

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

/** "$0.0123": four decimals, since a single turn often costs under a cent. */
export function formatCost(usd: number | undefined): string {
  if (usd === undefined || !Number.isFinite(usd)) {
    return "";
  }
  return `$${usd.toFixed(4)}`;
}

/** "0.4s", "12.3s", "2m 05s". */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) {
    return "";
  }
  if (ms < 60_000) {
    return `${(ms / 1000).toFixed(1)}s`;
  }
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
}

/** "950", "1.2k", "3.4M". */
export function formatCount(n: number): string {
  if (n < 1000) {
    return String(n);
  }
  if (n < 1_000_000) {
    return `${(n / 1000).toFixed(1).replace(/\.0$/, "")}k`;
  }
  return `${(n / 1_000_000).toFixed(1).replace(/\.0$/, "")}M`;
}

/** Input tokens as the model saw them: fresh plus cache reads and writes. */
export function inputTokens(u: Usage): number {
  return (u.input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0);
}

/** "1.2k in / 345 out tokens", or "" without usage. */
export function formatTokens(u: Usage | undefined): string {
  if (!u) {
    return "";
  }
  return `${formatCount(inputTokens(u))} in / ${formatCount(u.output_tokens ?? 0)} out tokens`;
}

/** The first 8 characters of a run id: enough to tell runs apart. */
export function shortId(id: string): string {
  return id.replace(/-/g, "").slice(0, 8);
}

/** A prompt's first line, cut to max characters, for labels. */
export function summarize(text: string, max = 60): string {
  const line = text.trim().split(/\r?\n/, 1)[0] ?? "";
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * Names a tool call by what it does: the whole Bash command, a file tool's
 * path, a fetch's URL (mirrors internal/tooltitle.Full, which gives the
 * helper's approval titles). Nothing is cut.
 */
export function toolTitle(name: string, input: unknown): string {
  const inp = isObject(input) ? input : {};
  const description = str(inp.description);
  const withDesc = (s: string): string => (description === "" || description === s ? s : `${s} — ${description}`);
  switch (name) {
    case "Bash": {
      const cmd = str(inp.command);
      return withDesc(cmd === "" ? "Bash (no command)" : `$ ${cmd}`);
    }
    case "Read":
    case "Edit":
    case "MultiEdit":
    case "Write":
      return `${name} ${str(inp.file_path) || "(no path)"}`;
    case "NotebookEdit":
      return `${name} ${str(inp.notebook_path) || "(no path)"}`;
    case "Grep":
    case "Glob": {
      const where = str(inp.path);
      return `${name} ${str(inp.pattern)}${where ? ` in ${where}` : ""}`;
    }
    case "WebFetch":
      return withDesc(`Fetch ${str(inp.url) || "(no URL)"}`);
    case "WebSearch":
      return `Search the web: ${str(inp.query)}`;
    case "Task":
    case "Agent":
      return withDesc(`Subagent: ${str(inp.prompt).trim().split("\n", 1)[0] ?? ""}`);
    case "ExitPlanMode":
      return `Plan: ${str(inp.plan).trim() || "(no plan text)"}`;
    case "AskUserQuestion": {
      const qs = Array.isArray(inp.questions) ? inp.questions : [];
      const texts = qs.map((q) => (isObject(q) ? str(q.question) : "")).filter((q) => q !== "");
      return `Question: ${texts.join(" / ") || "(no question)"}`;
    }
  }
  // Anything else (MCP tools among them): the name and the whole input,
  // since we cannot know which field matters.
  const compact = JSON.stringify(input ?? {});
  return compact === "{}" || compact === "null" ? name : `${name} ${compact}`;
}

/**
 * A tool result cut to RESULT_MAX_LINES lines and RESULT_MAX_CHARS
 * characters, saying how much was left out so nobody mistakes it for the
 * whole output.
 */
export function trimResult(text: string, maxLines = RESULT_MAX_LINES, maxChars = RESULT_MAX_CHARS): string {
  const body = text.replace(/\s+$/, "");
  let lines = body.split(/\r?\n/);
  const totalLines = lines.length;
  let cut = false;
  if (lines.length > maxLines) {
    lines = lines.slice(0, maxLines);
    cut = true;
  }
  let out = lines.join("\n");
  if (out.length > maxChars) {
    out = out.slice(0, maxChars);
    cut = true;
  }
  if (cut) {
    out += `\n… (${formatCount(body.length)} characters, ${totalLines} ${totalLines === 1 ? "line" : "lines"} in all)`;
  }
  return out;
}

function indent(text: string, prefix = "  "): string {
  return text
    .split("\n")
    .map((l) => prefix + l)
    .join("\n");
}

/** The text of a tool_result block's content (a string or text blocks). */
function resultText(content: unknown): string {
  if (typeof content === "string") {
    return content;
  }
  if (Array.isArray(content)) {
    return content
      .map((b) => {
        if (!isObject(b)) {
          return "";
        }
        if (b.type === "text") {
          return str(b.text);
        }
        return `[${str(b.type) || "content"}]`;
      })
      .filter((s) => s !== "")
      .join("\n");
  }
  return "";
}

/**
 * The readable lines of one stream-json payload (the CLI's own line): the
 * assistant's text, its tool calls in full, tool results trimmed. Lines the
 * reader has no use for (control messages, hook traffic, the result, which
 * the end line reports) give [].
 */
export function formatStreamPayload(payload: unknown): string[] {
  if (!isObject(payload)) {
    return [];
  }
  const message = isObject(payload.message) ? payload.message : {};
  const content = message.content;
  switch (payload.type) {
    case "system":
      if (payload.subtype === "init") {
        const parts = [`Claude Code ${str(payload.claude_code_version)}`.trim()];
        if (str(payload.model)) {
          parts.push(`model ${str(payload.model)}`);
        }
        if (str(payload.permissionMode)) {
          parts.push(`mode ${str(payload.permissionMode)}`);
        }
        return [`· ${parts.join(" · ")}`];
      }
      return [];
    case "assistant": {
      if (!Array.isArray(content)) {
        return [];
      }
      const out: string[] = [];
      for (const block of content) {
        if (!isObject(block)) {
          continue;
        }
        if (block.type === "text" && str(block.text).trim() !== "") {
          out.push(str(block.text).trim());
        } else if (block.type === "tool_use") {
          out.push(`▶ ${toolTitle(str(block.name), block.input)}`);
        }
      }
      return out;
    }
    case "user": {
      if (typeof content === "string") {
        // A replayed or follow-up prompt: the extension prints its own.
        return [];
      }
      if (!Array.isArray(content)) {
        return [];
      }
      const out: string[] = [];
      for (const block of content) {
        if (!isObject(block) || block.type !== "tool_result") {
          continue;
        }
        const text = resultText(block.content);
        const label = block.is_error === true ? "✖ error" : "◀ result";
        out.push(text.trim() === "" ? `${label}: (no output)` : `${label}:\n${indent(trimResult(text))}`);
      }
      return out;
    }
    case "result":
      // An error result's text says what went wrong; a success repeats the
      // assistant's last message, which is already shown.
      if (payload.is_error === true && str(payload.result) !== "") {
        return [`✖ ${str(payload.result)}`];
      }
      return [];
  }
  return [];
}

/** What a run's (or turn's) end carries that the end line reports. */
export interface EndInfo {
  event: "turn_completed" | "run_completed" | "run_failed" | "run_cancelled";
  costUsd?: number | undefined;
  durationMs?: number | undefined;
  reason?: string | undefined;
  stderr?: string | undefined;
  turn?: number | undefined;
  /** turn_completed: completed, failed or interrupted (someone stopped it). */
  status?: "completed" | "failed" | "interrupted" | undefined;
  /** run_completed of a keep_alive run: how many turns it had. */
  turns?: number | undefined;
}

/**
 * The line that ends a run in its output and notifications: "Run completed ·
 * $0.0123 · 1.2s", "Run failed: <why> · $0.0010 · 0.3s", "Run cancelled".
 * A keep_alive run's turn reads as a completed run (that is what the person
 * asked for), with the turn number from the second turn on; its close (end
 * or idle timeout) gives the totals.
 */
export function endLine(info: EndInfo): string {
  let head: string;
  switch (info.event) {
    case "turn_completed": {
      const why = (info.reason ?? "").trim() || firstLine(info.stderr ?? "");
      if (info.status === "interrupted") {
        head = why ? `Turn interrupted: ${why}` : "Turn interrupted";
      } else if (info.status === "failed") {
        head = why ? `Turn failed: ${why}` : "Turn failed";
      } else {
        head = "Run completed";
      }
      break;
    }
    case "run_completed":
      // A live run's turns each printed their own "Run completed"; its
      // close sums them.
      head = info.turns ? `Run closed after ${info.turns} ${info.turns === 1 ? "turn" : "turns"}` : "Run completed";
      break;
    case "run_failed": {
      // A reason that is only a code (the client's "helper_exited") says
      // less than the stderr beside it.
      let why = (info.reason ?? "").trim();
      const stderr = firstLine(info.stderr ?? "");
      if (why === "" || (/^[a-z_]+$/.test(why) && stderr !== "")) {
        why = stderr || why;
      }
      head = why ? `Run failed: ${why}` : "Run failed";
      break;
    }
    case "run_cancelled": {
      const why = (info.reason ?? "").trim();
      head = why ? `Run cancelled: ${why}` : "Run cancelled";
      break;
    }
  }
  const parts = [head, formatCost(info.costUsd), formatDuration(info.durationMs)].filter((p) => p !== "");
  if (info.event === "turn_completed" && info.turn !== undefined && info.turn > 1) {
    parts.push(`turn ${info.turn}`);
  }
  return parts.join(" · ");
}

function firstLine(s: string): string {
  return s.trim().split(/\r?\n/, 1)[0] ?? "";
}
