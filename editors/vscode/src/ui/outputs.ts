// A run's output: one OutputChannel per run, "Claude Relay: <short run id>".
//
// Why an OutputChannel and not a webview: the output is a stream of text
// (the assistant's words, tool calls, trimmed results, the end line); an
// OutputChannel shows that with the editor's own font, search, copy and
// word wrap, needs no HTML, CSP or message passing, keeps working when the
// panel is hidden, and renders the same in desktop VS Code, its forks and
// code-server's web workbench (where it is plain DOM the end-to-end tests
// can read). A webview would add a second UI stack for no gain here.
import * as vscode from "vscode";
import { shortId } from "./format";

export class RunOutputs implements vscode.Disposable {
  private readonly channels = new Map<string, vscode.OutputChannel>();

  /** The run's channel, created on first use. */
  channel(runId: string): vscode.OutputChannel {
    let ch = this.channels.get(runId);
    if (!ch) {
      ch = vscode.window.createOutputChannel(`Claude Relay: ${shortId(runId)}`);
      this.channels.set(runId, ch);
    }
    return ch;
  }

  append(runId: string, lines: readonly string[]): void {
    if (lines.length === 0) {
      return;
    }
    const ch = this.channel(runId);
    for (const line of lines) {
      ch.appendLine(line);
    }
  }

  /** Brings the run's output to the front without taking the focus from the editor. */
  show(runId: string): void {
    this.channel(runId).show(true);
  }

  /** Drops the channels of runs no longer listed. */
  forget(runIds: readonly string[]): void {
    for (const id of runIds) {
      this.channels.get(id)?.dispose();
      this.channels.delete(id);
    }
  }

  dispose(): void {
    for (const ch of this.channels.values()) {
      ch.dispose();
    }
    this.channels.clear();
  }
}
