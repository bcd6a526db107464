// Claude Relay for VS Code: background and terminal runs of Claude Code
// through the claude-relay helper (CONTRACT §9). One activate; everything
// it creates is in context.subscriptions, and nothing lives in globals.
//
// Activation (by a command or the Runs view; package.json declares no
// activation events) starts no process: the helper, and with it the CLI
// discovery that runs `npm root -g`, starts with the first command that
// needs it, so a window where Claude Relay is not used pays nothing.
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
  // helper can report anything (it starts on the first command that needs it).
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
}

export function deactivate(): void {
  // Everything is released through context.subscriptions.
}
