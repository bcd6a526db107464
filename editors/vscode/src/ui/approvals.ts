// Asking approvals: a notification with the whole command (or path, or plan)
// and the buttons "Allow", "Always", "Deny" (+ "Edit" for Bash, "Show Diff"
// for file tools; "Accept Edits", "Manual", "Keep Planning" for a plan), or a
// quick pick of a question's options; for an approval only the dashboard may
// decide (the central policy's approver: dashboard), an information
// notification with "Open Dashboard" and no answer buttons. Shown as soon as
// the event arrives, with no extra click.
import * as vscode from "vscode";
import {
  answerOf,
  approvalChoices,
  approvalMessage,
  approvalTitle,
  dashboardOnly,
  editedInput,
  kindOf,
  needsModal,
  policyDeniedMessage,
  questionsOf,
  type Choice,
  type Decision,
  type Question,
} from "./approvalChoices";
import type { ProposedDiffs } from "./diffView";
import { summarize } from "./format";
import type { ApprovalRequestedEvent as ApprovalEvent } from "../client";

export interface Answer {
  decision: Decision;
  reason?: string;
  updatedInput?: Record<string, unknown>;
  answers?: Record<string, string>;
  /** What the run's output says about the answer. */
  note: string;
}

export interface ApprovalHost {
  /** Sends the answer; rejects with the helper's error message. */
  answer(e: ApprovalEvent, a: Answer): Promise<void>;
  /** Whether the approval still waits (not answered, not withdrawn). */
  isPending(e: ApprovalEvent): boolean;
  /** The run's working directory, for relative file paths. */
  cwdOf(e: ApprovalEvent): string | undefined;
  /** Adds a line to the run's output. */
  log(e: ApprovalEvent, line: string): void;
  /** "Claude Relay: Open Dashboard", where a dashboard-only approval is decided. */
  openDashboard(): Promise<void>;
}

/** The code of the helper's error a command was refused with (RelayError), if any. */
function errorCode(err: unknown): unknown {
  return typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
}

export class ApprovalPrompter implements vscode.Disposable {
  /** Quick inputs (pickers, input boxes) replace each other: they are asked one at a time. */
  private quickInputs: Promise<unknown> = Promise.resolve();
  private disposed = false;

  constructor(
    private readonly host: ApprovalHost,
    private readonly diffs: ProposedDiffs,
  ) {}

  /** Asks e; never throws (what fails is shown). Asking again shows another prompt; the first answer wins. */
  ask(e: ApprovalEvent): void {
    const flow = dashboardOnly(e)
      ? this.showDashboardOnly(e)
      : kindOf(e) === "question"
        ? this.askQuestion(e)
        : this.askButtons(e);
    flow.catch((err: unknown) => {
      void vscode.window.showErrorMessage(`Claude Relay: asking "${summarize(approvalTitle(e), 80)}" failed: ${String(err)}`);
    });
  }

  private serial<T>(fn: () => Thenable<T>): Promise<T> {
    const next = this.quickInputs.then(fn, fn);
    this.quickInputs = next.catch(() => undefined);
    return next;
  }

  private async showButtons(e: ApprovalEvent, choices: readonly Choice[]): Promise<Choice | undefined> {
    const message = approvalMessage(e);
    const labels = choices.map((c) => c.label);
    const show = kindOf(e) === "plan" ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
    let picked: string | undefined;
    if (needsModal(message)) {
      // Too long (or link-like) for a notification to show as it is: a
      // dialog's detail shows the whole text.
      picked = await show(
        `Claude Relay: ${kindOf(e) === "plan" ? "approve this plan?" : `allow ${e.tool_name}?`}`,
        { modal: true, detail: message },
        ...labels,
      );
    } else {
      picked = await show(message, { modal: false }, ...labels);
    }
    return choices.find((c) => c.label === picked);
  }

  /**
   * An approval the extension cannot answer: said as information, with only
   * "Open Dashboard". The dashboard's decision reaches the run like any made
   * elsewhere (approval_cancelled), so nothing here waits for it.
   */
  private async showDashboardOnly(e: ApprovalEvent): Promise<void> {
    const message = approvalMessage(e);
    const labels = approvalChoices(e).map((c) => c.label);
    const picked = needsModal(message)
      ? await vscode.window.showInformationMessage(
          `Claude Relay: ${e.tool_name} waits for the dashboard`,
          { modal: true, detail: message },
          ...labels,
        )
      : await vscode.window.showInformationMessage(message, { modal: false }, ...labels);
    if (!this.disposed && picked === "Open Dashboard") {
      // Opening it after the decision does no harm: it answers nothing.
      await this.host.openDashboard();
    }
  }

  private async askButtons(e: ApprovalEvent): Promise<void> {
    for (;;) {
      const choice = await this.showButtons(e, approvalChoices(e));
      if (this.disposed || choice === undefined) {
        // Dismissed: it stays pending; the Runs view and "Show Pending
        // Approvals" ask again.
        return;
      }
      if (!this.host.isPending(e)) {
        this.late(e);
        return;
      }
      switch (choice.action) {
        case "decide":
          await this.send(e, { decision: choice.decision, note: noteFor(choice.decision) });
          return;
        case "diff":
          await this.diffs.show(e, this.host.cwdOf(e));
          continue; // ask again, with the diff open beside
        case "edit": {
          const command = typeof e.input?.command === "string" ? e.input.command : "";
          const edited = await this.serial(() =>
            vscode.window.showInputBox({
              title: "Claude Relay: edit the command, then Enter to allow it",
              value: command,
              prompt: "Enter runs the edited command; Escape goes back to Allow / Always / Deny.",
              ignoreFocusOut: true,
              valueSelection: [0, command.length],
            }),
          );
          if (edited === undefined || edited.trim() === "") {
            continue;
          }
          await this.send(e, {
            decision: "allow",
            updatedInput: editedInput(e, edited),
            note: `✔ Allowed, edited to: $ ${edited}`,
          });
          return;
        }
        case "openDashboard":
          // Only a dashboard-only approval offers it, and those are not asked here.
          await this.host.openDashboard();
          return;
        case "keepPlanning": {
          const reason = await this.serial(() =>
            vscode.window.showInputBox({
              title: "Claude Relay: keep planning",
              prompt: "What should the plan change? (Enter with nothing just keeps planning.)",
              ignoreFocusOut: true,
            }),
          );
          if (reason === undefined) {
            continue;
          }
          await this.send(e, {
            decision: "keep_planning",
            ...(reason.trim() ? { reason: reason.trim() } : {}),
            note: reason.trim() ? `Plan: keep planning — ${reason.trim()}` : "Plan: keep planning",
          });
          return;
        }
      }
    }
  }

