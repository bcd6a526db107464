// What the commands do, and how the helper's events reach the views: the
// run model, the runs' output channels, approvals and notifications.
import { randomUUID } from "node:crypto";
import * as vscode from "vscode";
import type { ApprovalRequestedEvent, Event, PromptOptions, RestartInfo, Run } from "../client";
import { waitingLine } from "./approvalChoices";
import { ApprovalPrompter, type Answer } from "./approvals";
import type { ProposedDiffs } from "./diffView";
import { formatCost, formatStreamPayload, shortId, summarize } from "./format";
import { TOKEN_SECRET, workspaceCwd, type Helper } from "./helper";
import type { RunOutputs } from "./outputs";
import type { RunsView } from "./runsView";
import { isLive, STATUS_TEXT, statusOf, type RunRecord, type RunsModel } from "./runs";
import { BackendError, describeConversation, recentConversations, type Conversation } from "./sessions";

/** A command's argument: a run id, or the Runs view's item (its RunRecord). */
export type RunArg = string | { id: string } | undefined;

// Checked against the schema's enum, so a mode it drops fails the build.
const PERMISSION_MODES = ["default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions"] as const satisfies readonly NonNullable<PromptOptions["permission_mode"]>[];

/** Helper errors that are not about a run; each is shown once per window. */
const NOTIFY_ONCE: ReadonlySet<string> = new Set(["backend_auth", "dead_letter", "spool_full", "spool", "not_backend"]);

export class Controller implements vscode.Disposable {
  /** The handles of live runs, from prompt() (pending until run_started). */
  private readonly handles = new Map<string, Promise<Run>>();
  private readonly cwds = new Map<string, string | undefined>();
  private readonly notified = new Set<string>();
  private readonly lastInit = new Map<string, string>();
  readonly approvals: ApprovalPrompter;

  constructor(
    private readonly ctx: vscode.ExtensionContext,
    private readonly model: RunsModel,
    private readonly outputs: RunOutputs,
    private readonly helper: Helper,
    private readonly log: vscode.OutputChannel,
    diffs: ProposedDiffs,
    private readonly runsView: RunsView,
  ) {
    this.approvals = new ApprovalPrompter(
      {
        answer: (e, a) => this.answer(e, a),
        isPending: (e) => this.model.isPending(e.run_id ?? "", e.approval_id),
        cwdOf: (e) => this.cwds.get(e.run_id ?? ""),
        log: (e, line) => this.outputs.append(e.run_id ?? "", [line]),
        openDashboard: () => this.openDashboard(),
      },
      diffs,
    );
  }

  // ---- events ----

  onEvent(e: Event): void {
    const change = this.model.apply(e);
    const runId = e.run_id ?? "";
    switch (e.event) {
      case "stream": {
        if (!change) {
          return;
        }
        let lines = formatStreamPayload(e.payload);
        if (e.payload.type === "system" && e.payload.subtype === "init") {
          // The CLI repeats its init line every turn: show it when it says
          // something new (another model or mode).
          if (this.lastInit.get(runId) === lines[0]) {
            lines = [];
          } else {
            this.lastInit.set(runId, lines[0] ?? "");
          }
        }
        this.outputs.append(runId, lines);
        return;
      }
      case "approval_requested":
        if (change?.approval) {
          this.outputs.append(runId, [waitingLine(e)]);
          this.approvals.ask(change.approval);
        }
        return;
      case "approval_cancelled":
        if (change?.withdrawn) {
          this.outputs.append(runId, [`Approval withdrawn${e.reason ? ` (${e.reason})` : ""}`]);
        }
        return;
      case "turn_completed":
        if (change?.endLine) {
          this.outputs.append(runId, [
            change.endLine,
            "  (the run stays open: “Claude Relay: Follow Up” sends the next message)",
            "",
          ]);
          this.notifyEnd(change.run, change.endLine);
        }
        return;
      case "run_completed":
      case "run_failed":
      case "run_cancelled":
        this.handles.delete(runId);
        if (change?.endLine) {
          this.outputs.append(runId, [change.endLine, ""]);
          // A live run's close after its turns was already announced turn by turn.
          if (e.event !== "run_completed" || change.run.turns === 0) {
            this.notifyEnd(change.run, change.endLine);
          }
        }
        return;
      case "mode_changed":
        this.outputs.append(runId, [`· permission mode: ${e.permission_mode}`]);
        return;
      case "stalled":
        this.outputs.append(runId, [`! stalled: ${e.reason} (${e.seconds}s without output); the turn is interrupted`]);
        return;
      case "limit_notice":
        if (this.model.get(runId)) {
          this.outputs.append(runId, [`! ${e.message}`]);
        } else {
          this.log.appendLine(`Limit notice: ${e.message}`);
        }
        return;
      case "error":
        this.onError(e);
        return;
    }
  }

