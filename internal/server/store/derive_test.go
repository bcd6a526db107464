package store_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

var t0 = time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC)

func event(interaction string, seq int64, eventType string, at time.Duration, data string) store.Event {
	return store.Event{
		SessionID: "s", InteractionID: interaction, EventID: fmt.Sprintf("%s-%d-%s-%d", interaction, seq, eventType, at),
		Seq: seq, EventType: eventType, EventData: json.RawMessage(data), Timestamp: t0.Add(at),
	}
}

func TestFactsOf(t *testing.T) {
	cases := []struct {
		name      string
		eventType string
		data      string
		candidate string
		lifecycle string
		result    *store.Result
	}{
		{"session_id", "assistant", `{"type":"assistant","session_id":"A"}`, "A", "", nil},
		{"system session_id ignored", "system", `{"type":"system","session_id":"A"}`, "", "", nil},
		{"system conversation_id kept", "system", `{"type":"system","conversation_id":"C","session_id":"A"}`, "C", "", nil},
		{"system conversationId kept", "system", `{"type":"system","conversationId":"C"}`, "C", "", nil},
		{"conversation_id first", "hook.Stop", `{"session_id":"S","conversationId":"B","conversation_id":"A"}`, "A", "", nil},
		{"conversationId second", "transcript.user", `{"session_id":"S","conversationId":"B"}`, "B", "", nil},
		{"keys are exact", "x", `{"Session_ID":"S","ConversationId":"B","conversation_ID":"A"}`, "", "", nil},
		{"non-strings skipped", "x", `{"conversation_id":1,"conversationId":{"a":1},"session_id":"S"}`, "S", "", nil},
		{"empty skipped", "x", `{"conversation_id":"","session_id":"S"}`, "S", "", nil},
		{"nested ignored", "x", `{"message":{"session_id":"S"}}`, "", "", nil},
		{"not an object", "x", `["session_id","S"]`, "", "", nil},
		{"invalid JSON", store.EventRunStarted, `{`, "", store.StatusRunning, nil},
		{"run_started", store.EventRunStarted, `{}`, "", store.StatusRunning, nil},
		{"run_completed", store.EventRunCompleted, `{"usage":{"input_tokens":5}}`, "", store.StatusCompleted, nil},
		{"run_failed", store.EventRunFailed, `{}`, "", store.StatusFailed, nil},
		{"run_cancelled", store.EventRunCancelled, `{}`, "", store.StatusCancelled, nil},
		{"other relay event", "relay.stderr", `{}`, "", "", nil},
		{"result with uuid", "result", `{"type":"result","uuid":"u","session_id":"S","total_cost_usd":0.5,
			"usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3,"cache_creation_input_tokens":4}}`,
			"S", "", &store.Result{Key: "uuid:u", CostUSD: 0.5, Usage: store.Usage{InputTokens: 1, OutputTokens: 2, CacheReadInputTokens: 3, CacheCreationInputTokens: 4}}},
		{"result without uuid", "result", `{"type":"result","usage":{"input_tokens":7.0},"total_cost_usd":"1"}`,
			"", "", &store.Result{Key: "seq:i:3", Usage: store.Usage{InputTokens: 7}}},
		{"result type mismatch", "result", `{"type":"assistant","usage":{"input_tokens":1}}`, "", "", nil},
		{"result data in another event", "assistant", `{"type":"result","usage":{"input_tokens":1}}`, "", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := store.FactsOf(event("i", 3, tc.eventType, 0, tc.data))
			if f.Candidate != tc.candidate || f.Lifecycle != tc.lifecycle {
				t.Errorf("FactsOf = candidate %q lifecycle %q, want %q %q", f.Candidate, f.Lifecycle, tc.candidate, tc.lifecycle)
			}
			if (f.Result == nil) != (tc.result == nil) || (f.Result != nil && !reflect.DeepEqual(*f.Result, *tc.result)) {
				t.Errorf("result = %+v, want %+v", f.Result, tc.result)
			}
			if got := store.ConversationCandidate(json.RawMessage(tc.data)); got != tc.candidate {
				t.Errorf("ConversationCandidate = %q, want %q", got, tc.candidate)
			}
		})
	}
}

