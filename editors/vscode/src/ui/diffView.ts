// Show Diff for a file tool's approval: vscode.diff between the file as it
// is and the content the tool would leave, both as documents (the proposed
// side is a read-only virtual document of our own scheme).
import * as path from "node:path";
import * as vscode from "vscode";
import { proposedContent } from "./approvalChoices";
import type { ApprovalRequestedEvent as ApprovalEvent } from "../client";

export const PROPOSED_SCHEME = "claude-relay-proposed";

export class ProposedDiffs implements vscode.TextDocumentContentProvider, vscode.Disposable {
  /** Virtual document texts by uri string; dropped when their approval is answered. */
  private readonly docs = new Map<string, string>();
  private readonly byApproval = new Map<string, string[]>();
  private readonly registration: vscode.Disposable;

  constructor() {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, this);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.docs.get(uri.toString()) ?? "";
  }

  private virtual(approvalId: string, file: string, side: string, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: file, query: `${approvalId}.${side}` });
    this.docs.set(uri.toString(), text);
    this.byApproval.set(approvalId, [...(this.byApproval.get(approvalId) ?? []), uri.toString()]);
    return uri;
  }

  /** Opens the diff; false (after saying why) when it cannot be built. */
  async show(e: ApprovalEvent, cwd: string | undefined): Promise<boolean> {
    const input = e.input ?? {};
    const raw = typeof input.file_path === "string" ? input.file_path : "";
    if (raw === "") {
      void vscode.window.showWarningMessage(
        `Claude Relay: the ${e.tool_name} request names no file_path, so there is no diff to show.`,
      );
      return false;
    }
    const file = path.isAbsolute(raw) ? raw : path.resolve(cwd ?? process.cwd(), raw);
    const fileUri = vscode.Uri.file(file);
    let current = "";
    let exists = true;
    try {
      current = new TextDecoder().decode(await vscode.workspace.fs.readFile(fileUri));
    } catch {
      exists = false;
    }
    const proposed = proposedContent(e.tool_name, input, current);
    if (proposed === undefined) {
      void vscode.window.showWarningMessage(
        `Claude Relay: cannot show the ${e.tool_name} diff for ${file}: the text it replaces is not in the file as it is now. Decide from the request, or Deny.`,
      );
      return false;
    }
    // The left side is the file itself when it exists, so the diff shows
    // what is on disk (or in a dirty editor) now.
    const left = exists ? fileUri : this.virtual(e.approval_id, file, "empty", "");
    const right = this.virtual(e.approval_id, file, "proposed", proposed);
    const title = `${path.basename(file)} ${exists ? "" : "(new file) "}↔ proposed by Claude (${e.tool_name})`;
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true });
    return true;
  }

  /** The approval was answered or withdrawn: its documents are not needed. */
  forget(approvalId: string): void {
    for (const key of this.byApproval.get(approvalId) ?? []) {
      this.docs.delete(key);
    }
    this.byApproval.delete(approvalId);
  }

  dispose(): void {
    this.registration.dispose();
    this.docs.clear();
    this.byApproval.clear();
  }
}