  private onError(e: Extract<Event, { event: "error" }>): void {
    const runId = e.run_id ?? "";
    if (this.model.get(runId)) {
      this.outputs.append(runId, [`! error (${e.code}): ${e.message}`]);
    }
    if (e.request_id) {
      return; // the command's promise rejects with it; its caller reports it
    }
    this.log.appendLine(`Helper error (${e.code}): ${e.message}`);
    if (e.code === "policy_denied") {
      // The team's policy, not a fault: its message says which rule and where to decide.
      void this.approvals.showPolicyDenied(e.message);
      return;
    }
    if (NOTIFY_ONCE.has(e.code) && !this.notified.has(e.code)) {
      this.notified.add(e.code);
      void vscode.window.showWarningMessage(`Claude Relay: ${e.message}`, "Show Log").then((pick) => {
        if (pick) {
          this.log.show(true);
        }
      });
    }
  }

  onRestart(info: RestartInfo): void {
    // The client ended every run it knew with run_failed; a run whose
    // prompt was on its way is ended here.
    const why = `the helper exited (${info.signal ? `signal ${info.signal}` : `status ${info.code ?? "unknown"}`}) and was restarted`;
    for (const r of this.model.list()) {
      const change = this.model.fail(r.id, why);
      if (change?.endLine) {
        this.outputs.append(r.id, [change.endLine]);
      }
      this.handles.delete(r.id);
    }
    void vscode.window
      .showWarningMessage(`Claude Relay: ${why}; its runs ended. See the "Claude Relay" output for why.`, "Show Log")
      .then((pick) => {
        if (pick) {
          this.log.show(true);
        }
      });
  }

  private notifyEnd(r: RunRecord, line: string): void {
    const text = `Claude Relay: ${line} — ${summarize(r.prompt, 50) || `run ${shortId(r.id)}`}`;
    const buttons = isLive(r) ? ["Show Output", "Follow Up"] : ["Show Output"];
    const show = statusOf(r) === "failed" ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    void show(text, ...buttons).then((pick) => {
      if (pick === "Show Output") {
        this.outputs.show(r.id);
      } else if (pick === "Follow Up") {
        void this.followUp(r.id);
      }
    });
  }

  // ---- running ----

  private promptOptions(extra: PromptOptions): PromptOptions {
    const cfg = vscode.workspace.getConfiguration("claudeRelay");
    const mode = cfg.get<string>("permissionMode", "");
    const cwd = workspaceCwd();
    return {
      keep_alive: true, // so "Follow Up" can continue the conversation in the same process
      approvals: cfg.get<boolean>("approvals", true),
      ...((PERMISSION_MODES as readonly string[]).includes(mode) && {
        permission_mode: mode as PromptOptions["permission_mode"],
      }),
      ...(cwd !== undefined && { cwd }),
      ...extra,
    };
  }

  /** Starts a background run of prompt; the run is listed and its output opened at once. */
  async startRun(prompt: string, extra: PromptOptions = {}, sessionId?: string): Promise<void> {
    const runId = randomUUID();
    const options = this.promptOptions(extra);
    this.runsView.reveal(this.model.add(runId, prompt, true, sessionId));
    this.cwds.set(runId, options.cwd);
    this.outputs.append(runId, [`> ${prompt}`, ...(extra.resume ? [`· resuming conversation ${extra.resume}`] : []), ""]);
    this.outputs.show(runId);
    const handle = this.helper
      .get()
      .then((client) => client.prompt(prompt, options, { runId, ...(sessionId !== undefined && { sessionId }) }));
    this.handles.set(runId, handle);
    try {
      await handle;
    } catch (err) {
      this.helper.noteFailure(err);
      this.handles.delete(runId);
      const msg = (err as Error).message;
      const change = this.model.fail(runId, msg);
      if (change?.endLine) {
        this.outputs.append(runId, [change.endLine]);
      }
      void this.showError(`Claude Relay: the run of "${summarize(prompt, 50)}" did not start: ${msg}`);
    }
  }

