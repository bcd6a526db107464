// What an approval offers and what each choice sends: the buttons of a tool
// or plan approval, its message, the questions of AskUserQuestion, and the
// content a file tool proposes (for Show Diff), and what a dashboard-only
// approval (the central policy's approver: dashboard) says instead. No
// vscode import.
import type { ApprovalRequestedEvent as ApprovalEvent } from "../client";
import { shortId, toolTitle } from "./format";

export type Decision = "allow" | "allow_always" | "deny" | "accept_edits" | "default" | "keep_planning";

/** One button of an approval notification. */
export type Choice =
  | { label: string; action: "decide"; decision: Decision }
  /** Bash: edit the command, then allow it with updated_input. */
  | { label: string; action: "edit" }
  /** Edit/Write/MultiEdit: show vscode.diff, then ask again. */
  | { label: string; action: "diff" }
  /** A plan: ask what to change, then keep_planning with that reason. */
  | { label: string; action: "keepPlanning" }
  /** A dashboard-only approval: open the dashboard, where it is decided; answers nothing. */
  | { label: string; action: "openDashboard" };

/** File tools whose proposed content can be shown as a diff. */
export const DIFF_TOOLS: ReadonlySet<string> = new Set(["Edit", "Write", "MultiEdit"]);

export function kindOf(e: ApprovalEvent): "tool" | "plan" | "question" {
  if (e.kind) {
    return e.kind;
  }
  if (e.tool_name === "ExitPlanMode") {
    return "plan";
  }
  return e.tool_name === "AskUserQuestion" ? "question" : "tool";
}

function optionsOf(e: ApprovalEvent): readonly Decision[] {
  if (e.options && e.options.length > 0) {
    return e.options;
  }
  // An older helper without options: what each kind allows per the schema.
  switch (kindOf(e)) {
    case "plan":
      return ["accept_edits", "default", "keep_planning"];
    case "question":
      return ["allow", "deny"];
    default:
      return ["allow", "allow_always", "deny"];
  }
}

/**
 * The buttons of a tool or plan approval, labelled exactly as users (and the
 * end-to-end tests) expect: "Allow", "Always", "Deny" (+ "Edit" for Bash,
 * "Show Diff" for file tools); "Accept Edits", "Manual", "Keep Planning" for
 * a plan. A question is answered with a quick pick, not buttons.
 */
export function approvalChoices(e: ApprovalEvent): Choice[] {
  if (dashboardOnly(e)) {
    // The helper answers any approve for it with policy_denied: offering
    // Allow / Deny would only produce that error.
    return [{ label: "Open Dashboard", action: "openDashboard" }];
  }
  const opts = optionsOf(e);
  const out: Choice[] = [];
  if (kindOf(e) === "plan") {
    if (opts.includes("accept_edits")) {
      out.push({ label: "Accept Edits", action: "decide", decision: "accept_edits" });
    }
    if (opts.includes("default")) {
      out.push({ label: "Manual", action: "decide", decision: "default" });
    }
    if (opts.includes("keep_planning")) {
      out.push({ label: "Keep Planning", action: "keepPlanning" });
    }
    return out;
  }
  if (opts.includes("allow")) {
    out.push({ label: "Allow", action: "decide", decision: "allow" });
  }
  if (opts.includes("allow_always")) {
    out.push({ label: "Always", action: "decide", decision: "allow_always" });
  }
  if (opts.includes("deny")) {
    out.push({ label: "Deny", action: "decide", decision: "deny" });
  }
  if (e.tool_name === "Bash" && opts.includes("allow")) {
    out.push({ label: "Edit", action: "edit" });
  }
  if (DIFF_TOOLS.has(e.tool_name)) {
    out.push({ label: "Show Diff", action: "diff" });
  }
  return out;
}

/** What is asked, in full: the helper's title, else one built from the input. */
export function approvalTitle(e: ApprovalEvent): string {
  const title = (e.title ?? "").trim();
  return title !== "" ? title : toolTitle(e.tool_name, e.input ?? {});
}

/**
 * The central policy lets only the dashboard decide e (approver: dashboard):
 * the extension shows it, but an approve for it gets a policy_denied error.
 */
export function dashboardOnly(e: ApprovalEvent): boolean {
  return e.approver === "dashboard";
}

/** The policy rule that asked and its reason: "rule Bash(git push *): pushes need review", or "". */
export function policyOf(e: ApprovalEvent): string {
  const rule = (e.policy_rule ?? "").trim();
  const reason = (e.policy_reason ?? "").trim();
  if (rule === "") {
    return reason;
  }
  return reason === "" ? `rule ${rule}` : `rule ${rule}: ${reason}`;
}