  private async askQuestion(e: ApprovalEvent): Promise<void> {
    const questions = questionsOf(e);
    if (questions.length === 0) {
      const picked = await vscode.window.showWarningMessage(
        `Claude Relay: the model asked a question with no options the extension can show (${approvalTitle(e)}).`,
        { modal: false },
        "Deny",
      );
      if (picked === "Deny" && this.host.isPending(e)) {
        await this.send(e, { decision: "deny", note: "✖ Question declined" });
      }
      return;
    }
    const answers: Record<string, string> = {};
    for (const q of questions) {
      const answer = await this.serial(() => this.pick(e, q));
      if (answer === undefined || !this.host.isPending(e)) {
        return; // dismissed (stays pending), declined or withdrawn
      }
      answers[q.question] = answer;
    }
    const note = `✔ Answered: ${Object.entries(answers)
      .map(([q, a]) => `${q} → ${a}`)
      .join("; ")}`;
    await this.send(e, { decision: "allow", answers, note });
  }

  /** One question's answer: its options, "Other…" (typed), or "Deny" (declines them all). */
  private async pick(e: ApprovalEvent, q: Question): Promise<string | undefined> {
    type Item = vscode.QuickPickItem & { kind2: "option" | "other" | "deny" };
    const items: Item[] = q.options.map((o) => ({ label: o.label, description: o.description, kind2: "option" }));
    items.push({ label: "Other…", description: "type your own answer", kind2: "other", alwaysShow: true });
    items.push({ label: "Deny", description: "do not answer", kind2: "deny", alwaysShow: true });
    const title = `Claude Relay asks${q.header ? ` (${q.header})` : ""}: ${q.question}`;
    const options = { title, placeHolder: q.question, ignoreFocusOut: true, matchOnDescription: true };
    let chosen: readonly Item[] | undefined;
    if (q.multiSelect) {
      chosen = await vscode.window.showQuickPick(items, { ...options, canPickMany: true });
    } else {
      const one = await vscode.window.showQuickPick(items, options);
      chosen = one ? [one] : undefined;
    }
    if (!chosen || chosen.length === 0) {
      return undefined;
    }
    if (chosen.some((c) => c.kind2 === "deny")) {
      if (this.host.isPending(e)) {
        await this.send(e, { decision: "deny", note: "✖ Question declined" });
      }
      return undefined;
    }
    const labels = chosen.filter((c) => c.kind2 === "option").map((c) => c.label);
    if (chosen.some((c) => c.kind2 === "other")) {
      const typed = await vscode.window.showInputBox({ title, prompt: "Your answer", ignoreFocusOut: true });
      if (typed === undefined) {
        return undefined;
      }
      if (typed.trim()) {
        labels.push(typed.trim());
      }
    }
    return labels.length > 0 ? answerOf(labels) : undefined;
  }

  private async send(e: ApprovalEvent, a: Answer): Promise<void> {
    try {
      await this.host.answer(e, a);
    } catch (err) {
      if (!this.host.isPending(e)) {
        // Withdrawn while we sent it (an unknown_approval error): nothing to do.
        return;
      }
      if (errorCode(err) === "policy_denied") {
        // Not a failure to retry: the team's policy says who decides, and
        // the helper's message says which rule and where.
        void this.showPolicyDenied((err as Error).message);
        return;
      }
      void vscode.window.showErrorMessage(
        `Claude Relay: answering "${summarize(approvalTitle(e), 80)}" with ${a.decision} failed: ${(err as Error).message}. It still waits: answer it again from the Runs view.`,
      );
    } finally {
      this.diffs.forget(e.approval_id);
    }
  }

  /** A policy_denied refusal, with its message and the way to the dashboard. */
  async showPolicyDenied(message: string): Promise<void> {
    const pick = await vscode.window.showInformationMessage(policyDeniedMessage(message), "Open Dashboard");
    if (pick === "Open Dashboard") {
      await this.host.openDashboard();
    }
  }

  /** A click on a prompt whose approval is gone: ignored, but said in the run's output. */
  private late(e: ApprovalEvent): void {
    this.host.log(e, `(a late answer to "${summarize(approvalTitle(e), 80)}" was ignored: it no longer waits)`);
  }

  dispose(): void {
    this.disposed = true;
  }
}

function noteFor(d: Decision): string {
  switch (d) {
    case "allow":
      return "✔ Allowed";
    case "allow_always":
      return "✔ Always allowed (for the rest of this run)";
    case "deny":
      return "✖ Denied";
    case "accept_edits":
      return "Plan accepted: edits are allowed";
    case "default":
      return "Plan accepted: each edit asks (manual)";
    case "keep_planning":
      return "Plan: keep planning";
  }
}
