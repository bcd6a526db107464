package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/budget"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/pgtest"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// budgetScript costs more than $0.01 in its first response (5000 input
// tokens at the CLI's list price: $0.022), which asks for a tool, so a run
// capped at $0.01 is stopped by the CLI's own budget before a second one.
func budgetScript() mockapi.Script {
	big := mockapi.Usage{InputTokens: 5000, OutputTokens: 100}
	return mockapi.Script{
		{Blocks: []mockapi.Block{mockapi.ToolUse("Bash", map[string]any{"command": "echo budget"})}, Usage: big},
		{Blocks: []mockapi.Block{mockapi.Text("done")}, Usage: big},
	}
}

// TestBudgetAcrossMachines (issue 26): a $0.01 daily cap on a project's
// basename, one backend, two helpers with their own data dirs (two
// machines, the project checked out at a different path on each). The
// first run gets the remaining budget as --max-budget-usd and the CLI stops
// it with its own accounting; the second machine's run is then refused
// before the CLI starts, naming the cap, the spend and the reset, as an
// `error` with code budget_exhausted in the extension protocol and exit
// status 3 from `run`.
func TestBudgetAcrossMachines(t *testing.T) {
	t.Parallel()
	testBudgetAcrossMachines(t, "")
}

// TestBudgetAcrossMachinesPostgres is the same on PostgreSQL.
func TestBudgetAcrossMachinesPostgres(t *testing.T) {
	t.Parallel()
	pg, err := pgtest.Start(context.Background())
	switch {
	case errors.Is(err, pgtest.ErrNoPostgres) && os.Getenv("CI") != "true":
		t.Skip(err)
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop() }) //nolint:errcheck // the test is over
	testBudgetAcrossMachines(t, pg.Database(t))
}

func testBudgetAcrossMachines(t *testing.T, db string) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, budgetScript())
	const token = "budget-token-7f3a91"
	serveHome := t.TempDir()
	url := startServe(t, []string{"HOME=" + serveHome, "PATH=" + os.Getenv("PATH"), "CLAUDE_RELAY_SERVE_TOKENS=" + token,
		`CLAUDE_RELAY_SERVE_BUDGETS=[{"project":"budget-proj","period":"day","usd":0.01}]`}, serveHome, db)

	machine := func(name string) (env []string, cwd string) {
		dir := filepath.Join(t.TempDir(), name)
		cwd = filepath.Join(dir, "src", "budget-proj")
		if err := os.MkdirAll(cwd, 0o755); err != nil {
			t.Fatal(err)
		}
		return helperEnv(t, cli, api, "CLAUDE_RELAY_BACKEND_URL="+url, "CLAUDE_RELAY_BACKEND_TOKEN="+token,
			"CLAUDE_RELAY_DATA_DIR="+filepath.Join(dir, "data"), "CLAUDE_RELAY_SPOOL_DIR="+filepath.Join(dir, "spool")), cwd
	}
	envA, cwdA := machine("a")
	envB, cwdB := machine("b")

	if st := budgets(t, url, token); len(st) != 1 || st[0].SpentUSD != 0 || st[0].RemainingUSD != 0.01 {
		t.Fatalf("before any run: %+v", st)
	}
	stdout, stderr, code := runMain(t, envA, "run", "--cwd", cwdA, "--max-turns", "4", "use the tool")
	if out := stdout + stderr; code != 1 || !strings.Contains(out, "Maximum budget reached") || !strings.Contains(out, "$0.01") {
		t.Fatalf("machine A's run: exit %d, output:\n%s\nwant exit 1 with the CLI's budget stop", code, out)
	}
	if n := len(api.MainRequests()); n != 1 {
		t.Errorf("the CLI asked the API %d times; its budget should have stopped it after one response", n)
	}
	st := budgets(t, url, token)
	if len(st) != 1 || st[0].State != budget.Exhausted || st[0].SpentUSD < 0.01 {
		t.Fatalf("after machine A's run: %+v", st)
	}

	_, stderr, code = runMain(t, envB, "run", "--cwd", cwdB, "--max-turns", "4", "use the tool")
	if code != exitBudget {
		t.Fatalf("machine B's run: exit %d, want %d; stderr:\n%s", code, exitBudget, stderr)
	}
	for _, want := range []string{"budget exhausted", "project budget-proj", "$0.0220", "$0.01 daily budget", "resets at " + st[0].PeriodEnd.Format("2006-01-02T15:04:05Z")} {
		if !strings.Contains(stderr, want) {
			t.Errorf("machine B's refusal does not say %q:\n%s", want, stderr)
		}
	}
	if n := len(api.MainRequests()); n != 1 {
		t.Errorf("the refused run reached the API (%d requests)", n)
	}

	// The extension protocol: the same refusal, as an error event.
	p := startExtension(t, cwdB, envB)
	p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	p.prompt("budget-run", "sess-budget", "use the tool", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwdB, MaxTurns: 4}})
	ev := p.waitFor("error", func(ev extension.Event) bool { return ev.Event == extension.EventError })
	if ev.Code != extension.CodeBudgetExhausted || !strings.Contains(ev.Message, "$0.01 daily budget") || ev.RequestID != "req-budget-run" {
		t.Errorf("extension error: %+v", ev)
	}
	p.shutdownOK()
	if n := len(api.MainRequests()); n != 1 {
		t.Errorf("the refused prompt reached the API (%d requests)", n)
	}
}

// budgets reads GET /api/budgets with token.
func budgets(t *testing.T, url, token string) []budget.Status {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/api/budgets", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out budget.Response
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/budgets: %d %v", resp.StatusCode, err)
	}
	return out.Budgets
}
