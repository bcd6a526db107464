import assert from "node:assert/strict";
import { test } from "node:test";
import { embeddedTokenFile, helperEnv, resolveHelper } from "../../src/ui/helperConfig";

const base = { pathEnv: "/usr/bin:/opt/relay/bin", extensionPath: "/ext", home: "/home/u", platform: "linux" as const };

test("claudeRelay.path wins, with ~ expanded", () => {
  const r = resolveHelper({ ...base, setting: "~/bin/claude-relay", isExecutable: (f) => f === "/home/u/bin/claude-relay" });
  assert.deepEqual(r, { path: "/home/u/bin/claude-relay", source: "setting" });
});

test("a setting that is not executable is an error naming it, not a fallback", () => {
  const r = resolveHelper({ ...base, setting: "/nope", isExecutable: (f) => f === "/opt/relay/bin/claude-relay" });
  assert.ok("error" in r);
  assert.match(r.error, /claudeRelay\.path is "\/nope"/);
});

test("then PATH, in order, then the bundled binary", () => {
  assert.deepEqual(resolveHelper({ ...base, setting: "", isExecutable: (f) => f.endsWith("/claude-relay") }), {
    path: "/usr/bin/claude-relay",
    source: "PATH",
  });
  assert.deepEqual(resolveHelper({ ...base, setting: " ", isExecutable: (f) => f === "/ext/bin/claude-relay" }), {
    path: "/ext/bin/claude-relay",
    source: "bundled",
  });
  const none = resolveHelper({ ...base, setting: "", isExecutable: () => false });
  assert.ok("error" in none);
  assert.match(none.error, /Set claudeRelay\.path/);
  assert.match(none.error, /\/ext\/bin\/claude-relay/);
});

test("the helper's env keeps every inherited variable and adds the settings", () => {
  const inherited = {
    PATH: "/usr/bin",
    ANTHROPIC_API_KEY: "k",
    ANTHROPIC_BASE_URL: "http://127.0.0.1:1",
    CLAUDE_RELAY_DATA_DIR: "/d",
    CLAUDE_RELAY_BACKEND_URL: "http://inherited",
    CLAUDE_CODE_USE_BEDROCK: "1",
  };
  assert.deepEqual(helperEnv(inherited, {}), inherited);
  assert.deepEqual(helperEnv(inherited, { backendUrl: "  " }), inherited, "empty settings leave the inherited values");
  const env = helperEnv(inherited, { backendUrl: "https://relay.example" });
  assert.equal(env.CLAUDE_RELAY_BACKEND_URL, "https://relay.example");
  assert.equal(env.CLAUDE_RELAY_BACKEND_TOKEN, undefined, "the token travels through a pipe, not the environment");
  for (const [k, v] of Object.entries(inherited)) {
    if (k !== "CLAUDE_RELAY_BACKEND_URL") {
      assert.equal(env[k], v, k);
    }
  }
  assert.equal(inherited.CLAUDE_RELAY_BACKEND_URL, "http://inherited", "the input is not modified");
});

test("the embedded backend's token file follows the data dir", () => {
  assert.equal(embeddedTokenFile({}, "/home/u"), "/home/u/.local/share/claude-relay/serve.token");
  assert.equal(embeddedTokenFile({ XDG_DATA_HOME: "/x" }, "/home/u"), "/x/claude-relay/serve.token");
  assert.equal(embeddedTokenFile({ CLAUDE_RELAY_DATA_DIR: "/d", XDG_DATA_HOME: "/x" }, "/home/u"), "/d/serve.token");
});