func TestInteractionOrderIndependent(t *testing.T) {
	events := []store.Event{
		event("i", 1, store.EventRunStarted, 5, `{}`),
		event("i", 2, "system", 6, `{"type":"system","session_id":"sys"}`),
		event("i", 3, "assistant", 7, `{"session_id":"B"}`),
		event("i", 4, "assistant", 3, `{"conversationId":"A"}`), // clock skew: earlier time, later seq
		event("i", 5, store.EventRunFailed, 9, `{}`),
		event("i", 5, store.EventRunCancelled, 10, `{}`), // same seq: resolved by value
		event("i", 6, "assistant", 1, `{}`),
	}
	fold := func(evs []store.Event) store.Interaction {
		in := store.Interaction{ID: "i"}
		for _, e := range evs {
			in.Apply(e, store.FactsOf(e))
		}
		return in
	}
	want := fold(events)
	if want.ConversationID != "B" || !want.ConversationAt.Equal(t0.Add(3)) || !want.FirstEventAt.Equal(t0.Add(1)) ||
		want.Status != store.StatusFailed || want.EventCount != 7 {
		t.Fatalf("fold = %+v", want)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		evs := slices.Clone(events)
		rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		if got := fold(evs); got != want {
			t.Fatalf("order %v: %+v, want %+v", evs, got, want)
		}
	}
}

func TestOutcome(t *testing.T) {
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	cases := []struct {
		name           string
		events         []store.Event
		status         string
		started, ended *time.Time
	}{
		{"none", []store.Event{event("i", 1, "assistant", 0, `{}`)}, store.StatusUnknown, nil, nil},
		{"running", []store.Event{event("i", 1, store.EventRunStarted, 1, `{}`)}, store.StatusRunning, at(1), nil},
		{"completed", []store.Event{event("i", 1, store.EventRunStarted, 1, `{}`), event("i", 9, store.EventRunCompleted, 5, `{}`)},
			store.StatusCompleted, at(1), at(5)},
		{"ended without a start", []store.Event{event("i", 9, store.EventRunFailed, 5, `{}`)}, store.StatusFailed, nil, at(5)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var in store.Interaction
			for _, e := range tc.events {
				in.Apply(e, store.FactsOf(e))
			}
			status, started, ended := in.Outcome()
			if status != tc.status || !timeEq(started, tc.started) || !timeEq(ended, tc.ended) {
				t.Errorf("Outcome = %s %v %v, want %s %v %v", status, started, ended, tc.status, tc.started, tc.ended)
			}
		})
	}
}