  private async showError(message: string): Promise<void> {
    const pick = await vscode.window.showErrorMessage(message, "Show Log", "Open Settings");
    if (pick === "Show Log") {
      this.log.show(true);
    } else if (pick === "Open Settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", "claudeRelay");
    }
  }

  /** "Claude Relay: Run Prompt in Background": asks for the prompt at once. */
  async runPrompt(): Promise<void> {
    const prompt = await vscode.window.showInputBox({
      title: "Claude Relay: Run Prompt in Background",
      prompt: "What should Claude do? Enter starts a background run.",
      placeHolder: "e.g. run the tests and fix what fails",
      ignoreFocusOut: true,
    });
    if (prompt === undefined || prompt.trim() === "") {
      return;
    }
    await this.startRun(prompt);
  }

  /** "Claude Relay: Run in Terminal": an integrated terminal running `claude-relay terminal`. */
  async runInTerminal(): Promise<void> {
    const prompt = await vscode.window.showInputBox({
      title: "Claude Relay: Run in Terminal",
      prompt: "What should Claude do? Enter opens a terminal with Claude Code working on it.",
      ignoreFocusOut: true,
    });
    if (prompt === undefined || prompt.trim() === "") {
      return;
    }
    try {
      const client = await this.helper.get();
      const cwd = workspaceCwd();
      const t = await client.terminalCommand(prompt, cwd !== undefined ? { cwd } : {});
      const [shellPath, ...shellArgs] = t.argv;
      if (!shellPath) {
        throw new Error("the helper's terminal_command has an empty argv");
      }
      const term = vscode.window.createTerminal({
        name: `Claude Relay: ${summarize(prompt, 30)}`,
        shellPath,
        shellArgs,
        ...(t.cwd !== undefined && { cwd: t.cwd }),
        ...(t.env !== undefined && { env: t.env }),
        iconPath: new vscode.ThemeIcon("terminal"),
      });
      term.show();
    } catch (err) {
      this.helper.noteFailure(err);
      void this.showError(`Claude Relay: Run in Terminal failed: ${(err as Error).message}`);
    }
  }

  /** The run an action applies to: the argument, the only candidate, or a pick. */
  private async pickRun(arg: RunArg, accept: (r: RunRecord) => boolean, what: string): Promise<RunRecord | undefined> {
    const id = typeof arg === "string" ? arg : arg?.id;
    if (id !== undefined) {
      const r = this.model.get(id);
      if (r && accept(r)) {
        return r;
      }
      void vscode.window.showInformationMessage(
        `Claude Relay: run ${shortId(id)} cannot ${what} now (it is ${r ? STATUS_TEXT[statusOf(r)] : "gone"}).`,
      );
      return undefined;
    }
    const candidates = this.model.list().filter(accept);
    if (candidates.length === 0) {
      void vscode.window.showInformationMessage(
        `Claude Relay: no run to ${what}. Start one with "Claude Relay: Run Prompt in Background".`,
      );
      return undefined;
    }
    if (candidates.length === 1) {
      return candidates[0];
    }
    const picked = await vscode.window.showQuickPick(
      candidates.map((r) => ({
        label: summarize(r.prompt) || `run ${shortId(r.id)}`,
        description: [STATUS_TEXT[statusOf(r)], formatCost(r.costUsd)].filter((p) => p !== "").join(" · "),
        detail: `run ${r.id}`,
        run: r,
      })),
      { title: `Claude Relay: which run to ${what}?`, matchOnDetail: true },
    );
    return picked?.run;
  }

  private async act(r: RunRecord, verb: string, fn: (run: Run) => Promise<void>): Promise<boolean> {
    const handle = this.handles.get(r.id);
    if (!handle) {
      void vscode.window.showInformationMessage(`Claude Relay: run ${shortId(r.id)} has ended; it cannot ${verb}.`);
      return false;
    }
    try {
      await fn(await handle);
      return true;
    } catch (err) {
      this.helper.noteFailure(err);
      void vscode.window.showErrorMessage(`Claude Relay: could not ${verb} run ${shortId(r.id)}: ${(err as Error).message}`);
      return false;
    }
  }

  /** "Claude Relay: Follow Up": the next message into a live run. */
  async followUp(arg?: RunArg): Promise<void> {
    const r = await this.pickRun(arg, isLive, "follow up");
    if (!r) {
      return;
    }
    const prompt = await vscode.window.showInputBox({
      title: `Claude Relay: Follow Up — ${summarize(r.prompt, 40)}`,
      prompt: r.turnActive
        ? "A turn is still running: this message is queued behind it. Enter sends it."
        : "Enter sends it to the same conversation.",
      ignoreFocusOut: true,
    });
    if (prompt === undefined || prompt.trim() === "") {
      return;
    }
    this.outputs.append(r.id, [`> ${prompt}`, ""]);
    this.outputs.show(r.id);
    if (await this.act(r, "take a follow-up", (run) => run.send(prompt))) {
      this.model.turnSent(r.id);
    }
  }

  /** "Claude Relay: Interrupt": stops the running turn; the run stays for a follow-up. */
  async interrupt(arg?: RunArg): Promise<void> {
    const r = await this.pickRun(arg, (x) => isLive(x) && x.turnActive, "interrupt");
    if (r && (await this.act(r, "be interrupted", (run) => run.interrupt()))) {
      this.outputs.append(r.id, ["· interrupted"]);
    }
  }

  /** "Claude Relay: Cancel Run": stops the run and everything it started. */
  async cancelRun(arg?: RunArg): Promise<void> {
    const r = await this.pickRun(arg, isLive, "cancel");
    if (r) {
      await this.act(r, "be cancelled", (run) => run.cancel());
    }
  }

  /** "Claude Relay: End Run": closes a live run after its turn. */
  async endRun(arg?: RunArg): Promise<void> {
    const r = await this.pickRun(arg, isLive, "end");
    if (r) {
      await this.act(r, "end", (run) => run.end());
    }
  }

  // ---- approvals ----

  private async answer(e: ApprovalRequestedEvent, a: Answer): Promise<void> {
    const runId = e.run_id ?? "";
    const client = this.helper.peek();
    if (!client) {
      throw new Error("the helper is not running");
    }
    await client.approve(e.approval_id, a.decision, {
      runId,
      ...(a.reason !== undefined && { reason: a.reason }),
      ...(a.updatedInput !== undefined && { updatedInput: a.updatedInput }),
      ...(a.answers !== undefined && { answers: a.answers }),
    });
    if (this.model.resolveApproval(runId, e.approval_id)) {
      this.outputs.append(runId, [a.note]);
    }
  }

  /** Asks again every approval still waiting (of one run, or all). */
  showApprovals(runId?: string): void {
    let asked = 0;
    for (const r of this.model.list()) {
      if (runId !== undefined && r.id !== runId) {
        continue;
      }
      for (const e of r.pending.values()) {
        this.approvals.ask(e);
        asked++;
      }
    }
    if (asked === 0 && runId === undefined) {
      void vscode.window.showInformationMessage("Claude Relay: no approval is waiting.");
    }
  }

  /** A click on a run in the Runs view: its output, and its waiting approvals again. */
  openRun(arg?: RunArg): void {
    const id = typeof arg === "string" ? arg : arg?.id;
    if (id === undefined || !this.model.get(id)) {
      return;
    }
    this.outputs.show(id);
    this.showApprovals(id);
  }

  clearFinished(): void {
    const gone = this.model.clearEnded();
    this.outputs.forget(gone);
    for (const id of gone) {
      this.cwds.delete(id);
      this.lastInit.delete(id);
    }
  }

  // ---- backend ----

  private async backend(): Promise<{ backend: string; dashboard: string } | undefined> {
    try {
      const ready = (await this.helper.get()).ready;
      return { backend: ready.backend ?? "", dashboard: ready.dashboard ?? "" };
    } catch (err) {
      void this.showError((err as Error).message);
      return undefined;
    }
  }

  /** "Claude Relay: Open Dashboard". */
  async openDashboard(): Promise<void> {
    const b = await this.backend();
    if (!b) {
      return;
    }
    const url = b.dashboard || b.backend;
    if (url === "") {
      void vscode.window.showInformationMessage(
        "Claude Relay: the helper reports no dashboard: set claudeRelay.backendUrl to a claude-relay serve, or leave it empty for the embedded default.",
      );
      return;
    }
    await vscode.env.openExternal(vscode.Uri.parse(url));
  }

  /** "Claude Relay: Resume Conversation…": the workspace's recent conversations from the backend. */
  async resume(): Promise<void> {
    type Item = vscode.QuickPickItem & { conversation: Conversation };
    const pick = vscode.window.createQuickPick<Item>();
    pick.title = "Claude Relay: Resume Conversation…";
    pick.placeholder = "Loading the workspace's recent conversations from the backend…";
    pick.busy = true;
    pick.matchOnDescription = true;
    pick.matchOnDetail = true;
    pick.ignoreFocusOut = true;
    pick.show();
    const chosen = new Promise<Conversation | undefined>((resolve) => {
      pick.onDidAccept(() => resolve(pick.selectedItems[0]?.conversation));
      pick.onDidHide(() => resolve(undefined));
    });
    const abort = new AbortController();
    const hidden = pick.onDidHide(() => abort.abort());
    try {
      const b = await this.backend();
      if (!b) {
        pick.hide();
        return;
      }
      if (b.backend === "") {
        pick.hide();
        void vscode.window.showInformationMessage(
          "Claude Relay: no backend to list conversations from (the helper reports none). Set claudeRelay.backendUrl, or leave it empty for the embedded default.",
        );
        return;
      }
      const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
      let found: Conversation[];
      try {
        found = await recentConversations({
          backend: b.backend,
          token: await this.helper.backendToken(b.backend),
          folders,
          fetch,
          signal: abort.signal,
        });
      } catch (err) {
        if (abort.signal.aborted) {
          return;
        }
        pick.hide();
        const msg = err instanceof BackendError ? err.message : `Listing conversations failed: ${(err as Error).message}`;
        void vscode.window.showErrorMessage(`Claude Relay: ${msg}`);
        return;
      }
      pick.busy = false;
      if (found.length === 0) {
        pick.placeholder = `No conversations of this workspace at ${b.backend} yet: run a prompt first (Escape closes this).`;
        void vscode.window.showInformationMessage(
          `Claude Relay: the backend at ${b.backend} has no conversations started in this workspace's folders yet.`,
        );
        return;
      }
      pick.placeholder = "Pick a conversation to continue";
      pick.items = found.map((c) => ({
        label: summarize(c.prompt) || c.conversationId,
        description: describeConversation(c),
        detail: `${c.updatedAt ? new Date(c.updatedAt).toLocaleString() : ""} · conversation ${c.conversationId}`,
        conversation: c,
      }));
      const c = await chosen;
      pick.hide();
      if (!c) {
        return;
      }
      const prompt = await vscode.window.showInputBox({
        title: `Claude Relay: continue “${summarize(c.prompt, 40) || c.conversationId}”`,
        prompt: "Enter runs this in the background, in that conversation.",
        ignoreFocusOut: true,
      });
      if (prompt === undefined || prompt.trim() === "") {
        return;
      }
      await this.startRun(prompt, { resume: c.conversationId }, c.sessionId);
    } finally {
      hidden.dispose();
      pick.dispose();
    }
  }

  /** "Claude Relay: Set Backend Token": kept in SecretStorage, passed to the helper as its env. */
  async setBackendToken(): Promise<void> {
    const token = await vscode.window.showInputBox({
      title: "Claude Relay: Set Backend Token",
      prompt: "The Bearer token of your claude-relay backend (kept in the editor's secret storage). Empty removes it.",
      password: true,
      ignoreFocusOut: true,
    });
    if (token === undefined) {
      return;
    }
    if (token.trim() === "") {
      await this.ctx.secrets.delete(TOKEN_SECRET);
    } else {
      await this.ctx.secrets.store(TOKEN_SECRET, token.trim());
    }
    await this.offerRestart(token.trim() === "" ? "The backend token was removed." : "The backend token was saved.");
  }

  /** Settings that the helper reads at start changed: restart it now if nothing runs, else ask. */
  async offerRestart(what: string): Promise<void> {
    if (!this.helper.requested) {
      return; // not started yet: it starts with these settings when first needed
    }
    const live = this.model.list().filter(isLive).length;
    if (live === 0) {
      await this.restartHelper();
      return;
    }
    const pick = await vscode.window.showInformationMessage(
      `Claude Relay: ${what} The helper uses it once restarted, which cancels ${live} live ${live === 1 ? "run" : "runs"}.`,
      "Restart Now",
      "Later",
    );
    if (pick === "Restart Now") {
      await this.restartHelper();
    }
  }

  async restartHelper(): Promise<void> {
    for (const r of this.model.list()) {
      const change = this.model.fail(r.id, "the helper was restarted");
      if (change?.endLine) {
        this.outputs.append(r.id, [change.endLine]);
      }
    }
    this.handles.clear();
    try {
      await this.helper.restart();
    } catch (err) {
      void this.showError((err as Error).message);
    }
  }

  dispose(): void {
    this.approvals.dispose();
    this.handles.clear();
  }
}
