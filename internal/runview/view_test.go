package runview

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/relay"
)

func TestEventsLine(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dashboard string
		embedded  bool
		want      string
	}{
		{"embedded default", "http://127.0.0.1:40393", true,
			"events stored; see them with: claude-relay serve, then open http://127.0.0.1:8787/sessions/s 1"},
		{"running serve", "http://127.0.0.1:8787", false, "events: http://127.0.0.1:8787/sessions/s 1"},
		{"configured backend", "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := strings.ReplaceAll(tc.want, "s 1", "s%201")
			if got := EventsLine(tc.dashboard, tc.embedded, "127.0.0.1:8787", "s 1"); got != want {
				t.Errorf("EventsLine = %q, want %q", got, want)
			}
		})
	}
}

// `run` links straight to the session's page, on the live line and at the
// end, with the session ID escaped so that any ID opens its page.
func TestRunLinksToTheSession(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dashboard string
		embedded  bool
		want      []string
	}{
		{"embedded default", "http://127.0.0.1:40393", true, []string{
			"run r1 started in /w · events: http://127.0.0.1:40393/sessions/my%20session%2F1",
			"events stored; see them with: claude-relay serve, then open http://127.0.0.1:8787/sessions/my%20session%2F1"}},
		{"running serve", "http://127.0.0.1:8787/", false, []string{
			"run r1 started in /w · events: http://127.0.0.1:8787/sessions/my%20session%2F1",
			"events: http://127.0.0.1:8787/sessions/my%20session%2F1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			v := New(Options{Stdout: &out, Stderr: io.Discard, Dashboard: tc.dashboard, Embedded: tc.embedded, ServeAddr: "127.0.0.1:8787"})
			v.Event(relay.Event{Kind: relay.KindStarted, RunID: "r1", SessionID: "my session/1", Cwd: "/w", Live: 1})
			v.Event(relay.Event{Kind: relay.KindEnded, RunID: "r1", SessionID: "my session/1", End: &relay.End{Status: "completed"}})
			<-v.Done()
			for _, want := range tc.want {
				if !screenHasLine(out.String(), want) {
					t.Errorf("no line %q in:\n%s", want, out.String())
				}
			}
		})
	}
}

// The terminal's question ends with who decided instead.
func TestGoneLine(t *testing.T) {
	for _, tc := range []struct {
		d      *relay.Decided
		reason string
		want   string
	}{
		{&relay.Decided{By: "dashboard", ByDetail: "dashboard:phone", Decision: "allow"}, "already decided by dashboard (phone): allow", "decided in the dashboard: allow"},
		{&relay.Decided{By: "timeout", Decision: "deny"}, "timed out: denied and the turn stopped", "timed out: denied and the turn stopped"},
		{&relay.Decided{By: "cancelled", Decision: "deny"}, "cancelled", "cancelled"},
		{&relay.Decided{By: "extension", Decision: "deny"}, "", "decided by extension: deny"},
		{nil, "", "no longer pending"},
	} {
		if got := goneLine(tc.d, tc.reason); got != tc.want {
			t.Errorf("goneLine(%+v, %q) = %q, want %q", tc.d, tc.reason, got, tc.want)
		}
	}
}

func TestViewRendering(t *testing.T) {
	stream := func(line string) extension.Event {
		return extension.Event{Event: extension.EventStream, Payload: json.RawMessage(line)}
	}
	long := strings.Repeat("word ", 40) + "&& rm -rf /tmp/victim"
	tests := []struct {
		name      string
		approvals bool
		ev        extension.Event
		want      string
	}{
		{"auto-allowed full command", false, stream(`{"type":"assistant","message":{"role":"assistant","content":[` +
			`{"type":"tool_use","id":"t","name":"Bash","input":{"command":"` + long + `","description":"Harmless"}}]}}`),
			"● $ " + long + " — Harmless  (auto-allowed)\n"},
		{"asked, no mark", true, stream(`{"type":"assistant","message":{"role":"assistant","content":[` +
			`{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls\necho two"}}]}}`),
			"● $ ls\n  echo two\n"},
		{"tool output folded", false, stream(`{"type":"user","message":{"role":"user","content":[` +
			`{"type":"tool_result","tool_use_id":"t","content":"1\n2\n3\n4\n5\n6\n"}]}}`),
			"  │ 1\n  │ 2\n  │ 3\n  │ 4\n  │ … 2 more lines\n"},
		{"tool error", false, stream(`{"type":"user","message":{"role":"user","content":[` +
			`{"type":"tool_result","tool_use_id":"t","is_error":true,"content":"boom"}]}}`),
			"  ✗ boom\n"},
		{"api retry", false, stream(`{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":4000,"error_status":529,"error":"overloaded"}`),
			"↻ API error 529 (overloaded): retrying in 4s, attempt 3 of 10\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			v := New(Options{Stdout: &out, Approvals: tt.approvals})
			v.render(tt.ev)
			if out.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", out.String(), tt.want)
			}
		})
	}
}

