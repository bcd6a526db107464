package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// mustJSON encodes v as event data.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func toolUse(conv string, names ...string) string {
	var blocks []any
	for i, n := range names {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", i), "name": n, "input": map[string]any{}})
	}
	return mustJSON(map[string]any{"type": "assistant", "session_id": conv, "message": map[string]any{"role": "assistant", "content": blocks}})
}

func runStarted(fields map[string]any) string { return mustJSON(fields) }

// listCases are sessions whose list fields the suite checks, each with its
// events in arrival order.
func listCases() []struct {
	name   string
	events func(sid string) []store.Event
	want   store.Session // Title, Project, Source, Model, Turns
} {
	const h = time.Hour
	long := strings.Repeat("é", 150) + " " + strings.Repeat("x", 150)
	return []struct {
		name   string
		events func(sid string) []store.Event
		want   store.Session
	}{
		{"background run", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"run_id": "r", "prompt": "  Fix the\n\tflaky   test ", "cwd": "/w/p", "model": "opus"})),
				ev(sid, "i1", 2, "system", 1, `{"type":"system","subtype":"init","session_id":"c1","model":"claude-opus-5-5","cwd":"/elsewhere"}`),
				ev(sid, "i1", 3, "assistant", 2, toolUse("c1", "Bash")),
				ev(sid, "i1", 4, "result", 3, `{"type":"result","uuid":"u1","session_id":"c1","total_cost_usd":0.5,"usage":{"input_tokens":3}}`),
				ev(sid, "i1", 5, store.EventRunCompleted, 4, `{"run_id":"r"}`),
			}
		}, store.Session{Title: "Fix the flaky test", Project: "/w/p", Source: store.SourceBackground, Model: "claude-opus-5-5", Turns: 1}},
		{"a later run asks for another model", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"prompt": "first", "cwd": "/w/a"})),
				ev(sid, "i1", 2, "system", 1, `{"type":"system","subtype":"init","session_id":"c1","model":"claude-opus-5-5"}`),
				ev(sid, "i2", 1, store.EventRunStarted, h, runStarted(map[string]any{"prompt": "second", "cwd": "/w/b", "model": "sonnet"})),
			}
		}, store.Session{Title: "first", Project: "/w/a", Source: store.SourceBackground, Model: "sonnet"}},
		{"terminal run typed its prompt", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"mode": "terminal", "cwd": "/t/run"})),
				ev(sid, "i1", 2, "hook.SessionStart", 1, `{"session_id":"c1","cwd":"/t/hook"}`),
				ev(sid, "i1", 3, "hook.UserPromptSubmit", 2, `{"session_id":"c1","cwd":"/t/hook","prompt":"typed in the terminal"}`),
				ev(sid, "i1", 4, "transcript.user", 3, `{"type":"user","sessionId":"c1"}`),
				ev(sid, "i1", 5, "hook.UserPromptSubmit", 4, `{"session_id":"c1","prompt":"and a second one"}`),
				ev(sid, "i1", 6, "transcript.assistant", 5, `{"type":"assistant","sessionId":"c1","message":{"model":"claude-opus-5-5","content":[]}}`),
				ev(sid, "i1", 7, "transcript.assistant", 6, `{"type":"assistant","sessionId":"c1","message":{"model":"<synthetic>","content":[]}}`),
			}
		}, store.Session{Title: "typed in the terminal", Project: "/t/run", Source: store.SourceTerminal, Model: "claude-opus-5-5"}},
		{"terminal hooks only", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 2, "hook.PreToolUse", 2, `{"session_id":"c1","cwd":"/h/2","tool_name":"Edit"}`),
				ev(sid, "i1", 1, "hook.UserPromptSubmit", 1, `{"session_id":"c1","cwd":"/h/1","prompt":"hooked"}`),
			}
		}, store.Session{Title: "hooked", Project: "/h/1", Source: store.SourceTerminal}},
		{"acp run", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"mode": "acp", "prompt": "from the editor", "cwd": "/zed"})),
			}
		}, store.Session{Title: "from the editor", Project: "/zed", Source: store.SourceACP}},
		{"long prompt", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"prompt": long}))}
		}, store.Session{Title: string([]rune(long)[:store.MaxTitleRunes-1]) + "…", Source: store.SourceBackground}},
		{"earliest prompt arrives last", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i2", 1, store.EventRunStarted, h, runStarted(map[string]any{"prompt": "later", "cwd": "/later"})),
				ev(sid, "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"prompt": "earlier", "cwd": "/earlier"})),
			}
		}, store.Session{Title: "earlier", Project: "/earlier", Source: store.SourceBackground}},
		// A live run's follow-up is relay.message_sent, the first event of
		// its interaction: searchable (testSearch), never the title unless
		// it is the earliest prompt.
		{"live run's follow-up", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"run_id": "r", "prompt": "start the migration", "cwd": "/w/m"})),
				ev(sid, "i1", 2, "result", 1, `{"type":"result","uuid":"u1","session_id":"c1"}`),
				ev(sid, "i1", 3, wire.TypeTurnCompleted, 2, `{"run_id":"r","turn":1,"status":"completed"}`),
				ev(sid, "i2", 1, wire.TypeMessageSent, h, mustJSON(wire.MessageSent{RunID: "r", PromptRecord: wire.PromptRecord{Prompt: "now roll it back"}})),
				ev(sid, "i2", 2, "result", h+1, `{"type":"result","uuid":"u2","session_id":"c1"}`),
				ev(sid, "i2", 3, wire.TypeTurnCompleted, h+2, `{"run_id":"r","turn":2,"status":"completed"}`),
			}
		}, store.Session{Title: "start the migration", Project: "/w/m", Source: store.SourceBackground, Turns: 2}},
		{"idle live run: the follow-up is the first prompt", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"run_id": "r", "cwd": "/w/idle"})),
				ev(sid, "i2", 1, wire.TypeMessageSent, h, `{"run_id":"r","prompt":" wake\nup ","blocks":1}`),
				ev(sid, "i3", 1, wire.TypeMessageSent, 2*h, mustJSON(wire.MessageSent{RunID: "r", PromptRecord: wire.PromptRecord{Prompt: "and go on"}})),
			}
		}, store.Session{Title: "wake up", Project: "/w/idle", Source: store.SourceBackground}},
		{"CLI events only", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, "assistant", 0, toolUse("c1", "Read"))}
		}, store.Session{}},
		{"bad values", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, `{"prompt":5,"cwd":["x"],"model":null,"mode":7}`),
				ev(sid, "i1", 2, "hook.UserPromptSubmit", 1, `{"prompt":"   ","cwd":"nul\u0000here"}`),
				ev(sid, "i1", 3, "result", 2, `{"type":"result","uuid":"u","modelUsage":{"m":"x","":{"costUSD":1}},"model_usage_since_last_result":[],"total_cost_usd":0.25}`),
			}
		}, store.Session{Source: store.SourceTerminal, Project: "nul\uFFFDhere", Turns: 1}},
	}
}

