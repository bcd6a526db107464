package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// initBudget bounds what package init may allocate in claude-relay, which
// every editor window's helper and every hook the CLI runs (`hook-post`)
// start: 1 MB. It was 0.64 MB before the dashboard's Markdown was linked
// in, 2.6 MB with it, 0.2 MB once the server moved to claude-relay-server.
const initBudget = 1 << 20

// serverOnly are the packages claude-relay must not link: the reference
// backend's, which claude-relay-server has (their init and memory would be
// every helper's). A prefix covers the package and those under it.
var serverOnly = []string{
	"github.com/claude-relay/claude-relay/internal/server/backend",
	"github.com/claude-relay/claude-relay/internal/server/store",
	"github.com/claude-relay/claude-relay/internal/server/dashboard",
	"github.com/claude-relay/claude-relay/internal/server/markdown",
	"github.com/claude-relay/claude-relay/internal/server",
	"github.com/yuin/goldmark",
	"github.com/microcosm-cc/bluemonday",
	"github.com/alecthomas/chroma",
	"github.com/prometheus/",
	"modernc.org/sqlite",
	"github.com/jackc/pgx",
}

func goTool(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH:", err)
	}
	return gobin
}

// TestHelperDoesNotLinkServerLibraries: claude-relay leaves the server to
// claude-relay-server.
func TestHelperDoesNotLinkServerLibraries(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), goTool(t), "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if slices.ContainsFunc(serverOnly, func(p string) bool { return pkg == p || strings.HasPrefix(pkg, strings.TrimSuffix(p, "/")+"/") }) {
			t.Errorf("claude-relay links %s, which only claude-relay-server may: its init and memory would cost every helper "+
				"(reach the server through localbackend.StartChild or serve's exec)", pkg)
		}
	}
}

// initLine is one line of GODEBUG=inittrace=1.
var initLine = regexp.MustCompile(`^init (\S+) @\S+ ms, (\S+) ms clock, (\d+) bytes, (\d+) allocs$`)

// TestHelperInitAllocations builds claude-relay, runs `claude-relay
// version` with GODEBUG=inittrace=1 and fails when package init allocated
// more than initBudget, naming the packages that allocate most.
func TestHelperInitAllocations(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "claude-relay")
	if out, err := exec.CommandContext(t.Context(), goTool(t), "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(t.Context(), bin, "version")
	cmd.Env = []string{"GODEBUG=inittrace=1", "HOME=" + t.TempDir()}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude-relay version: %v\n%s", err, stderr.String())
	}
	type pkg struct {
		name  string
		bytes int
	}
	var pkgs []pkg
	var total int
	var clock float64
	for _, l := range strings.Split(stderr.String(), "\n") {
		m := initLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		b, _ := strconv.Atoi(m[3])
		ms, _ := strconv.ParseFloat(m[2], 64)
		pkgs = append(pkgs, pkg{m[1], b})
		total += b
		clock += ms
	}
	if len(pkgs) == 0 {
		t.Fatalf("no inittrace lines in claude-relay's stderr:\n%s", stderr.String())
	}
	t.Logf("package init: %d bytes in %d packages, %.2f ms clock", total, len(pkgs), clock)
	if total > initBudget {
		slices.SortFunc(pkgs, func(a, b pkg) int { return b.bytes - a.bytes })
		var top []string
		for _, p := range pkgs[:min(8, len(pkgs))] {
			top = append(top, fmt.Sprintf("%s %d", p.name, p.bytes))
		}
		t.Errorf("claude-relay's package init allocates %d bytes, over the %d budget; most: %s "+
			"(build what a package needs on first use, e.g. with sync.OnceValue, or keep it out of claude-relay)",
			total, initBudget, strings.Join(top, ", "))
	}
}
