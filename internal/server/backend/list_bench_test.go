package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/postgres"
	"github.com/claude-relay/claude-relay/internal/testkit/pgtest"
)

// benchSessions is how many sessions the list benchmarks hold: issue 16's
// "paging that stays fast at 10,000 sessions".
const benchSessions = 10000

// benchSearches are what BenchmarkListSearch asks for in turn: a word of
// 1% of the prompts, a tool 1% of the sessions called, and a session-ID
// fragment, each as the dashboard sends it (first page of 50).
var benchSearches = []string{"q=flaky&limit=50", "q=WebFetch&limit=50", "q=bench-0042&limit=50"}

// BenchmarkListSearch measures GET /api/sessions?q=… over loopback HTTP on
// 10,000 sessions (5 events each), in SQLite and PostgreSQL. ns/op is the
// whole request; db-p50-ms and db-p99-ms are the server's own time from the
// Server-Timing header (issue 16's budget: 200 ms). Its baseline,
// BenchmarkListSearchBaseline, is the unfiltered first page.
func BenchmarkListSearch(b *testing.B) {
	benchListStores(b, benchSearches)
}

// BenchmarkListSearchBaseline is the unfiltered first page of 50 on the
// same data: what the dashboard asks for when it opens.
func BenchmarkListSearchBaseline(b *testing.B) {
	benchListStores(b, []string{"limit=50"})
}

func benchListStores(b *testing.B, queries []string) {
	b.Run("sqlite", func(b *testing.B) {
		benchList(b, seededStore(b, openSQLite(b)), queries)
	})
	b.Run("postgres", func(b *testing.B) {
		benchList(b, seededStore(b, openPostgres(b)), queries)
	})
}

// openPostgres starts a server of its own for the benchmark (the package's
// TestMain has no shared one), or skips without the binaries.
func openPostgres(b *testing.B) store.Store {
	b.Helper()
	srv, err := pgtest.Start(context.Background())
	if err != nil {
		b.Skipf("PostgreSQL: %v", err)
	}
	b.Cleanup(func() { _ = srv.Stop() })
	st, err := postgres.Open(context.Background(), srv.Database(b))
	if err != nil {
		b.Fatalf("postgres.Open: %v", err)
	}
	return st
}

// seededStore fills st and closes it when b ends. b.Loop runs a
// benchmark's body once, so this happens once per store.
func seededStore(b *testing.B, st store.Store) store.Store {
	b.Helper()
	b.Cleanup(func() { _ = st.Close() })
	start := time.Now()
	seedSessions(b, st, benchSessions)
	b.Logf("seeded %d sessions in %v", benchSessions, time.Since(start))
	return st
}

// seedSessions appends n background sessions as the helper posts them:
// run_started with the prompt and cwd, system/init, one tool call, the
// result and run_completed.
func seedSessions(tb testing.TB, st store.Store, n int) {
	tb.Helper()
	verbs := []string{"Fix", "Refactor", "Document", "Test", "Speed up", "Review"}
	nouns := []string{"login form", "parser", "release notes", "cache layer", "CLI flags", "database schema", "retry loop"}
	tools := []string{"Bash", "Read", "Edit", "Grep", "Write", "Glob"}
	models := []string{"claude-sonnet-4-5", "claude-opus-4-1"}
	t0 := time.Now().Add(-time.Duration(n) * time.Minute).UTC()
	var batch []store.Event
	flush := func() {
		if _, err := st.Append(context.Background(), batch); err != nil {
			tb.Fatalf("seeding: %v", err)
		}
		batch = batch[:0]
	}
	for i := range n {
		id := fmt.Sprintf("bench-%05d", i)
		conv := fmt.Sprintf("c0ffee00-0000-4000-8000-%012d", i)
		prompt := fmt.Sprintf("%s the %s in module %d", verbs[i%len(verbs)], nouns[i%len(nouns)], i%37)
		tool := tools[i%len(tools)]
		if i%100 == 7 {
			prompt += " (the flaky one)"
		}
		if i%100 == 13 {
			tool = "WebFetch"
		}
		model := models[i%len(models)]
		cwd := fmt.Sprintf("/home/dev/project-%d", i%12)
		at := t0.Add(time.Duration(i) * time.Minute)
		add := func(seq int64, typ string, data any) {
			raw, _ := json.Marshal(data)
			batch = append(batch, store.Event{
				SessionID: id, InteractionID: "i1", EventID: fmt.Sprintf("%s-%d", id, seq), Seq: seq, EventType: typ,
				EventData: raw, Timestamp: at.Add(time.Duration(seq) * time.Second), Source: "agent",
			})
		}
		add(1, "relay.run_started", map[string]any{"run_id": "r-" + id, "prompt": prompt, "cwd": cwd, "model": model})
		add(2, "system", map[string]any{"type": "system", "subtype": "init", "session_id": conv, "model": model, "cwd": cwd})
		add(3, "assistant", map[string]any{"type": "assistant", "session_id": conv, "message": map[string]any{"role": "assistant", "model": model,
			"content": []any{map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": tool, "input": map[string]any{"command": "make test"}}}}})
		add(4, "result", map[string]any{"type": "result", "subtype": "success", "session_id": conv, "num_turns": 2, "total_cost_usd": 0.01 + float64(i%50)/1000,
			"usage": map[string]any{"input_tokens": 1000 + i%300, "output_tokens": 200, "cache_read_input_tokens": 5000}})
		add(5, "relay.run_completed", map[string]any{"run_id": "r-" + id, "status": "completed", "result": map[string]any{"exitCode": 0}})
		if len(batch) >= 1000 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
}

// benchList sends queries in turn and reports the Server-Timing figures.
func benchList(b *testing.B, st store.Store, queries []string) {
	baseURL, client := benchServer(b, st)
	get := func(q string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", baseURL+"/api/sessions?"+q, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s: %d %s", q, resp.StatusCode, body)
		}
		return resp, body
	}
	// A store that ignored q would measure the wrong thing: a search must
	// find something, and not the unfiltered page.
	_, first := get("limit=50")
	for _, q := range queries {
		if !strings.Contains(q, "q=") {
			continue
		}
		_, body := get(q)
		var page sessionsResponse
		if err := json.Unmarshal(body, &page); err != nil || len(page.Sessions) == 0 || string(body) == string(first) {
			b.Fatalf("%s found %d sessions (%v); the store does not search", q, len(page.Sessions), err)
		}
	}
	var db []float64
	i := 0
	b.ResetTimer()
	for b.Loop() {
		resp, _ := get(queries[i%len(queries)])
		i++
		ms, err := serverMillis(resp.Header.Get("Server-Timing"))
		if err != nil {
			b.Fatal(err)
		}
		db = append(db, ms)
	}
	b.StopTimer()
	slices.Sort(db)
	b.ReportMetric(db[len(db)/2], "db-p50-ms")
	b.ReportMetric(db[min(len(db)-1, len(db)*99/100)], "db-p99-ms")
}

// serverMillis reads "db;dur=<ms>".
func serverMillis(h string) (float64, error) {
	v, ok := strings.CutPrefix(h, "db;dur=")
	if !ok {
		return 0, fmt.Errorf("Server-Timing %q has no db;dur=", h)
	}
	return strconv.ParseFloat(v, 64)
}
