package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// BenchIngest measures Append of 1 KiB events, batch events per call, into
// one session of s, and reports events/s.
func BenchIngest(b *testing.B, s store.Store, batch int) {
	prefix := `{"type":"assistant","session_id":"conv","message":{"text":"`
	suffix := `"}}`
	data := json.RawMessage(prefix + strings.Repeat("x", 1024-len(prefix)-len(suffix)) + suffix)
	ctx := context.Background()
	events := make([]store.Event, batch)
	var seq int64
	b.SetBytes(int64(len(data) * batch))
	b.ResetTimer()
	for b.Loop() {
		for i := range events {
			seq++
			events[i] = store.Event{
				SessionID: "bench", InteractionID: "i1", EventID: fmt.Sprintf("bench-%d", seq), Seq: seq,
				EventType: "assistant", EventData: data, Timestamp: t0.Add(time.Duration(seq)), Source: "agent",
			}
		}
		if _, err := s.Append(ctx, events); err != nil {
			b.Fatalf("Append: %v", err)
		}
	}
	b.ReportMetric(float64(seq)/b.Elapsed().Seconds(), "events/s")
}

// Fixture is a Store built once per test binary and shared by its
// benchmarks (building 10,000 sessions takes seconds); TestMain closes it.
type Fixture struct {
	once  sync.Once
	s     store.Store
	err   error
	close func() error
}

// Store returns the fixture, building it on first use with build (which
// returns the Store and what frees it) and filling it with n sessions.
func (f *Fixture) Store(tb testing.TB, n int, build func() (store.Store, func() error, error)) store.Store {
	tb.Helper()
	f.once.Do(func() {
		f.s, f.close, f.err = build()
		if f.err == nil {
			f.err = FillSessions(context.Background(), f.s, n)
		}
	})
	if f.err != nil {
		tb.Fatalf("search fixture: %v", f.err)
	}
	return f.s
}

// Close frees the fixture if it was built.
func (f *Fixture) Close() error {
	f.once.Do(func() {}) // a later Store builds nothing
	if f.close == nil {
		return nil
	}
	return f.close()
}

// SearchRare is a query that matches one session in a thousand of
// FillSessions': a search that must read every session's text to fill
// its page, the slowest kind.
const SearchRare = "zebra"

var (
	benchWords = strings.Fields(`refactor the parser module and add tests for error paths update
		dependencies fix flaky integration test in ci explain why the build fails on arm64 write a
		migration for the users table rename variables to match the style guide profile the hot loop
		and cut allocations document the public api of the client package review this diff`)
	benchTools = []string{"Bash", "Read", "Edit", "Write", "Grep", "Glob", "WebFetch", "Task",
		"TodoWrite", "mcp__github__create_pr", "mcp__linear__search"}
)

// FillSessions appends n sessions like a busy relay's: a background run
// each (a prompt of 40 words, a working directory out of 20, tool calls,
// a result), a follow-up run for every third. One in a thousand prompts
// has SearchRare.
func FillSessions(ctx context.Context, s store.Store, n int) error {
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	var batch []store.Event
	for i := range n {
		sid := fmt.Sprintf("bench-%05d", i)
		at := time.Duration(i) * time.Second
		words := make([]string, 40)
		for w := range words {
			words[w] = benchWords[rng.IntN(len(benchWords))]
		}
		if i%1000 == 0 {
			words[rng.IntN(len(words))] = fmt.Sprintf("%s-%d", SearchRare, i)
		}
		conv := fmt.Sprintf("%08x-conv-%05d", rng.Uint32(), i)
		add := func(iid string, seq int64, typ string, d time.Duration, data string) {
			batch = append(batch, store.Event{SessionID: sid, InteractionID: iid, EventID: fmt.Sprintf("%s-%s-%d", sid, iid, seq),
				Seq: seq, EventType: typ, EventData: json.RawMessage(data), Timestamp: t0.Add(at + d), Source: "agent"})
		}
		add("i1", 1, store.EventRunStarted, 0, mustJSON(map[string]any{"run_id": sid, "prompt": strings.Join(words, " "),
			"cwd": fmt.Sprintf("/src/project-%02d", i%20), "model": "sonnet"}))
		add("i1", 2, "system", 1, fmt.Sprintf(`{"type":"system","subtype":"init","session_id":%q,"model":"claude-sonnet-5"}`, conv))
		add("i1", 3, "assistant", 2, toolUse(conv, benchTools[i%len(benchTools)], benchTools[(i*7)%len(benchTools)]))
		add("i1", 4, "result", 3, fmt.Sprintf(`{"type":"result","uuid":"%s-r1","session_id":%q,"total_cost_usd":0.01,
			"model_usage_since_last_result":{"claude-sonnet-5":{"inputTokens":%d,"outputTokens":%d,"costUSD":0.01}}}`,
			sid, conv, rng.IntN(5000), rng.IntN(2000)))
		add("i1", 5, store.EventRunCompleted, 4, fmt.Sprintf(`{"run_id":%q,"status":"completed"}`, sid))
		if i%3 == 0 {
			add("i2", 1, store.EventRunStarted, time.Minute, mustJSON(map[string]any{"prompt": "now " + strings.Join(words[:10], " ")}))
		}
		if len(batch) >= 500 || i == n-1 {
			if _, err := s.Append(ctx, batch); err != nil {
				return fmt.Errorf("fill session %d: %w", i, err)
			}
			batch = batch[:0]
		}
	}
	return nil
}

// BenchSessionSearch measures Sessions with opts on a filled store and
// reports ms/search; want is how many sessions a page must have.
func BenchSessionSearch(b *testing.B, s store.Store, opts store.ListOptions, want int) {
	ctx := context.Background()
	for b.Loop() {
		list, err := s.Sessions(ctx, opts)
		if err != nil {
			b.Fatalf("Sessions(%+v): %v", opts, err)
		}
		if len(list) != want {
			b.Fatalf("Sessions(%+v): %d sessions, want %d", opts, len(list), want)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/search")
}