/** "the team's central policy (rule …: reason) lets only the dashboard decide". */
function onlyDashboard(e: ApprovalEvent): string {
  const policy = policyOf(e);
  return `the team's central policy${policy === "" ? "" : ` (${policy})`} lets only the dashboard decide`;
}

/** The notification's text; it holds the whole command (or path, or plan). */
export function approvalMessage(e: ApprovalEvent): string {
  const run = e.run_id ? ` (run ${shortId(e.run_id)})` : "";
  if (dashboardOnly(e)) {
    return `Claude Relay: ${e.tool_name}${run} waits for the dashboard: ${approvalTitle(e)} — ${onlyDashboard(e)}.`;
  }
  if (kindOf(e) === "plan") {
    return `Claude Relay has a plan${run}: ${approvalTitle(e)}`;
  }
  return `Claude Relay wants to use ${e.tool_name}${run}: ${approvalTitle(e)}`;
}

/** The run's output line when e arrives: who it waits for. */
export function waitingLine(e: ApprovalEvent): string {
  if (dashboardOnly(e)) {
    return `? Waiting for the dashboard: ${approvalTitle(e)} (${onlyDashboard(e)}; "Open Dashboard" to decide it there)`;
  }
  return `? Waiting for your answer: ${approvalTitle(e)}`;
}

/** A policy_denied error's notification: the helper's message says which rule and where to decide. */
export function policyDeniedMessage(message: string): string {
  return `Claude Relay: ${message}`;
}

/**
 * VS Code cuts a notification's message at 1000 characters and renders
 * [text](target) as a link, so such a text would not show the command as
 * it is; those go to a modal dialog, whose detail shows plain text in full.
 */
export const NOTIFICATION_MAX = 900;

export function needsModal(message: string): boolean {
  return message.length > NOTIFICATION_MAX || /\[[^\]]*\]\([^)]*\)/.test(message);
}

/** The Bash input with its command replaced, for allow with updated_input. */
export function editedInput(e: ApprovalEvent, command: string): Record<string, unknown> {
  return { ...(e.input ?? {}), command };
}

export interface QuestionOption {
  label: string;
  description: string;
}

export interface Question {
  question: string;
  header: string;
  multiSelect: boolean;
  options: QuestionOption[];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** AskUserQuestion's questions, from the event's questions or its input. */
export function questionsOf(e: ApprovalEvent): Question[] {
  let raw: unknown = e.questions;
  if (isObject(raw)) {
    raw = raw.questions;
  }
  if (!Array.isArray(raw)) {
    raw = e.input?.questions;
  }
  if (!Array.isArray(raw)) {
    return [];
  }
  const out: Question[] = [];
  for (const q of raw) {
    if (!isObject(q) || typeof q.question !== "string") {
      continue;
    }
    const options: QuestionOption[] = [];
    if (Array.isArray(q.options)) {
      for (const o of q.options) {
        if (isObject(o) && typeof o.label === "string") {
          options.push({ label: o.label, description: typeof o.description === "string" ? o.description : "" });
        } else if (typeof o === "string") {
          options.push({ label: o, description: "" });
        }
      }
    }
    out.push({
      question: q.question,
      header: typeof q.header === "string" ? q.header : "",
      multiSelect: q.multiSelect === true,
      options,
    });
  }
  return out;
}

/** The answer to one question: several choices comma-separated (the schema's rule). */
export function answerOf(labels: readonly string[]): string {
  return labels.join(", ");
}

function replaceOnce(text: string, oldString: string, newString: string, all: boolean): string | undefined {
  if (oldString === "") {
    // The CLI's Edit with an empty old_string creates the file.
    return text === "" ? newString : undefined;
  }
  if (!text.includes(oldString)) {
    return undefined;
  }
  return all ? text.split(oldString).join(newString) : text.replace(oldString, () => newString);
}

/**
 * The file's content after the tool ran, given its current content ("" for
 * a file that does not exist), or undefined when the edit does not apply (its
 * old_string is not in the file): the diff then cannot be shown.
 */
export function proposedContent(toolName: string, input: Record<string, unknown>, current: string): string | undefined {
  const s = (v: unknown): string => (typeof v === "string" ? v : "");
  switch (toolName) {
    case "Write":
      return s(input.content);
    case "Edit":
      return replaceOnce(current, s(input.old_string), s(input.new_string), input.replace_all === true);
    case "MultiEdit": {
      if (!Array.isArray(input.edits)) {
        return undefined;
      }
      let text: string | undefined = current;
      for (const edit of input.edits) {
        if (!isObject(edit) || text === undefined) {
          return undefined;
        }
        text = replaceOnce(text, s(edit.old_string), s(edit.new_string), edit.replace_all === true);
      }
      return text;
    }
  }
  return undefined;
}