// testListFields: the list fields of sessions of every kind, as listed.
func testListFields(t *testing.T, s store.Store) {
	for i, tc := range listCases() {
		t.Run(tc.name, func(t *testing.T) {
			sid := fmt.Sprintf("list-%d", i)
			events := tc.events(sid)
			for _, e := range events {
				mustAppend(t, s, e)
			}
			got := mustSession(t, s, sid)
			if got.Title != tc.want.Title || got.Project != tc.want.Project || got.Source != tc.want.Source ||
				got.Model != tc.want.Model || got.Turns != tc.want.Turns {
				t.Errorf("title %q, project %q, source %q, model %q, turns %d; want %q, %q, %q, %q, %d",
					got.Title, got.Project, got.Source, got.Model, got.Turns,
					tc.want.Title, tc.want.Project, tc.want.Source, tc.want.Model, tc.want.Turns)
			}
			if n := utf8.RuneCountInString(got.Title); n > store.MaxTitleRunes {
				t.Errorf("title has %d runes, want at most %d", n, store.MaxTitleRunes)
			}
			checkDerived(t, got, store.Derive(events))
			list, err := s.Sessions(context.Background(), store.ListOptions{Query: sid})
			if err != nil || len(list) != 1 || list[0].Title != got.Title || list[0].Turns != got.Turns {
				t.Errorf("Sessions(query %q) = %+v, %v; want the session as Session returns it", sid, list, err)
			}
		})
	}
}

// testListFieldsArrivalOrder appends each case's events shuffled, in
// batches: the list fields do not depend on arrival order.
func testListFieldsArrivalOrder(t *testing.T, s store.Store) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i, tc := range listCases() {
		for round := range 4 {
			sid := fmt.Sprintf("listorder-%d-%d", i, round)
			events := tc.events(sid)
			rng.Shuffle(len(events), func(a, b int) { events[a], events[b] = events[b], events[a] })
			for rest := events; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(3))
				mustAppend(t, s, rest[:n]...)
				rest = rest[n:]
			}
			got := mustSession(t, s, sid)
			if got.Title != tc.want.Title || got.Project != tc.want.Project || got.Source != tc.want.Source || got.Model != tc.want.Model {
				t.Errorf("%s, order %d: title %q, project %q, source %q, model %q; want %q, %q, %q, %q", tc.name, round,
					got.Title, got.Project, got.Source, got.Model, tc.want.Title, tc.want.Project, tc.want.Source, tc.want.Model)
			}
		}
	}
}

