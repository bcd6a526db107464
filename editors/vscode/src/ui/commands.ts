// The command ids (contributed in package.json) and what each runs.
import * as vscode from "vscode";
import type { Controller, RunArg } from "./controller";

export function registerCommands(c: Controller): vscode.Disposable[] {
  const reg = (id: string, fn: (...args: never[]) => unknown): vscode.Disposable =>
    vscode.commands.registerCommand(id, fn as (...args: unknown[]) => unknown);
  return [
    reg("claudeRelay.runPrompt", () => c.runPrompt()),
    reg("claudeRelay.runInTerminal", () => c.runInTerminal()),
    reg("claudeRelay.followUp", (arg: RunArg) => c.followUp(arg)),
    reg("claudeRelay.interrupt", (arg: RunArg) => c.interrupt(arg)),
    reg("claudeRelay.cancelRun", (arg: RunArg) => c.cancelRun(arg)),
    reg("claudeRelay.endRun", (arg: RunArg) => c.endRun(arg)),
    reg("claudeRelay.resume", () => c.resume()),
    reg("claudeRelay.openDashboard", () => c.openDashboard()),
    reg("claudeRelay.setBackendToken", () => c.setBackendToken()),
    reg("claudeRelay.showApprovals", () => c.showApprovals()),
    reg("claudeRelay.openRun", (arg: RunArg) => c.openRun(arg)),
    reg("claudeRelay.clearFinished", () => c.clearFinished()),
    reg("claudeRelay.restartHelper", () => c.restartHelper()),
  ];
}
