// Claude Relay for VS Code: background and terminal runs of Claude Code
// through the claude-relay helper (CONTRACT §9). One activate; everything
// it creates is in context.subscriptions, and nothing lives in globals.
import * as vscode from "vscode";
import { registerCommands } from "./ui/commands";
import { Controller } from "./ui/controller";
import { ProposedDiffs } from "./ui/diffView";
import { Helper } from "./ui/helper";
import { RunOutputs } from "./ui/outputs";
import { RunsModel } from "./ui/runs";
import { registerRunsView } from "./ui/runsView";
import { RelayStatusBar } from "./ui/statusBar";

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel("Claude Relay");
  const model = new RunsModel();
  const outputs = new RunOutputs();
  const diffs = new ProposedDiffs();
  const statusBar = new RelayStatusBar(model);
  // The controller needs the helper and the helper reports to the
  // controller; the hooks close over `controller`, which is set before the
  // helper can report anything (it starts below).
  let controller: Controller | undefined;
  const helper = new Helper(context, log, {
    onEvent: (e) => controller?.onEvent(e),
    onRestart: (info) => controller?.onRestart(info),
    onState: (s) => statusBar.setHelperState(s),
  });
  const runsView = registerRunsView(model);
  controller = new Controller(context, model, outputs, helper, log, diffs, runsView);

  context.subscriptions.push(
    log,
    outputs,
    diffs,
    statusBar,
    controller,
    runsView,
    ...registerCommands(controller),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("claudeRelay.path") || e.affectsConfiguration("claudeRelay.backendUrl")) {
        void controller?.offerRestart("The helper settings changed.");
      }
    }),
    // Its dispose() unsubscribes first, then asks the helper to shut down
    // (runs cancelled, forwarder drained) without waiting for it.
    helper,
  );

  // Start the helper now, in the background, so the first run does not wait
  // for it and the status bar tells early when it cannot start. A failure
  // is logged and shown by the command that needs the helper.
  helper.get().catch(() => undefined);
}

export function deactivate(): void {
  // Everything is released through context.subscriptions.
}
