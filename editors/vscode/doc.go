// Package vscode holds the VS Code extension and its TypeScript client (a
// Node project: see package.json). The package has no Go code of its own; its
// test runs the TypeScript type-check and tests, so that `go test ./...` (and
// with it `make test`) covers them.
package vscode
