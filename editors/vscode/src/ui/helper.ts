// The claude-relay helper of this window: started by the first command
// that needs it (never at activation: a window that does not use Claude
// Relay runs no helper and no CLI discovery), restarted on request, its
// stderr in the "Claude Relay" output channel.
import * as fs from "node:fs";
import * as os from "node:os";
import * as vscode from "vscode";
import { RelayClient, type Event, type RestartInfo } from "../client";
import { embeddedTokenFile, ENV_BACKEND_TOKEN, helperEnv, resolveHelper } from "./helperConfig";
import type { HelperState } from "./runs";

/** The SecretStorage key of the backend token (never in settings.json). */
export const TOKEN_SECRET = "claudeRelay.backendToken";

export interface HelperHooks {
  onEvent(e: Event): void;
  onRestart(info: RestartInfo): void;
  onState(state: HelperState): void;
}

function isExecutable(file: string): boolean {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) {
      return false;
    }
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The folder runs start in: the active editor's workspace folder, else the first one. */
export function workspaceCwd(): string | undefined {
  const active = vscode.window.activeTextEditor?.document.uri;
  const folder = (active && vscode.workspace.getWorkspaceFolder(active)) ?? vscode.workspace.workspaceFolders?.[0];
  return folder?.uri.scheme === "file" ? folder.uri.fsPath : undefined;
}

export class Helper implements vscode.Disposable {
  private current: Promise<RelayClient> | undefined;
  private client: RelayClient | undefined;
  private subs: vscode.Disposable[] = [];
  private env: NodeJS.ProcessEnv = process.env;
  private disposed = false;
  private wanted = false;

  constructor(
    private readonly ctx: vscode.ExtensionContext,
    private readonly log: vscode.OutputChannel,
    private readonly hooks: HelperHooks,
  ) {}

  /** The running client, started on first use; rejects with what to do when it cannot start. */
  get(): Promise<RelayClient> {
    if (this.disposed) {
      return Promise.reject(new Error("Claude Relay is shutting down"));
    }
    this.wanted = true;
    this.current ??= this.start();
    return this.current;
  }

  /**
   * Whether anything has needed the helper yet. Until then a settings change
   * has nothing to restart: the first start reads the settings of then.
   */
  get requested(): boolean {
    return this.wanted;
  }

  /** The client if it is up now (no start). */
  peek(): RelayClient | undefined {
    return this.client;
  }

  private async start(): Promise<RelayClient> {
    this.hooks.onState("starting");
    try {
      const cfg = vscode.workspace.getConfiguration("claudeRelay");
      const resolved = resolveHelper({
        setting: cfg.get<string>("path", ""),
        pathEnv: process.env.PATH,
        extensionPath: this.ctx.extensionPath,
        home: os.homedir(),
        isExecutable,
        platform: process.platform,
      });
      if ("error" in resolved) {
        // The extension host's PATH is not always the shell's (code-server
        // takes it from a login shell): show the one searched.
        this.log.appendLine(`PATH searched: ${process.env.PATH ?? "(unset)"}`);
        throw new Error(resolved.error);
      }
      const token = await this.ctx.secrets.get(TOKEN_SECRET);
      const env = helperEnv(process.env, { backendUrl: cfg.get<string>("backendUrl", "") });
      const cwd = workspaceCwd() ?? os.homedir();
      this.log.appendLine(`Starting ${resolved.path} extension (found via ${resolved.source}) in ${cwd}`);
      const client = await RelayClient.start({
        path: resolved.path,
        env,
        ...(token !== undefined && { token }),
        cwd,
        onStderr: (line) => this.log.appendLine(line),
      });
      if (this.disposed) {
        client.dispose();
        throw new Error("Claude Relay is shutting down");
      }
      this.env = env;
      this.client = client;
      this.subs = [
        client.onEvent((e) => this.hooks.onEvent(e)),
        client.onRestart((info) => {
          this.log.appendLine(
            `The helper exited (${info.signal ? `signal ${info.signal}` : `status ${info.code ?? "unknown"}`}) and was restarted (restart ${info.restarts}).`,
          );
          this.describeReady(client);
          this.hooks.onRestart(info);
        }),
      ];
      this.describeReady(client);
      this.hooks.onState("ready");
      return client;
    } catch (err) {
      this.current = undefined; // the next get() tries again (after a settings fix)
      this.hooks.onState("failed");
      const msg = (err as Error).message;
      this.log.appendLine(`The helper did not start: ${msg}`);
      throw new Error(`Claude Relay: the claude-relay helper did not start: ${msg}`);
    }
  }

  private describeReady(client: RelayClient): void {
    const r = client.ready;
    const cli = r.cli_error ? `no Claude CLI (${r.cli_error})` : `CLI ${r.cli_path ?? "?"} ${r.cli_version ?? ""}`.trim();
    this.log.appendLine(
      `Ready: claude-relay ${r.version ?? "?"} (protocol ${r.protocol}, pid ${r.pid}); ${cli}; backend ${r.backend || "(none)"}; dashboard ${r.dashboard || "(none)"}`,
    );
    if (r.cli_error) {
      void vscode.window.showWarningMessage(`Claude Relay: runs will fail: ${r.cli_error}`);
    }
  }

  /**
   * A command failed because the helper is gone for good (the client gave
   * up restarting it): drop the client so the next command starts a fresh one.
   */
  noteFailure(err: unknown): void {
    const code = (err as { code?: unknown }).code;
    if ((code === "helper_exited" || code === "disposed") && this.client) {
      this.drop();
      this.hooks.onState("failed");
    }
  }

  private drop(): RelayClient | undefined {
    const old = this.client;
    for (const s of this.subs) {
      s.dispose();
    }
    this.subs = [];
    this.client = undefined;
    this.current = undefined;
    return old;
  }

  /** Stops the helper (its runs are cancelled) and starts a new one with the settings of now. */
  async restart(): Promise<RelayClient> {
    const pending = this.current;
    this.drop();
    const old = await pending?.catch(() => undefined);
    if (old) {
      this.log.appendLine("Stopping the helper to restart it.");
      try {
        await old.shutdown();
      } catch (err) {
        this.log.appendLine(`Stopping the helper: ${(err as Error).message}`);
      } finally {
        old.dispose();
      }
    }
    return this.get();
  }

  /**
   * The token for reading the backend: the one set with "Set Backend Token",
   * else the inherited CLAUDE_RELAY_BACKEND_TOKEN, else, for a backend on
   * this machine (the embedded default), the data dir's generated token.
   */
  async backendToken(backend: string): Promise<string | undefined> {
    const secret = await this.ctx.secrets.get(TOKEN_SECRET);
    if (secret) {
      return secret;
    }
    const inherited = this.env[ENV_BACKEND_TOKEN];
    if (inherited) {
      return inherited;
    }
    let host = "";
    try {
      host = new URL(backend).hostname;
    } catch {
      return undefined;
    }
    if (host !== "127.0.0.1" && host !== "localhost" && host !== "[::1]") {
      return undefined;
    }
    try {
      const text = await fs.promises.readFile(embeddedTokenFile(this.env, os.homedir()), "utf8");
      return text.trim() || undefined;
    } catch {
      return undefined;
    }
  }

  dispose(): void {
    this.disposed = true;
    const old = this.drop();
    // dispose() asks the helper to shut down (cancel runs, drain the
    // forwarder) and kills it if it is slow; nothing here can wait for it.
    old?.dispose();
  }
}
