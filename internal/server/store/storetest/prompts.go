package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Issue 23: every prompt is stored whole, from every surface, and a
// session's title is its first real prompt.

// pngBlock describes a PNG image block as the helper records it.
func pngBlock(path string, size int64) wire.PromptBlock {
	return wire.PromptBlock{Type: wire.BlockImage, Path: path, MediaType: "image/png", Size: size,
		SHA256: wire.SHA256([]byte(path))}
}

// idleStart is the relay.run_started of an ACP session at session/new: no
// prompt, no turn of its own.
func idleStart(cwd string) string {
	return mustJSON(wire.RunStarted{RunID: "r", Mode: wire.ModeACP, Idle: true, Cwd: cwd})
}

// sent is a relay.message_sent as this release's helper writes it.
func sent(text string, blocks ...wire.PromptBlock) string {
	return mustJSON(wire.MessageSent{RunID: "r", PromptRecord: wire.RecordPrompt(text, blocks)})
}

// promptCases are sessions whose title the prompt rules decide.
func promptCases() []struct {
	name   string
	events func(sid string) []store.Event
	title  string
	source string
} {
	const h = time.Hour
	big := strings.Repeat("word ", 300<<10/5)
	asked := "Explain why the parser test is flaky in @/w/parser_test.go"
	return []struct {
		name   string
		events func(sid string) []store.Event
		title  string
		source string
	}{
		{"acp: idle start, then prompts", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i0", 1, store.EventRunStarted, 0, idleStart("/zed")),
				ev(sid, "i1", 1, wire.TypeMessageSent, h, sent(wire.JoinPrompt("Explain why the parser test is flaky in ", "@/w/parser_test.go"),
					wire.PromptBlock{Type: wire.BlockText, Size: 40}, wire.PromptBlock{Type: wire.BlockResourceLink, Name: "parser_test.go", Path: "file:///w/parser_test.go"})),
				ev(sid, "i1", 2, "result", h+1, `{"type":"result","uuid":"u1","session_id":"c1"}`),
				ev(sid, "i2", 1, wire.TypeMessageSent, 2*h, sent("and fix it")),
			}
		}, asked, store.SourceACP},
		{"acp: idle start only", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i0", 1, store.EventRunStarted, 0, idleStart("/zed")),
				ev(sid, "i0", 2, store.EventRunCompleted, 1, `{"v":1,"run_id":"r","status":"completed"}`),
			}
		}, "", store.SourceACP},
		{"acp: an idle restart does not hide the first prompt", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i0", 1, store.EventRunStarted, 0, idleStart("/zed")),
				ev(sid, "i1", 1, wire.TypeMessageSent, h, sent("first question")),
				ev(sid, "i2", 1, store.EventRunStarted, 2*h, idleStart("/zed")),
				ev(sid, "i3", 1, wire.TypeMessageSent, 3*h, sent("second question")),
			}
		}, "first question", store.SourceACP},
		{"image only: described", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i0", 1, store.EventRunStarted, 0, idleStart("/zed")),
				ev(sid, "i1", 1, wire.TypeMessageSent, h, sent("", pngBlock("shots/image.png", 120<<10))),
				ev(sid, "i2", 1, wire.TypeMessageSent, 2*h, sent("what is in it?")),
			}
		}, "image.png (PNG, 120.0 KiB)", store.SourceACP},
		{"background run with content blocks: its text", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, mustJSON(wire.RunStarted{RunID: "r", Cwd: "/w",
					PromptRecord: wire.RecordPrompt(wire.JoinPrompt("look at this", "and this"),
						[]wire.PromptBlock{{Type: wire.BlockText, Size: 8}, pngBlock("x.png", 3000)})})),
			}
		}, "look at this and this", store.SourceBackground},
		{"terminal: the typed prompt", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, mustJSON(wire.RunStarted{RunID: "r", Mode: wire.ModeTerminal, Cwd: "/t"})),
				ev(sid, "i1", 2, "hook.UserPromptSubmit", 1, `{"session_id":"c1","cwd":"/t","prompt":"typed in the terminal"}`),
			}
		}, "typed in the terminal", store.SourceTerminal},
		{"legacy summary, then a real prompt", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i1", 1, store.EventRunStarted, 0, `{"run_id":"r","prompt":"prompt text + [image x.png, 2.0 KiB]","cwd":"/w"}`),
				ev(sid, "i2", 1, wire.TypeMessageSent, h, `{"run_id":"r","prompt":"now explain the diagram"}`),
			}
		}, "now explain the diagram", store.SourceBackground},
		{"legacy summary only", func(sid string) []store.Event {
			return []store.Event{
				ev(sid, "i0", 1, store.EventRunStarted, 0, `{"run_id":"r","mode":"acp","cwd":"/zed"}`),
				ev(sid, "i1", 1, wire.TypeMessageSent, h, `{"run_id":"r","prompt":"[text, 30 B]","blocks":1}`),
				ev(sid, "i2", 1, wire.TypeMessageSent, 2*h, `{"run_id":"r","prompt":"[text, 12 B] + [image, 3 B]","blocks":2}`),
			}
		}, "[text, 30 B]", store.SourceACP},
		{"a prompt over the cap: its first 256 KiB", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, wire.TypeMessageSent, 0, sent(big))}
		}, store.TitleOf(big), ""},
		{"binary junk in the text", func(sid string) []store.Event {
			return []store.Event{ev(sid, "i1", 1, wire.TypeMessageSent, 0, sent("bad \xff\xfe bytes\x00here"))}
		}, "bad \uFFFD\uFFFD bytes\uFFFDhere", ""},
	}
}

