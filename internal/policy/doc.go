// Package policy is the backend's central tool policy (serve.policy): an
// ordered list of rules in the Claude CLI's own permission-rule syntax, each
// with an effect (allow, ask, deny), an optional approver (dashboard) and a
// reason. The first rule that matches a tool call decides it.
//
// The helper enforces it through the CLI's PreToolUse hook (package
// executor), which the CLI consults before its permission modes, so a deny
// holds in acceptEdits and bypassPermissions too.
//
// # Rule syntax (the CLI's, as documented for its settings)
//
//   - A bare tool name (Bash, WebFetch, Read, mcp__server__tool) matches
//     every call of that tool; Tool(*) is the same. mcp__server (or
//     mcp__server__*) matches every tool of that MCP server.
//   - Bash(spec): spec is an exact command, a legacy prefix "npm run:*"
//     (the prefix alone or followed by a space and anything), or a pattern
//     where * matches any characters, spaces included; a single trailing
//     " *" also matches the command without arguments ("git *" matches
//     "git" but not "gitk"). A command joined with &&, ||, ;, | or a newline
//     is checked part by part: a deny or ask rule matches when any part
//     does, an allow rule only when every part does, so "safe && rm -rf /"
//     is never allowed by Bash(safe *), and never escapes Bash(rm *).
//   - Read(path), Edit(path), Write(path), NotebookEdit(path): gitignore-
//     style patterns. "//abs" is an absolute path, "~/p" is under the
//     home directory, "/p" is under the project root (the run's cwd, as
//     the settings file's directory is for the CLI), "p" or "./p" under the
//     run's cwd; a pattern without a slash but at its end matches at any
//     depth (".env", "*.pem"). * stays within one path segment, ** spans
//     any number. Edit(...) covers every tool that edits files (Edit,
//     MultiEdit, Write, NotebookEdit); Read(...) covers Read and, like the
//     CLI's best effort, Grep, Glob and LS (on their path).
//   - WebFetch(domain:host): the URL's host is host; "*.example.com" takes
//     its subdomains, "domain:*" every host.
//   - Any other Tool(spec) matches when the tool's primary input (command,
//     file_path, path, url, pattern) equals spec, * being a wildcard.
//
// The backend serves the policy at GET /api/policy; Client fetches it with
// the helper's token, keeps it for a TTL, and writes the last one it got to
// the data dir so that a start with the backend down still enforces it.
package policy
