// Package e2e holds the end-to-end test of the VS Code extension: the .vsix
// `make vsix` builds, installed into code-server (VS Code's workbench served
// over HTTP) and driven in headless Chromium by test/e2e/drive.mjs, against
// the real Claude CLI on the scripted Messages API. It has no code outside
// its tests; `make vscode-e2e-deps` installs what the test needs.
package e2e
