package terminal

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// Transcript lines shaped as CLI 2.1.330 writes them (usage.go), reduced
// to the fields the rules read plus a few they must ignore.

const conv = "c0ffee00-0000-4000-8000-000000000001"

func tline(fields map[string]any) string {
	fields["sessionId"] = conv
	fields["version"] = "2.1.330"
	b, err := json.Marshal(fields)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func promptLine(promptID, text string) string {
	return tline(map[string]any{"type": "user", "uuid": "u-" + promptID, "promptId": promptID,
		"message": map[string]any{"role": "user", "content": text}})
}

func toolResultLine(promptID string) string {
	return tline(map[string]any{"type": "user", "uuid": "tr-" + promptID, "promptId": promptID,
		"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}}}})
}

func interruptLine(promptID, text string) string {
	return tline(map[string]any{"type": "user", "uuid": "int-" + promptID, "promptId": promptID, "interruptedMessageId": "m",
		"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}}})
}

// assistantLine is one content block's line of message msgID, answered
// under request reqID with usage u.
func assistantLine(uuid, msgID, reqID, model string, u wire.Usage, extra ...string) string {
	f := map[string]any{"type": "assistant", "uuid": uuid, "requestId": reqID,
		"message": map[string]any{"id": msgID, "model": model, "role": "assistant",
			"content": []any{map[string]any{"type": "text", "text": "block of " + msgID}},
			"usage": map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
				"cache_read_input_tokens": u.CacheReadInputTokens, "cache_creation_input_tokens": u.CacheCreationInputTokens,
				"server_tool_use": map[string]any{"web_search_requests": 0}, "service_tier": "standard"}}}
	for i := 0; i+1 < len(extra); i += 2 {
		f[extra[i]] = extra[i+1]
	}
	return tline(f)
}

var summaries atomic.Int64 // stop summaries' uuids

func stopSummary(hookErrors ...string) string {
	errs := []any{}
	for _, e := range hookErrors {
		errs = append(errs, e)
	}
	return tline(map[string]any{"type": "system", "subtype": "stop_hook_summary", "uuid": fmt.Sprint("sum-", summaries.Add(1)), "hookCount": 1,
		"hookErrors": errs, "preventedContinuation": false})
}

func turnDuration() string {
	return tline(map[string]any{"type": "system", "subtype": "turn_duration", "uuid": "dur", "durationMs": 565})
}

func costStateLine(session string, start int64, total float64, models map[string]float64) string {
	mu := map[string]any{}
	for m, c := range models {
		mu[m] = map[string]any{"inputTokens": 1, "outputTokens": 1, "costUSD": c}
	}
	b, _ := json.Marshal(map[string]any{"type": "cost-state", "sessionId": session, "totalCostUSD": total,
		"startTime": start, "totalDuration": 1000, "modelUsage": mu})
	return string(b)
}

func stopHook(promptID string) []byte {
	return []byte(fmt.Sprintf(`{"session_id":%q,"prompt_id":%q,"hook_event_name":"Stop","stop_hook_active":false}`, conv, promptID))
}

const opus, haiku = "claude-opus-5-5", "claude-haiku-4-5"

var (
	u1 = wire.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 7, CacheCreationInputTokens: 3}
	u2 = wire.Usage{InputTokens: 200, OutputTokens: 30}
	u3 = wire.Usage{InputTokens: 300, OutputTokens: 40, CacheReadInputTokens: 11}
)

// feed runs lines (and hook inputs, given as "hook:<event>:<json>")
// through a tracker and returns the turns it posted, finish's included.
func feed(t *testing.T, tr *usageTracker, cancelled bool, lines ...string) []turnEnd {
	t.Helper()
	var out []turnEnd
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "hook:"); ok {
			event, body, _ := strings.Cut(rest, ":")
			tr.hook(event, []byte(body))
			continue
		}
		before, after := tr.line([]byte(l))
		for _, e := range []*turnEnd{before, after} {
			if e != nil {
				out = append(out, *e)
			}
		}
	}
	if e := tr.finish(cancelled); e != nil {
		out = append(out, *e)
	}
	return out
}

func hook(event, body string) string { return "hook:" + event + ":" + body }

// The CLI writes one line per content block, each with the whole message's
// usage: a message counts once per (message ID, request ID); the same
// message ID under another request ID is another response and counts again.
func TestUsageDedupe(t *testing.T) {
	var tr usageTracker
	got := feed(t, &tr, false,
		promptLine("p1", "Run the echo"),
		assistantLine("a1", "msg_1", "req_1", opus, u1),
		assistantLine("a2", "msg_1", "req_1", opus, u1), // thinking block
		assistantLine("a3", "msg_1", "req_1", opus, u1), // tool_use block
		toolResultLine("p1"),
		assistantLine("a4", "msg_2", "req_2", opus, u2),
		assistantLine("a5", "msg_2", "req_2b", opus, u2), // the same message ID, another request
		hook("Stop", string(stopHook("p1"))),
		stopSummary(),
		turnDuration(), // the turn has ended: nothing more
		promptLine("p2", "Say more"),
		assistantLine("a6", "msg_3", "req_3", haiku, u3),
		assistantLine("a1", "msg_1", "req_1", opus, u1), // an earlier turn's message again: counted there
		stopSummary(),
	)
	want := []turnEnd{
		{Turn: 1, Status: wire.StatusCompleted, ConversationID: conv, Usage: u1.Add(u2).Add(u2),
			Models: map[string]wire.Usage{opus: u1.Add(u2).Add(u2)}},
		{Turn: 2, Status: wire.StatusCompleted, ConversationID: conv, Usage: u3, Models: map[string]wire.Usage{haiku: u3}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("turns\n got %+v\nwant %+v", got, want)
	}
	if wantTotal := u1.Add(u2).Add(u2).Add(u3); tr.total != wantTotal || tr.turns != 2 {
		t.Errorf("run total %+v over %d turns, want %+v over 2", tr.total, tr.turns, wantTotal)
	}
	if m := tr.runModels(); m[opus] != u1.Add(u2).Add(u2) || m[haiku] != u3 || len(m) != 2 {
		t.Errorf("run models %+v", m)
	}
}

// The last line of a message wins: an aborted stream's line carries the
// usage of message_start, a later line of the same message the final one.
func TestUsageLatestLineOfAMessageWins(t *testing.T) {
	var tr usageTracker
	partial := wire.Usage{InputTokens: 100, OutputTokens: 1}
	got := feed(t, &tr, false,
		promptLine("p1", "go"),
		assistantLine("a1", "msg_1", "req_1", opus, partial),
		assistantLine("a2", "msg_1", "req_1", opus, u1),
		stopSummary())
	if len(got) != 1 || got[0].Usage != u1 {
		t.Errorf("turns %+v, want one with %+v", got, u1)
	}
}

func TestUsageTurnEnds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cancelled bool
		lines     []string
		want      []turnEnd // Turn, Status, By, Reason, Stderr and Usage are compared
	}{
		{"interrupted while streaming", false, []string{
			promptLine("p1", "Slow please"),
			assistantLine("a1", "msg_1", "req_1", opus, wire.Usage{InputTokens: 100, OutputTokens: 1}, "isAbortedMidStream", "true"),
			interruptLine("p1", "[Request interrupted by user]"),
			promptLine("p2", "Next"),
			assistantLine("a2", "msg_2", "req_2", opus, u2),
			stopSummary(),
		}, []turnEnd{
			{Turn: 1, Status: wire.StatusInterrupted, By: wire.ByTTY, Reason: "interrupted in the terminal",
				Stderr: "[Request interrupted by user]", Usage: wire.Usage{InputTokens: 100, OutputTokens: 1}},
			{Turn: 2, Status: wire.StatusCompleted, Usage: u2},
		}},
		{"interrupted during a tool", false, []string{
			promptLine("p1", "Run a tool"),
			assistantLine("a1", "msg_1", "req_1", opus, u3),
			toolResultLine("p1"),
			interruptLine("p1", "[Request interrupted by user for tool use]"),
		}, []turnEnd{{Turn: 1, Status: wire.StatusInterrupted, By: wire.ByTTY, Reason: "interrupted in the terminal",
			Stderr: "[Request interrupted by user for tool use]", Usage: u3}}},
		{"interrupted before any answer", false, []string{
			promptLine("p1", "x"), interruptLine("p1", "[Request interrupted by user]"),
		}, []turnEnd{{Turn: 1, Status: wire.StatusInterrupted, By: wire.ByTTY, Reason: "interrupted in the terminal",
			Stderr: "[Request interrupted by user]"}}},
		{"an API error", false, []string{
			promptLine("p1", "Fail please"),
			hook("StopFailure", `{"prompt_id":"p1","error":"unknown","last_assistant_message":"API Error: 400 bad"}`),
			tline(map[string]any{"type": "assistant", "uuid": "e1", "isApiErrorMessage": true, "error": "unknown",
				"message": map[string]any{"id": "x", "model": "<synthetic>", "content": []any{map[string]any{"type": "text", "text": "API Error: 400 bad"}},
					"usage": map[string]any{"input_tokens": 0, "output_tokens": 0}}}),
		}, []turnEnd{{Turn: 1, Status: wire.StatusFailed, Reason: "API Error: 400 bad", Stderr: "API Error: 400 bad"}}},
		{"a Stop hook that blocks: the model goes on", false, []string{
			promptLine("p1", "go"),
			assistantLine("a1", "msg_1", "req_1", opus, u1),
			stopSummary("keep going: tests fail"),
			assistantLine("a2", "msg_2", "req_2", opus, u2),
			stopSummary(),
		}, []turnEnd{{Turn: 1, Status: wire.StatusCompleted, Usage: u1.Add(u2)}}},
		{"no summary: turn_duration after the Stop hook", false, []string{
			promptLine("p1", "go"),
			assistantLine("a1", "msg_1", "req_1", opus, u1),
			hook("Stop", string(stopHook("p1"))),
			turnDuration(),
		}, []turnEnd{{Turn: 1, Status: wire.StatusCompleted, Usage: u1}}},
		{"turn_duration without a Stop hook ends nothing", false, []string{
			promptLine("p1", "go"),
			assistantLine("a1", "msg_1", "req_1", opus, u1),
			turnDuration(),
			promptLine("p2", "again"),
		}, []turnEnd{{Turn: 1, Status: wire.StatusInterrupted, Reason: "the next prompt began before the CLI recorded the end of this turn", Usage: u1}}},
		{"no end line: the next prompt ends it, the Stop hook says how", false, []string{
			promptLine("p1", "go"),
			hook("Stop", string(stopHook("p1"))),
			assistantLine("a1", "msg_1", "req_1", opus, u1),
			promptLine("p2", "again"),
			assistantLine("a2", "msg_2", "req_2", opus, u2),
			hook("Stop", string(stopHook("p2"))),
		}, []turnEnd{
			{Turn: 1, Status: wire.StatusCompleted, Usage: u1},
			{Turn: 2, Status: wire.StatusCompleted, Usage: u2}, // at the run's end
		}},
		{"the CLI exits mid-turn", false, []string{
			promptLine("p1", "go"), assistantLine("a1", "msg_1", "req_1", opus, u1),
		}, []turnEnd{{Turn: 1, Status: wire.StatusInterrupted, Reason: "the Claude CLI exited before the turn ended", Usage: u1}}},
		{"claude-relay stops the CLI mid-turn", true, []string{
			promptLine("p1", "go"), assistantLine("a1", "msg_1", "req_1", opus, u1),
		}, []turnEnd{{Turn: 1, Status: wire.StatusInterrupted, By: wire.ByCancelled, Reason: "claude-relay stopped the Claude CLI during the turn", Usage: u1}}},
		{"a prompt with no work is no turn", false, []string{
			promptLine("p1", "go"), assistantLine("a1", "msg_1", "req_1", opus, u1), stopSummary(),
			promptLine("p2", "/compact"),
		}, []turnEnd{{Turn: 1, Status: wire.StatusCompleted, Usage: u1}}},
		{"synthetic messages are no work", false, []string{
			tline(map[string]any{"type": "assistant", "uuid": "s1", "message": map[string]any{"id": "s", "model": "<synthetic>",
				"content": []any{map[string]any{"type": "text", "text": "No response requested."}}, "usage": map[string]any{"input_tokens": 0}}}),
			promptLine("p1", "go"), assistantLine("a1", "msg_1", "req_1", opus, u1), stopSummary(),
		}, []turnEnd{{Turn: 1, Status: wire.StatusCompleted, Usage: u1}}},
		{"work with no prompt line of its own", false, []string{
			assistantLine("a1", "msg_1", "req_1", opus, u1), stopSummary(),
		}, []turnEnd{{Turn: 1, Status: wire.StatusCompleted, Usage: u1}}},
		{"a fork's copy of the conversation it started from", false, []string{
			// The copies keep their uuids and take the fork's first prompt ID.
			promptLine("p1", "first"),
			assistantLine("c1", "msg_old", "req_old", opus, u3, "requestSessionId", "the-original"),
			interruptLine("p1", "[Request interrupted by user]"),
			tline(map[string]any{"type": "user", "uuid": "old-2", "promptId": "p1", "message": map[string]any{"content": "second"}}),
			assistantLine("c2", "msg_old2", "req_old2", opus, u3), // no requestSessionId: the uuid tells
			tline(map[string]any{"type": "system", "subtype": "stop_hook_summary", "uuid": "old-sum", "hookErrors": []any{}}),
			tline(map[string]any{"type": "user", "uuid": "new-1", "promptId": "p1", "message": map[string]any{"content": "forked prompt"}}),
			assistantLine("a1", "msg_1", "req_1", opus, u1),
			stopSummary(),
		}, []turnEnd{{Turn: 1, Status: wire.StatusCompleted, Usage: u1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := usageTracker{}
			if strings.HasPrefix(tc.name, "a fork") {
				for _, uuid := range []string{"u-p1", "c1", "int-p1", "old-2", "c2", "old-sum"} {
					tr.copied.add(uuid)
				}
			}
			got := feed(t, &tr, tc.cancelled, tc.lines...)
			for i := range got {
				got[i].Models, got[i].ConversationID = nil, ""
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("turns\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// The CLI's totals carry over a resume and a fork (startTime with them):
// the run's cost is the difference.
func TestCostSince(t *testing.T) {
	base := costRecord{SessionID: "c1", StartTime: 1795774862005, TotalUSD: 0.0042186, Models: map[string]float64{opus: 0.0042186}}
	for _, tc := range []struct {
		name  string
		final costRecord
		base  *costRecord
		want  costRecord
	}{
		{"a new conversation", costRecord{SessionID: "c1", StartTime: 5, TotalUSD: 0.5, Models: map[string]float64{opus: 0.5}}, nil,
			costRecord{SessionID: "c1", StartTime: 5, TotalUSD: 0.5, Models: map[string]float64{opus: 0.5}}},
		{"a resume carries the totals over", costRecord{SessionID: "c1", StartTime: 1795774862005, TotalUSD: 0.0078186,
			Models: map[string]float64{opus: 0.0068186, haiku: 0.001}}, &base,
			costRecord{SessionID: "c1", StartTime: 1795774862005, TotalUSD: 0.0036, Models: map[string]float64{opus: 0.0026, haiku: 0.001}}},
		{"a fork too", costRecord{SessionID: "c2", StartTime: 1795774862005, TotalUSD: 0.0044, Models: map[string]float64{opus: 0.0044}}, &base,
			costRecord{SessionID: "c2", StartTime: 1795774862005, TotalUSD: 0.0001814, Models: map[string]float64{opus: 0.0001814}}},
		{"totals that started afresh", costRecord{SessionID: "c1", StartTime: 99, TotalUSD: 0.001, Models: map[string]float64{opus: 0.001}}, &base,
			costRecord{SessionID: "c1", StartTime: 99, TotalUSD: 0.001, Models: map[string]float64{opus: 0.001}}},
		{"no startTime: no less spent means carried", costRecord{SessionID: "c1", TotalUSD: 0.005, Models: map[string]float64{opus: 0.005}},
			&costRecord{TotalUSD: 0.004, Models: map[string]float64{opus: 0.004}},
			costRecord{SessionID: "c1", TotalUSD: 0.001, Models: map[string]float64{opus: 0.001}}},
		{"nothing spent", base, &base, costRecord{SessionID: "c1", StartTime: 1795774862005, Models: map[string]float64{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.final.since(tc.base)
			if got.SessionID != tc.want.SessionID || got.StartTime != tc.want.StartTime || !near(got.TotalUSD, tc.want.TotalUSD) ||
				len(got.Models) != len(tc.want.Models) {
				t.Fatalf("since = %+v, want %+v", got, tc.want)
			}
			for m, c := range tc.want.Models {
				if !near(got.Models[m], c) {
					t.Errorf("model %s: $%v, want $%v", m, got.Models[m], c)
				}
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// The baseline is the last cost-state of what the transcript held before
// the run; lines past the limit (this run's) and lines too long to read
// are not it.
func TestReadHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), conv+".jsonl")
	before := strings.Join([]string{
		promptLine("p1", "first"),
		assistantLine("a1", "msg_1", "req_1", opus, u1),
		costStateLine(conv, 7, 0.25, map[string]float64{opus: 0.25}),
		costStateLine(conv, 7, 0.5, map[string]float64{opus: 0.5}),
		`{"type":"attachment","content":"` + strings.Repeat("x", 200<<10) + `"}`,
	}, "\n") + "\n"
	after := costStateLine(conv, 7, 0.75, map[string]float64{opus: 0.75}) + "\n"
	if err := os.WriteFile(path, []byte(before+after), 0o600); err != nil {
		t.Fatal(err)
	}
	last, copied := readHistory(path, int64(len(before)), true)
	if last == nil || last.TotalUSD != 0.5 || last.StartTime != 7 || last.Models[opus] != 0.5 || last.SessionID != conv {
		t.Errorf("baseline %+v, want the $0.5 cost-state", last)
	}
	if !copied.has("u-p1") || !copied.has("a1") || len(copied) != 2 {
		t.Errorf("copied %v, want the uuids u-p1 and a1", copied)
	}
	if last, copied := readHistory(path, int64(len(before)), false); last == nil || copied != nil {
		t.Errorf("without copies: baseline %+v, copied %+v", last, copied)
	}
	var long int
	eachLine(strings.NewReader(before), 100<<10, func(l []byte) {
		if len(l) > 100<<10 {
			long++
		}
	})
	if long != 0 {
		t.Errorf("eachLine passed on %d lines over the limit", long)
	}
}

// The config file keeps each project's last conversation's totals.
func TestConfigCosts(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude.json")
	cfg := `{"numStartups":3,"projects":{
		"/w/a":{"hasTrustDialogAccepted":true,"lastCost":0.0042186,"lastStartTime":1795774862005,"lastSessionId":"c1",
			"lastModelUsage":{"claude-opus-5-5":{"inputTokens":600,"outputTokens":90,"costUSD":0.0042186}}},
		"/w/b":{"hasTrustDialogAccepted":true},
		"/w/c":{"lastSessionId":"c3"}}}`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	got := configCosts(path)
	want := map[string]costRecord{"c1": {SessionID: "c1", StartTime: 1795774862005, TotalUSD: 0.0042186, Models: map[string]float64{opus: 0.0042186}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("configCosts = %+v, want %+v", got, want)
	}
	if got := configCosts(filepath.Join(t.TempDir(), "none")); got != nil {
		t.Errorf("no file: %+v", got)
	}
}

func TestClaudePaths(t *testing.T) {
	if dir, cfg := claudePaths([]string{"HOME=/h"}); dir != "/h/.claude" || cfg != "/h/.claude.json" {
		t.Errorf("HOME only: %s %s", dir, cfg)
	}
	if dir, cfg := claudePaths([]string{"HOME=/h", "CLAUDE_CONFIG_DIR=/c"}); dir != "/c" || cfg != "/c/.claude.json" {
		t.Errorf("CLAUDE_CONFIG_DIR: %s %s", dir, cfg)
	}
}
