// The Runs view: one item per run with its live status, cost and tokens.
import * as vscode from "vscode";
import { formatCost, formatTokens, shortId, summarize } from "./format";
import {
  contextValueOf,
  describeRun,
  isLive,
  STATUS_TEXT,
  statusOf,
  type RunRecord,
  type RunsModel,
  type RunStatus,
} from "./runs";

export const RUNS_VIEW_ID = "claudeRelay.runs";

const ICONS: Readonly<Record<RunStatus, [string, string | undefined]>> = {
  starting: ["sync~spin", undefined],
  running: ["sync~spin", undefined],
  waiting: ["bell-dot", "notificationsWarningIcon.foreground"],
  completed: ["pass", "testing.iconPassed"],
  failed: ["error", "testing.iconFailed"],
  cancelled: ["circle-slash", undefined],
};

class RunsTree implements vscode.TreeDataProvider<RunRecord> {
  private readonly changed = new vscode.EventEmitter<RunRecord | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly model: RunsModel) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  getChildren(element?: RunRecord): RunRecord[] {
    return element ? [] : this.model.list();
  }

  /** Runs are top-level items (reveal() needs this). */
  getParent(): undefined {
    return undefined;
  }

  getTreeItem(r: RunRecord): vscode.TreeItem {
    const item = new vscode.TreeItem(summarize(r.prompt) || `run ${shortId(r.id)}`);
    item.id = r.id;
    item.description = describeRun(r);
    const status = statusOf(r);
    const [icon, color] = ICONS[status];
    item.iconPath = new vscode.ThemeIcon(icon, color ? new vscode.ThemeColor(color) : undefined);
    item.contextValue = contextValueOf(r);
    item.tooltip = tooltipOf(r);
    item.accessibilityInformation = { label: `${summarize(r.prompt)}: ${describeRun(r)}` };
    item.command = { command: "claudeRelay.openRun", title: "Open Run", arguments: [r.id] };
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }
}

function tooltipOf(r: RunRecord): vscode.MarkdownString {
  const md = new vscode.MarkdownString(undefined, true);
  md.appendText(r.prompt || "(no prompt)");
  md.appendMarkdown("\n\n");
  const rows: [string, string][] = [
    ["Status", STATUS_TEXT[statusOf(r)] + (isLive(r) && !r.turnActive ? " (takes a follow-up)" : "")],
    ["Cost", formatCost(r.costUsd) || "unknown yet"],
    ["Tokens", formatTokens(r.usage) || "unknown yet"],
    ["Turns", String(r.turns)],
    ["Run", r.id],
    ["Session", r.sessionId ?? ""],
    ["Conversation", r.conversationId ?? ""],
  ];
  for (const [k, v] of rows) {
    if (v !== "") {
      md.appendMarkdown(`**${k}:** `);
      md.appendText(v);
      md.appendMarkdown("  \n");
    }
  }
  if (r.lastEnd) {
    md.appendText(r.lastEnd);
  }
  return md;
}

export interface RunsView extends vscode.Disposable {
  /** Shows the run in the view (expanding the view if it is collapsed) without taking the focus. */
  reveal(r: RunRecord): void;
}

/** Registers the tree and keeps it, and its badge, in step with the model. */
export function registerRunsView(model: RunsModel): RunsView {
  const tree = new RunsTree(model);
  const view = vscode.window.createTreeView(RUNS_VIEW_ID, { treeDataProvider: tree, showCollapseAll: false });
  const sub = model.onChange(() => {
    tree.refresh();
    const { approvals } = model.counts();
    view.badge =
      approvals > 0
        ? { value: approvals, tooltip: `${approvals} ${approvals === 1 ? "approval" : "approvals"} waiting` }
        : undefined;
  });
  const all = vscode.Disposable.from(view, tree, sub);
  return {
    reveal: (r) => {
      // A run just started: its item exists once the tree has refreshed.
      view.reveal(r, { select: false, focus: false }).then(undefined, () => undefined);
    },
    dispose: () => all.dispose(),
  };
}
