package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// Two helpers (two editor windows, or two test binaries on one machine) may
// each have a run of the same ID live: run IDs are the client's. The end of
// one used to stop every process on the machine marked with that ID, so the
// other helper's CLI and tool died with it and its run failed with "the
// Claude CLI exited without a result". That is how TestExtensionApprovals and
// TestExtensionConcurrentRuns (fixed run IDs) flaked when two `go test` runs
// of this package overlapped.
func TestExtensionSameRunIDInTwoHelpers(t *testing.T) {
	t.Parallel()
	// Shared by this test's two helpers, and no other test's: the processes
	// are looked up by it.
	runID := "same-" + uuid.NewString()
	isEnd := func(ev extension.Event) bool {
		return ev.RunID == runID && (ev.Event == extension.EventRunCompleted || ev.Event == extension.EventRunFailed || ev.Event == extension.EventRunCancelled)
	}

	slowCLI := realcli.RealCLI(t)
	slowAPI := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 3174", "description": "Wait a long time"}),
		mockapi.TextTurn("never"),
	})
	slowCwd := trustedDir(t, slowCLI)
	slow := startExtension(t, slowCwd, helperEnv(t, slowCLI, slowAPI))
	slow.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	slow.prompt(runID, "sess-slow", "wait", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: slowCwd, MaxTurns: 4}})
	waitSleeping(t, slow, runID, "3174")

	// Another helper, with its own HOME, runs a run of the same ID to its end
	// (and cleans up after it) while the first one's tool runs.
	quickCLI := realcli.RealCLI(t)
	quickAPI := mockapi.New(t, mockapi.Script{mockapi.TextTurn("quick done")})
	quickCwd := trustedDir(t, quickCLI)
	quick := startExtension(t, quickCwd, helperEnv(t, quickCLI, quickAPI))
	quick.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	quick.prompt(runID, "sess-quick", "hi", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: quickCwd, MaxTurns: 2}})
	if end := quick.waitEnd(runID); end.Event != extension.EventRunCompleted || end.Result.Stdout != "quick done" {
		t.Fatalf("the other helper's run: %s %+v", end.Event, end.Result)
	}
	quick.shutdownOK()

	if n := slow.count(isEnd); n != 0 {
		t.Fatalf("the first helper's run ended when the other helper's run of the same ID did:\n%s", slow.dump())
	}
	if !slices.ContainsFunc(runProcesses(runID), func(c string) bool { return strings.Contains(c, "sleep 3174") }) {
		t.Fatalf("the first helper's tool died with the other helper's run; processes of %s: %q", runID, runProcesses(runID))
	}
	slow.send(extension.Command{Action: extension.ActionCancel, RequestID: "stop", RunID: runID})
	if end := slow.waitEnd(runID); end.Event != extension.EventRunCancelled {
		t.Errorf("the first helper's run after its cancel: %s %+v", end.Event, end.Result)
	}
	slow.shutdownOK()
}
