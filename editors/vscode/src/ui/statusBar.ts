// The status bar item: how many runs are running and how many approvals
// wait; a click shows the Runs view.
import * as vscode from "vscode";
import { RUNS_VIEW_ID } from "./runsView";
import { statusBarText, type HelperState, type RunsModel } from "./runs";

export class RelayStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("claudeRelay.status", vscode.StatusBarAlignment.Left, 50);
  private helper: HelperState = "notStarted";
  private readonly sub: { dispose(): void };

  constructor(private readonly model: RunsModel) {
    this.item.name = "Claude Relay";
    this.item.command = `${RUNS_VIEW_ID}.focus`;
    this.sub = model.onChange(() => this.update());
    this.update();
    this.item.show();
  }

  setHelperState(state: HelperState): void {
    this.helper = state;
    this.update();
  }

  private update(): void {
    const counts = this.model.counts();
    this.item.text = statusBarText(counts, this.helper);
    this.item.tooltip =
      this.helper === "failed"
        ? 'The claude-relay helper is not running: see the "Claude Relay" output. Click to show the runs.'
        : this.helper === "notStarted"
          ? "Claude Relay: the helper starts with the first run. Click to show the runs."
          : "Claude Relay: click to show the runs";
    this.item.backgroundColor =
      counts.approvals > 0 || this.helper === "failed" ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  }

  dispose(): void {
    this.sub.dispose();
    this.item.dispose();
  }
}