// listIDs lists sessions with opts and returns their IDs in order.
func listIDs(t *testing.T, s store.Store, opts store.ListOptions) []string {
	t.Helper()
	list, err := s.Sessions(context.Background(), opts)
	if err != nil {
		t.Fatalf("Sessions(%+v): %v", opts, err)
	}
	ids := []string{}
	for _, sess := range list {
		ids = append(ids, sess.ID)
	}
	return ids
}

func testSearch(t *testing.T, s store.Store) {
	mustAppend(t, s,
		ev("Srch-A", "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"prompt": "Refactor the  Parser\nmodule", "cwd": "/p1"})),
		ev("Srch-A", "i1", 2, "assistant", 1, toolUse("conv-a", "Grep", "Bash")),
		ev("Srch-A", "i2", 1, store.EventRunStarted, time.Hour, runStarted(map[string]any{"prompt": "then add tests for the LEXER"})),
		ev("Srch-A", "i3", 1, wire.TypeMessageSent, 2*time.Hour, mustJSON(wire.MessageSent{RunID: "r", PromptRecord: wire.PromptRecord{Prompt: "and polish the Tokenizer"}})),
	)
	mustAppend(t, s,
		ev("srch-b", "i1", 1, "hook.UserPromptSubmit", 0, `{"session_id":"conv-b","prompt":"deploy to staging"}`),
		ev("srch-b", "i1", 2, "hook.PreToolUse", 1, `{"session_id":"conv-b","tool_name":"mcp__deploy__Push"}`),
		ev("srch-b", "i1", 3, "transcript.assistant", 2, `{"type":"assistant","sessionId":"conv-b","message":{"content":[{"type":"tool_use","name":"WebFetch"}]}}`),
	)
	mustAppend(t, s, ev("srch-c", "i1", 1, "assistant", 0, `{"type":"assistant","session_id":"Conv-XYZ-123"}`))
	mustAppend(t, s, ev("srch-c", "i2", 1, "assistant", time.Hour, `{"type":"assistant","session_id":"fork-777"}`))
	cases := []struct {
		query string
		want  []string
	}{
		{"parser", []string{"Srch-A"}},
		{"PARSER module", []string{"Srch-A"}},     // case, and the newline as a space
		{"  refactor   the ", []string{"Srch-A"}}, // white space normalized
		{"lexer", []string{"Srch-A"}},             // a prompt that is not the title
		{"TOKENIZER", []string{"Srch-A"}},         // a live run's follow-up (relay.message_sent)
		{"grep", []string{"Srch-A"}},
		{"bash", []string{"Srch-A"}},
		{"staging", []string{"srch-b"}},
		{"mcp__deploy", []string{"srch-b"}},
		{"webfetch", []string{"srch-b"}},
		{"srch-a", []string{"Srch-A"}}, // session ID
		{"srch", []string{"srch-c", "srch-b", "Srch-A"}},
		{"xyz-1", []string{"srch-c"}},    // a conversation ID
		{"fork-777", []string{"srch-c"}}, // and a later one
		{"conv-b", []string{"srch-b"}},
		{"no such thing", []string{}},
		{"parser\nlexer", []string{}}, // one item at a time
		{"", []string{"srch-c", "srch-b", "Srch-A"}},
		{"%", []string{}}, // no pattern syntax
		{"p_rser", []string{}},
	}
	for _, tc := range cases {
		if got := listIDs(t, s, store.ListOptions{Query: tc.query}); !slices.Equal(got, tc.want) {
			t.Errorf("Sessions(query %q) = %q, want %q", tc.query, got, tc.want)
		}
	}
}

// testSearchBounded: a session with more prompt text than its search text
// keeps stores and searches its first prompts.
func testSearchBounded(t *testing.T, s store.Store) {
	const sid = "bounded"
	var events []store.Event
	for i := range 40 {
		prompt := fmt.Sprintf("prompt-%03d %s", i, strings.Repeat("word ", 2000)) // 10 KiB each
		events = append(events, ev(sid, fmt.Sprintf("i%03d", i), 1, store.EventRunStarted, time.Duration(i), runStarted(map[string]any{"prompt": prompt})))
	}
	mustAppend(t, s, events[:20]...)
	mustAppend(t, s, events[20:]...)
	mustAppend(t, s, ev(sid, "x", 1, "assistant", 0, toolUse("c", "LateTool")))
	if got := listIDs(t, s, store.ListOptions{Query: "prompt-000"}); !slices.Equal(got, []string{sid}) {
		t.Errorf("the first prompt: %q, want the session", got)
	}
	if got := listIDs(t, s, store.ListOptions{Query: "latetool"}); !slices.Equal(got, []string{sid}) {
		t.Errorf("a tool after the prompts filled the text: %q, want the session (short items still fit)", got)
	}
	if got := listIDs(t, s, store.ListOptions{Query: "prompt-039"}); len(got) != 0 {
		t.Errorf("the last prompt: %q, want none (past MaxSearchText)", got)
	}
}

func testListFilters(t *testing.T, s store.Store) {
	mustAppend(t, s, ev("f-1", "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"prompt": "alpha", "cwd": "/one"})))
	mustAppend(t, s, ev("f-2", "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"prompt": "alpha beta", "cwd": "/two"})),
		ev("f-2", "i1", 2, store.EventRunCompleted, 1, `{}`))
	mustAppend(t, s, ev("f-3", "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"prompt": "gamma", "cwd": "/one"})),
		ev("f-3", "i1", 2, store.EventRunFailed, 1, `{}`))
	c2 := mustSession(t, s, "f-2").CreatedAt
	c3 := mustSession(t, s, "f-3").CreatedAt
	cases := []struct {
		name string
		opts store.ListOptions
		want []string
	}{
		{"status", store.ListOptions{Status: store.StatusRunning}, []string{"f-1"}},
		{"status failed", store.ListOptions{Status: store.StatusFailed}, []string{"f-3"}},
		{"project", store.ListOptions{Project: "/one"}, []string{"f-3", "f-1"}},
		{"project is exact", store.ListOptions{Project: "/on"}, []string{}},
		{"from", store.ListOptions{From: c2}, []string{"f-3", "f-2"}},
		{"to", store.ListOptions{To: c2}, []string{"f-1"}},
		{"from and to", store.ListOptions{From: c2, To: c3}, []string{"f-2"}},
		{"query and project", store.ListOptions{Query: "alpha", Project: "/two"}, []string{"f-2"}},
		{"query and status", store.ListOptions{Query: "alpha", Status: store.StatusCompleted}, []string{"f-2"}},
		{"everything", store.ListOptions{Query: "a", Project: "/one", Status: store.StatusFailed, From: c3, To: c3.Add(time.Hour)}, []string{"f-3"}},
	}
	for _, tc := range cases {
		if got := listIDs(t, s, tc.opts); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Sessions = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// testListPaging walks the list with After: every session once, in order,
// also when sessions are updated between pages (they move ahead of the
// cursor and are not listed again).
func testListPaging(t *testing.T, s store.Store) {
	const n = 23
	for i := range n {
		mustAppend(t, s, ev(fmt.Sprintf("page-%02d", i), "i1", 1, "assistant", 0, `{}`))
	}
	all := listIDs(t, s, store.ListOptions{})
	if len(all) != n {
		t.Fatalf("%d sessions listed, want %d", len(all), n)
	}
	var walked []string
	var after *store.ListCursor
	for page := 0; ; page++ {
		list, err := s.Sessions(context.Background(), store.ListOptions{Limit: 5, After: after})
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if len(list) == 0 {
			break
		}
		if page == 1 { // an update while paging
			mustAppend(t, s, ev(all[0], "i1", 2, "assistant", 0, `{}`), ev(all[n-1], "i1", 2, "assistant", 0, `{}`))
		}
		for _, sess := range list {
			walked = append(walked, sess.ID)
		}
		last := list[len(list)-1]
		after = &store.ListCursor{UpdatedAt: last.UpdatedAt, ID: last.ID}
	}
	if !slices.Equal(walked, all[:n-1]) {
		t.Errorf("paged = %q, want %q (the last one moved ahead of the cursor)", walked, all[:n-1])
	}
	// Equal UpdatedAt: the greater ID first, and the cursor splits the tie.
	tied := listIDs(t, s, store.ListOptions{Limit: 2})
	list, _ := s.Sessions(context.Background(), store.ListOptions{Limit: 1})
	cur := &store.ListCursor{UpdatedAt: list[0].UpdatedAt, ID: list[0].ID + "~"}
	if got := listIDs(t, s, store.ListOptions{Limit: 1, After: cur}); !slices.Equal(got, tied[:1]) {
		t.Errorf("after (same time, greater ID) = %q, want %q", got, tied[:1])
	}
}