func TestApprovalQuestionShowsWhatWillRun(t *testing.T) {
	long := "echo harmless-looking-prefix " + strings.Repeat("x", 200) + " && rm -rf /tmp/victim"
	q := approvalQuestion(extension.Event{ToolName: "Bash", Title: "$ " + long + " — Run echo harmless-looking-prefix",
		Input: json.RawMessage(`{"command":"` + long + `"}`)})
	if want := "? $ " + long + " — Run echo harmless-looking-prefix\n"; q != want {
		t.Errorf("question\n%q\nwant\n%q", q, want)
	}
	q = approvalQuestion(extension.Event{ToolName: "Edit",
		Input: json.RawMessage(`{"file_path":"/w/a.go","old_string":"x := 1","new_string":"x := 2"}`)})
	if want := "? Edit /w/a.go\n  -x := 1\n  +x := 2\n"; q != want {
		t.Errorf("question\n%q\nwant\n%q", q, want)
	}
}

func TestFinalFigures(t *testing.T) {
	one := 0.0001
	var out strings.Builder
	v := New(Options{Stdout: &out})
	v.final(extension.Event{Event: extension.EventRunCompleted, SessionID: "s", Result: &extension.Result{DurationMS: 1000},
		Usage: &extension.Usage{InputTokens: 1, OutputTokens: 1}, TotalCostUSD: &one})
	if !strings.Contains(out.String(), "1s · 1 token in, 1 out · $0.0001") {
		t.Errorf("figures %q", out.String())
	}
}

// A run that failed before the model answered has nothing to resume.
func TestNoResumeHintForARunWithNothingToResume(t *testing.T) {
	var out strings.Builder
	v := New(Options{Stdout: &out})
	v.final(extension.Event{Event: extension.EventRunFailed, SessionID: "s", ConversationID: "c",
		Result: &extension.Result{ExitCode: 1, Stderr: "Not logged in: …"}, Usage: &extension.Usage{}})
	if strings.Contains(out.String(), "resume:") || strings.Contains(out.String(), "conversation c") {
		t.Errorf("resume hint for a failed run with no answer:\n%s", out.String())
	}
	out.Reset()
	v.final(extension.Event{Event: extension.EventRunFailed, SessionID: "s", ConversationID: "c",
		Result: &extension.Result{ExitCode: 1}, Usage: &extension.Usage{InputTokens: 5, OutputTokens: 2}})
	if !strings.Contains(out.String(), "resume: claude-relay run --session s --resume c") {
		t.Errorf("no resume hint for a failed run that had turns:\n%s", out.String())
	}
}

func screenHasLine(screen, line string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if strings.TrimRight(l, " ") == line {
			return true
		}
	}
	return false
}

// A failed run whose error line already said why ends without saying it
// again; one that did not says why on its end line.
func TestFailedRunSaysWhyOnce(t *testing.T) {
	why := "billing guard: the Claude CLI would bill this run to API key ANTHROPIC_API_KEY"
	for _, tc := range []struct {
		name  string
		error bool
		want  string
	}{
		{"said before", true, "run failed (exit 78)\n"},
		{"not said", false, "run failed (exit 78): " + why + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			v := New(Options{Stdout: &out})
			if tc.error {
				v.render(extension.Event{Event: extension.EventError, Code: "billing_refused", Message: why})
			}
			v.final(extension.Event{Event: extension.EventRunFailed, SessionID: "s", Result: &extension.Result{ExitCode: 78, Stderr: why}})
			if !strings.Contains(out.String(), tc.want) || strings.Count(out.String(), why) != 1 {
				t.Errorf("output:\n%s\nwant the line %q and the reason once", out.String(), tc.want)
			}
		})
	}
}