// testPromptTitles: the title is the first real prompt, whatever the
// arrival order; an idle start has none; a prompt of images alone is
// described; a summary an older helper recorded titles a session only
// when nothing else does. The full text is searchable.
func testPromptTitles(t *testing.T, s store.Store) {
	rng := rand.New(rand.NewPCG(23, 1))
	for i, tc := range promptCases() {
		t.Run(tc.name, func(t *testing.T) {
			for round := range 3 {
				sid := fmt.Sprintf("prompt-%d-%d", i, round)
				events := tc.events(sid)
				if round > 0 {
					rng.Shuffle(len(events), func(a, b int) { events[a], events[b] = events[b], events[a] })
				}
				for _, e := range events {
					mustAppend(t, s, e)
				}
				got := mustSession(t, s, sid)
				if got.Title != tc.title || got.Source != tc.source {
					t.Errorf("order %d: title %q, source %q; want %q, %q", round, got.Title, got.Source, tc.title, tc.source)
				}
				if want := store.Derive(events).Title; want != tc.title {
					t.Errorf("order %d: store.Derive's title %q, want %q", round, want, tc.title)
				}
			}
		})
	}
	// The whole prompt is searchable, not a summary of it.
	if ids := listIDs(t, s, store.ListOptions{Query: "parser test is flaky"}); !contains(ids, "prompt-0-0") {
		t.Errorf("search for the ACP prompt's words: %q, want prompt-0-0 among them", ids)
	}
}

// TitleFixture is sessions a release before migration 4 stored: prompts
// given with content blocks recorded as summaries (an ACP session, a
// background run with an image followed by a typed follow-up), and events
// of this release's helper (a prompt of an image alone) that the old rule
// gave no title.
func TitleFixture() []store.Event {
	const h = time.Hour
	return []store.Event{
		ev("tf-acp", "i0", 1, store.EventRunStarted, 0, `{"run_id":"r","mode":"acp","cwd":"/zed"}`),
		ev("tf-acp", "i1", 1, wire.TypeMessageSent, h, `{"run_id":"r","prompt":"[text, 30 B]","blocks":1}`),
		ev("tf-mixed", "i1", 1, store.EventRunStarted, 0, `{"run_id":"r","prompt":"prompt text + [image x.png, 2.0 KiB]","cwd":"/w"}`),
		ev("tf-mixed", "i2", 1, wire.TypeMessageSent, h, `{"run_id":"r","prompt":"now explain the diagram"}`),
		ev("tf-image", "i0", 1, store.EventRunStarted, 0, idleStart("/zed")),
		ev("tf-image", "i1", 1, wire.TypeMessageSent, h, sent("", pngBlock("shots/image.png", 120<<10))),
	}
}