func timeEq(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func TestPick(t *testing.T) {
	ins := []store.Interaction{
		{ID: "a", EventCount: 1, FirstEventAt: t0.Add(10), ConversationID: "A", ConversationAt: t0.Add(10)},
		{ID: "b", EventCount: 1, FirstEventAt: t0.Add(20)},                                                 // newest, no conversation ID
		{ID: "c", EventCount: 1, FirstEventAt: t0.Add(5), ConversationID: "C", ConversationAt: t0.Add(10)}, // ties a, greater ID
	}
	if got := store.PickConversation(ins); got != "C" {
		t.Errorf("PickConversation = %q, want C (tie on time, greater interaction_id)", got)
	}
	if got, ok := store.MostRecent(ins); !ok || got.ID != "b" {
		t.Errorf("MostRecent = %q, %v; want b", got.ID, ok)
	}
	if got := store.PickConversation(nil); got != "" {
		t.Errorf("PickConversation(nil) = %q", got)
	}
	if _, ok := store.MostRecent(nil); ok {
		t.Error("MostRecent(nil) reported an interaction")
	}
}

func TestAddConversationRef(t *testing.T) {
	ref := func(id, in string, d time.Duration) store.ConversationRef {
		return store.ConversationRef{ID: id, InteractionID: in, FirstSeen: t0.Add(d)}
	}
	steps := []struct {
		add     store.ConversationRef
		want    []store.ConversationRef
		changed bool
	}{
		{ref("B", "i2", 20), []store.ConversationRef{ref("B", "i2", 20)}, true},
		{ref("A", "i1", 10), []store.ConversationRef{ref("A", "i1", 10), ref("B", "i2", 20)}, true},
		{ref("B", "i2", 30), []store.ConversationRef{ref("A", "i1", 10), ref("B", "i2", 20)}, false},
		{ref("B", "i0", 5), []store.ConversationRef{ref("B", "i0", 5), ref("A", "i1", 10)}, true},
		{ref("A", "h", 10), []store.ConversationRef{ref("B", "i0", 5), ref("A", "h", 10)}, true},
	}
	var refs []store.ConversationRef
	for i, st := range steps {
		before := slices.Clone(refs)
		got, changed := store.AddConversationRef(refs, st.add)
		if !slices.Equal(got, st.want) || changed != st.changed {
			t.Fatalf("step %d: %+v changed=%v, want %+v changed=%v", i, got, changed, st.want, st.changed)
		}
		if !slices.Equal(refs, before) {
			t.Fatalf("step %d modified its input", i)
		}
		refs = got
	}
}

func TestDerive(t *testing.T) {
	const h = time.Hour
	r := event("i1", 3, "result", 3, `{"type":"result","uuid":"u","usage":{"input_tokens":2,"output_tokens":3},"total_cost_usd":0.5}`)
	resent := r
	resent.EventID = "other-id"
	events := []store.Event{
		event("i2", 1, store.EventRunStarted, h, `{}`),
		event("i2", 2, "assistant", h+1, `{"session_id":"fork"}`),
		event("i1", 1, store.EventRunStarted, 0, `{}`),
		event("i1", 2, "assistant", 1, `{"session_id":"orig"}`),
		r, r, resent,
		event("i1", 4, store.EventRunCompleted, 4, `{"usage":{"input_tokens":100}}`),
	}
	s := store.Derive(events)
	if s.ID != "s" || s.ExternalConversationID != "fork" || s.Status != store.StatusRunning || s.EndedAt != nil ||
		!s.StartedAt.Equal(t0.Add(h)) || s.EventCount != 7 || s.InteractionCount != 2 ||
		s.Usage != (store.Usage{InputTokens: 2, OutputTokens: 3}) || s.CostUSD != 0.5 || len(s.ConversationIDs) != 2 ||
		s.ConversationIDs[0].ID != "orig" || s.ConversationIDs[1].ID != "fork" {
		t.Errorf("Derive = %+v", s)
	}
	if empty := store.Derive(nil); empty.Status != store.StatusUnknown || empty.EventCount != 0 {
		t.Errorf("Derive(nil) = %+v", empty)
	}
}

// FuzzFactsOf: event_data comes from outside; the rules never panic and
// agree with ConversationCandidate.
func FuzzFactsOf(f *testing.F) {
	f.Add("result", `{"type":"result","uuid":"u","usage":{"input_tokens":1e3},"total_cost_usd":1.5}`)
	f.Add("system", `{"type":"system","session_id":"x"}`)
	f.Add("hook.Stop", `{"conversationId":"\u0000","session_id":null}`)
	f.Add(store.EventRunStarted, `[1,2]`)
	f.Add(store.EventRunStarted, `{"prompt":"a\u0000b","cwd":"/x","mode":"acp","run_id":"r"}`)
	f.Add("assistant", `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash"}]}}`)
	f.Add(store.EventApprovalRequested, `{"approval_id":"a","run_id":"r","options":["allow"],"input":{"x":1}}`)
	f.Add(store.EventApprovalResolved, `{"approval_id":"a","decision":"deny","by":"tty"}`)
	f.Add("result", `{"type":"result","modelUsage":{"m":{"inputTokens":1,"costUSD":0.1}}}`)
	f.Add("relay.message_sent", `{"v":2,"blocks":[{"type":"image","path":"a/b.png","media_type":"image/png","size":2048}],"blocks_total":300}`)
	f.Add("relay.message_sent", `{"prompt":"[text, 30 B] + 2 more blocks","blocks":3}`)
	f.Add(store.EventRunStarted, `{"v":2,"idle":true,"blocks":"x","prompt":7}`)
	f.Fuzz(func(t *testing.T, eventType, data string) {
		e := event("i", 1, eventType, 0, data)
		facts := store.FactsOf(e)
		if got := store.ConversationCandidate(e.EventData); got != facts.Candidate {
			t.Errorf("ConversationCandidate %q != FactsOf %q", got, facts.Candidate)
		}
		var in store.Interaction
		in.Apply(e, facts)
		in.Outcome()
		var l store.Listing
		l.Apply(e, facts)
		if strings.ContainsRune(l.Title+l.Project+l.Model, 0) || utf8.RuneCountInString(l.Title) > store.MaxTitleRunes {
			t.Errorf("listing %+v: NUL or a long title", l)
		}
		d := store.DeriveAll([]store.Event{e, e})
		if d.Session.EventCount != 1 {
			t.Errorf("DeriveAll counted a repeat: %+v", d.Session)
		}
	})
}
