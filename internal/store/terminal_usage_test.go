package store

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/wire"
)

func TestTerminalTurns(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var evs []Event
	add := func(interaction string, seq int64, typ string, at time.Duration, data any) Event {
		b, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		ev := Event{SessionID: "s", InteractionID: interaction, EventID: fmt.Sprintf("%s-%d", interaction, seq), Seq: seq,
			EventType: typ, EventData: b, Timestamp: t0.Add(at), Source: "terminal"}
		evs = append(evs, ev)
		return ev
	}
	usage := func(in, out int64) map[string]any { return map[string]any{"input_tokens": in, "output_tokens": out} }
	assistant := func(session, reqSession, msgID, reqID, model string, u map[string]any) map[string]any {
		l := map[string]any{"type": "assistant", "sessionId": session, "requestId": reqID, "uuid": msgID + reqID,
			"message": map[string]any{"id": msgID, "model": model, "usage": u}}
		if reqSession != "" {
			l["requestSessionId"] = reqSession
		}
		return l
	}
	user := func(session, promptID string) map[string]any {
		return map[string]any{"type": "user", "sessionId": session, "promptId": promptID, "message": map[string]any{"content": "p"}}
	}
	const opus, haiku = "claude-opus-5-5", "claude-haiku-4-5"

	// An old terminal run: two prompts; the first message's three block
	// lines count once, a message retried under another request twice.
	add("i1", 1, wire.TypeRunStarted, 0, map[string]any{"run_id": "r1", "mode": "terminal", "cwd": "/w"})
	p1 := add("i1", 2, "hook.UserPromptSubmit", 1, map[string]any{"session_id": "c1", "prompt_id": "p1", "prompt": "first"})
	add("i1", 3, "transcript.user", 2, user("c1", "p1"))
	for seq := int64(4); seq <= 6; seq++ {
		add("i1", seq, "transcript.assistant", 3, assistant("c1", "", "m1", "q1", opus, usage(100, 20)))
	}
	add("i1", 7, "transcript.assistant", 4, assistant("c1", "", "m2", "q2", opus, usage(200, 30)))
	add("i1", 8, "transcript.assistant", 4, assistant("c1", "", "m2", "q2b", opus, usage(200, 30)))
	p2 := add("i1", 9, "hook.UserPromptSubmit", 5, map[string]any{"session_id": "c1", "prompt_id": "p2", "prompt": "second"})
	add("i1", 10, "transcript.user", 6, user("c1", "p2"))
	add("i1", 11, "transcript.assistant", 7, assistant("c1", "", "m3", "q3", haiku, usage(300, 40)))
	add("i1", 12, "transcript.assistant", 7, assistant("c1", "", "syn", "", "<synthetic>", usage(0, 0)))
	add("i1", 13, wire.TypeRunCompleted, 8, map[string]any{"run_id": "r1", "mode": "terminal"})
	// A fork of it: its transcript starts with a copy, which does not count.
	add("i2", 1, wire.TypeRunStarted, time.Hour, map[string]any{"run_id": "r2", "mode": "terminal", "resume": "c1", "fork": true})
	add("i2", 2, "transcript.user", time.Hour+1, user("c2", "p1"))
	add("i2", 3, "transcript.assistant", time.Hour+1, assistant("c2", "c1", "m1", "q1", opus, usage(100, 20)))
	p3 := add("i2", 4, "hook.UserPromptSubmit", time.Hour+2, map[string]any{"session_id": "c2", "prompt_id": "p3"})
	add("i2", 5, "transcript.user", time.Hour+3, user("c2", "p3"))
	add("i2", 6, "transcript.assistant", time.Hour+4, assistant("c2", "", "m4", "q4", opus, usage(400, 50)))
	add("i2", 7, "transcript.assistant", time.Hour+4, assistant("c2", "", "m1", "q1", opus, usage(100, 20))) // counted in i1
	// A run that posted its turns itself: left alone.
	add("i3", 1, wire.TypeRunStarted, 2*time.Hour, map[string]any{"run_id": "r3", "mode": "terminal"})
	add("i3", 2, "hook.UserPromptSubmit", 2*time.Hour, map[string]any{"prompt_id": "p9"})
	add("i3", 3, "transcript.assistant", 2*time.Hour, assistant("c3", "", "m9", "q9", opus, usage(1, 1)))
	add("i3", 4, wire.TypeTurnCompleted, 2*time.Hour, map[string]any{"run_id": "r3", "turn": 1, "mode": "terminal"})

	got := TerminalTurns(append(evs, evs[3])) // an event stored twice counts once
	u := func(in, out int64) Usage { return Usage{InputTokens: in, OutputTokens: out} }
	want := []CountedResult{
		{Key: "turn:r1:1", EventID: p1.EventID, At: p1.Timestamp, Result: &Result{Key: "turn:r1:1", Usage: u(500, 80),
			Models: []ModelUsage{{Model: opus, Usage: u(500, 80)}}}},
		{Key: "turn:r1:2", EventID: p2.EventID, At: p2.Timestamp, Result: &Result{Key: "turn:r1:2", Usage: u(300, 40),
			Models: []ModelUsage{{Model: haiku, Usage: u(300, 40)}}}},
		{Key: "turn:r2:1", EventID: p3.EventID, At: p3.Timestamp, Result: &Result{Key: "turn:r2:1", Usage: u(400, 50),
			Models: []ModelUsage{{Model: opus, Usage: u(400, 50)}}}},
	}
	if !reflect.DeepEqual(got, want) {
		for _, c := range got {
			t.Logf("got  %s %s %v %+v", c.Key, c.EventID, c.At, *c.Result)
		}
		t.Errorf("TerminalTurns: want %d turns: r1's two, r2's one", len(want))
	}
}
