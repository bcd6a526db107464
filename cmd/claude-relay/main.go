// Command claude-relay runs the Claude Code CLI for an editor and forwards
// everything it does to a backend. The reference backend is in
// claude-relay-server, which it runs for `serve` and the embedded default.
// See README.md.
package main

import (
	"os"

	"github.com/claude-relay/claude-relay/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