// TitleUpdates are the list fields a release before migration 4 derived
// for events' sessions (the earliest event with a non-blank "prompt"
// string titles it; the keys have no rank), as statements on the sessions
// V1Inserts made (ph numbers placeholders).
func TitleUpdates(events []store.Event, ph func(n int) string) []Statement {
	ids, bySession := sessionsOf(events)
	var out []Statement
	for _, sid := range ids {
		l := oldListing(bySession[sid])
		keys, err := json.Marshal(l)
		if err != nil {
			panic(err)
		}
		out = append(out, Statement{fmt.Sprintf(`UPDATE sessions SET title = %s, project = %s, source = %s, model = %s, list_keys = %s WHERE id = %s`,
			ph(1), ph(2), ph(3), ph(4), ph(5), ph(6)), []any{l.Title, l.Project, l.Source, l.Model, string(keys), sid}})
	}
	return out
}

// oldListing is the list fields by the rule before issue 23.
func oldListing(events []store.Event) store.Listing {
	l := store.DeriveAll(events).Listing
	l.Title, l.TitleKey, l.TitleRank = "", store.EventKey{}, 0
	for _, e := range events {
		switch e.EventType {
		case store.EventRunStarted, wire.TypeMessageSent, "hook.UserPromptSubmit":
		default:
			continue
		}
		var d struct {
			Prompt string `json:"prompt"`
		}
		_ = json.Unmarshal(e.EventData, &d)
		title := store.TitleOf(d.Prompt)
		if k := store.KeyOf(e); title != "" && (l.Title == "" || k.Compare(l.TitleKey) < 0) {
			l.Title, l.TitleKey = title, k
		}
	}
	return l
}

// CheckTitleBackfill checks a Store opened on a database that V1Inserts and
// TitleUpdates filled before migration 4: each session's title is what
// this release derives from its events, and new events rank against it
// (a real prompt outranks a summary; an earlier real prompt stays).
func CheckTitleBackfill(t *testing.T, s store.Store, events []store.Event) {
	t.Helper()
	want := map[string]string{
		"tf-acp":   "[text, 30 B]",
		"tf-mixed": "now explain the diagram",
		"tf-image": "image.png (PNG, 120.0 KiB)",
	}
	bySession := map[string][]store.Event{}
	for _, e := range events {
		bySession[e.SessionID] = append(bySession[e.SessionID], e)
	}
	for sid, evs := range bySession {
		got := mustSession(t, s, sid)
		if derived := store.Derive(evs).Title; got.Title != derived || got.Title != want[sid] {
			t.Errorf("%s: title %q after the migration; want %q (store.Derive: %q)", sid, got.Title, want[sid], derived)
		}
	}
	list, err := s.Sessions(context.Background(), store.ListOptions{Limit: 100})
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	for _, sess := range list {
		if w, ok := want[sess.ID]; ok && sess.Title != w {
			t.Errorf("%s: listed with title %q, want %q", sess.ID, sess.Title, w)
		}
	}
	later := 3 * time.Hour
	mustAppend(t, s,
		ev("tf-acp", "i2", 1, wire.TypeMessageSent, later, sent("what the user asked")),
		ev("tf-mixed", "i3", 1, wire.TypeMessageSent, later, sent("a later question")),
	)
	for sid, title := range map[string]string{"tf-acp": "what the user asked", "tf-mixed": "now explain the diagram"} {
		if got := mustSession(t, s, sid).Title; got != title {
			t.Errorf("%s: title %q after a new prompt, want %q", sid, got, title)
		}
	}
}
