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
		return map[string]any{"type": "user", "sessionId": session, "promptId": promptID, "uuid": "u-" + session + promptID,
			"message": map[string]any{"content": "p"}}
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
	// A fork of it: its transcript starts with a copy (uuids kept, the
	// fork's prompt ID on every user line), which does not count.
	add("i2", 1, wire.TypeRunStarted, time.Hour, map[string]any{"run_id": "r2", "mode": "terminal", "resume": "c1", "fork": true})
	p3 := add("i2", 2, "hook.UserPromptSubmit", time.Hour+1, map[string]any{"session_id": "c2", "prompt_id": "p3"})
	copied := user("c2", "p3")
	copied["uuid"] = "u-m2"
	add("i2", 3, "transcript.user", time.Hour+1, copied)
	add("i2", 4, "transcript.assistant", time.Hour+1, assistant("c2", "c1", "m1", "q1", opus, usage(100, 20)))
	add("i2", 5, "transcript.assistant", time.Hour+1, assistant("c2", "", "m2", "q2", opus, usage(200, 30))) // its uuid says it is a copy
	add("i2", 6, "transcript.user", time.Hour+3, user("c2", "p3"))
	add("i2", 7, "transcript.assistant", time.Hour+4, assistant("c2", "", "m4", "q4", opus, usage(400, 50)))
	add("i2", 8, "transcript.assistant", time.Hour+4, assistant("c2", "", "m1", "q1", opus, usage(100, 20))) // counted in i1
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

// A terminal run's turn counts its tokens by model; its end counts the
// CLI's cost, and neither a turn nor tokens; a background run's turn and
// end events count nothing (its result lines do).
func TestTerminalResults(t *testing.T) {
	ev := func(typ, data string) Event {
		return Event{SessionID: "s", InteractionID: "i", EventID: "e", Seq: 7, EventType: typ, EventData: json.RawMessage(data)}
	}
	opus := "claude-opus-5-5"
	for _, tc := range []struct {
		name string
		ev   Event
		want *Result
	}{
		{"a terminal turn", ev(wire.TypeTurnCompleted, `{"run_id":"r","turn":2,"mode":"terminal","status":"completed",
			"usage":{"input_tokens":30,"output_tokens":3},"total_cost_usd":9,
			"model_usage":{"claude-opus-5-5":{"input_tokens":20,"output_tokens":2,"cost_usd":9},"claude-haiku-4-5":{"input_tokens":10,"output_tokens":1},"<synthetic>":{}}}`),
			&Result{Key: "turn:r:2", Usage: Usage{InputTokens: 30, OutputTokens: 3}, Models: []ModelUsage{
				{Model: "claude-haiku-4-5", Usage: Usage{InputTokens: 10, OutputTokens: 1}}, {Model: opus, Usage: Usage{InputTokens: 20, OutputTokens: 2}}}}},
		{"a terminal turn naming no model", ev(wire.TypeTurnCompleted, `{"run_id":"r","turn":1,"mode":"terminal","usage":{"input_tokens":5}}`),
			&Result{Key: "turn:r:1", Usage: Usage{InputTokens: 5}}},
		{"a terminal turn without a run_id", ev(wire.TypeTurnCompleted, `{"turn":1,"mode":"terminal"}`), &Result{Key: "turn:seq:i:7:1"}},
		{"a background turn", ev(wire.TypeTurnCompleted, `{"run_id":"r","turn":1,"status":"completed","usage":{"input_tokens":5},"total_cost_usd":1}`), nil},
		{"a terminal end", ev(wire.TypeRunFailed, `{"run_id":"r","mode":"terminal","status":"failed","usage":{"input_tokens":5},"total_cost_usd":0.5,
			"model_usage":{"claude-opus-5-5":{"input_tokens":5,"cost_usd":0.4},"claude-haiku-4-5":{"input_tokens":1}}}`),
			&Result{Key: "end:r", CostOnly: true, CostUSD: 0.4, Models: []ModelUsage{{Model: opus, CostUSD: 0.4}}}},
		{"a terminal end with a total only", ev(wire.TypeRunCancelled, `{"run_id":"r","mode":"terminal","total_cost_usd":0.5}`),
			&Result{Key: "end:r", CostOnly: true, CostUSD: 0.5}},
		{"a terminal end without a cost", ev(wire.TypeRunCompleted, `{"run_id":"r","mode":"terminal","usage":{"input_tokens":5}}`), nil},
		{"a background end", ev(wire.TypeRunCompleted, `{"run_id":"r","total_cost_usd":0.5,"usage":{"input_tokens":5}}`), nil},
		{"a terminal start", ev(wire.TypeRunStarted, `{"run_id":"r","mode":"terminal","total_cost_usd":0.5}`), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FactsOf(tc.ev).Result
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Result = %+v, want %+v", got, tc.want)
			}
		})
	}
	// A cost-only result's rows never hold tokens, whatever its models say.
	c := CountedResult{Result: &Result{Key: "end:r", CostOnly: true, CostUSD: 1, Models: []ModelUsage{{Model: opus, Usage: Usage{InputTokens: 3}, CostUSD: 1}}}}
	if rows := c.Rows(); len(rows) != 1 || rows[0].Usage != (Usage{}) || rows[0].CostUSD != 1 || c.Result.Models[0].Usage.InputTokens != 3 {
		t.Errorf("cost-only rows %+v (the result's own left as it was: %+v)", rows, c.Result.Models)
	}
}
