// Where the helper binary is and what environment it gets. Pure: the file
// checks are passed in, so node's test runner covers every branch.
import * as path from "node:path";

/** The name of the helper on PATH and in the extension's bin/. */
export const HELPER_NAME = "claude-relay";

export interface ResolveInput {
  /** claudeRelay.path ("" when unset). */
  setting: string;
  /** PATH of the extension host. */
  pathEnv: string | undefined;
  /** The extension's install directory (its bin/ may hold a bundled helper). */
  extensionPath: string;
  home: string;
  isExecutable: (file: string) => boolean;
  /** Windows looks for claude-relay.exe. */
  platform?: NodeJS.Platform;
}

export type Resolved = { path: string; source: "setting" | "PATH" | "bundled" } | { error: string };

/**
 * claudeRelay.path, else claude-relay on PATH, else the binary bundled at
 * <extension>/bin/claude-relay (CONTRACT §9). The error says where it
 * looked and what to do.
 */
export function resolveHelper(input: ResolveInput): Resolved {
  const exe = input.platform === "win32" ? `${HELPER_NAME}.exe` : HELPER_NAME;
  const setting = input.setting.trim();
  if (setting !== "") {
    const p = expandHome(setting, input.home);
    if (input.isExecutable(p)) {
      return { path: p, source: "setting" };
    }
    return {
      error: `The setting claudeRelay.path is "${setting}", which is not an executable file: point it at the claude-relay binary, or clear it to use ${exe} from PATH.`,
    };
  }
  const dirs = (input.pathEnv ?? "").split(path.delimiter).filter((d) => d !== "");
  for (const dir of dirs) {
    const p = path.join(dir, exe);
    if (input.isExecutable(p)) {
      return { path: p, source: "PATH" };
    }
  }
  const bundled = path.join(input.extensionPath, "bin", exe);
  if (input.isExecutable(bundled)) {
    return { path: bundled, source: "bundled" };
  }
  return {
    error: `No claude-relay binary found: claudeRelay.path is not set, ${exe} is not on PATH, and the extension has no bundled ${bundled}. Set claudeRelay.path to the binary (make build puts it in bin/claude-relay).`,
  };
}

function expandHome(p: string, home: string): string {
  if (p === "~") {
    return home;
  }
  if (p.startsWith("~/")) {
    return path.join(home, p.slice(2));
  }
  return p;
}

/** Environment variables the helper reads for what the settings give (README "Configuration"). */
export const ENV_BACKEND_URL = "CLAUDE_RELAY_BACKEND_URL";
export const ENV_BACKEND_TOKEN = "CLAUDE_RELAY_BACKEND_TOKEN";

/**
 * The helper's environment: the extension host's, untouched (ANTHROPIC_*,
 * CLAUDE_RELAY_*, CLAUDE_CODE_* included), plus what the settings add. A
 * setting left empty leaves the inherited variable alone, so a user's own
 * CLAUDE_RELAY_BACKEND_URL still works. The token from SecretStorage is not
 * in it: the client hands it over through a pipe (HelperOptions.token).
 */
export function helperEnv(base: NodeJS.ProcessEnv, settings: { backendUrl?: string | undefined }): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  const url = settings.backendUrl?.trim() ?? "";
  if (url !== "") {
    env[ENV_BACKEND_URL] = url;
  }
  return env;
}

/**
 * The file holding the embedded default backend's generated token
 * (<data_dir>/serve.token), for reading the backend's session list when no
 * token was set.
 */
export function embeddedTokenFile(env: NodeJS.ProcessEnv, home: string): string {
  const dataDir = env.CLAUDE_RELAY_DATA_DIR?.trim();
  if (dataDir) {
    return path.join(dataDir, "serve.token");
  }
  const dataHome = env.XDG_DATA_HOME?.trim() || path.join(home, ".local", "share");
  return path.join(dataHome, "claude-relay", "serve.token");
}
