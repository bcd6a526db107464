// Command claude-relay-server is claude-relay with the reference backend
// linked in: claude-relay runs it for `serve` and for the embedded default
// backend, so that the helper and hook processes stay light. Install it
// beside claude-relay. See README.md.
package main

import (
	"os"

	"github.com/claude-relay/claude-relay/internal/cli"
	"github.com/claude-relay/claude-relay/internal/server"
)

func main() {
	os.Exit(cli.ServerMain(os.Args[1:], server.InProcess{}))
}
