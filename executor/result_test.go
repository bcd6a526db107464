package executor

import (
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/streamjson"
)

func TestErrorTextSaysWhatTheCLISaid(t *testing.T) {
	tests := []struct {
		res  streamjson.Result
		want string
	}{
		{streamjson.Result{Subtype: streamjson.ResultErrorMaxTurns}, "Maximum turns reached"},
		{streamjson.Result{Subtype: streamjson.ResultErrorDuringExecution}, "Error during execution"},
		{streamjson.Result{Subtype: streamjson.ResultErrorDuringExecution,
			Errors: []string{"No conversation found with session ID: 11111111-2222-3333-4444-555555555555"}},
			"Error during execution: No conversation found with session ID: 11111111-2222-3333-4444-555555555555"},
		{streamjson.Result{Subtype: "success", IsError: true, Result: "Not logged in · Please run /login"},
			"Not logged in: set ANTHROPIC_API_KEY (and leave claude.disable_api_key off) or log in with `claude`; see `claude-relay doctor` (the CLI said: Not logged in · Please run /login)"},
		{streamjson.Result{Subtype: "error_other"}, "Error: error_other"},
	}
	for _, tt := range tests {
		got, cause := errorText(&tt.res)
		if got != tt.want {
			t.Errorf("errorText(%+v) = %q, want %q", tt.res, got, tt.want)
		}
		// The cause is typed: callers match it, never the words.
		if wantCause := strings.HasPrefix(tt.want, "Not logged in"); (cause == ErrNotLoggedIn) != wantCause {
			t.Errorf("errorText(%+v) cause %v, want ErrNotLoggedIn: %v", tt.res, cause, wantCause)
		}
	}
}

// A --resume of an unknown conversation ends with only a result that echoes
// the requested ID: it must not become the run's conversation.
func TestNoConversationFromAResultBeforeAnyTurn(t *testing.T) {
	line := `{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":0,` +
		`"session_id":"11111111-2222-3333-4444-555555555555","errors":["No conversation found with session ID: 11111111-2222-3333-4444-555555555555"]}`
	m, err := streamjson.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	var a aggregator
	a.add(m)
	if a.conversationID != "" {
		t.Errorf("conversation %q from a result with no turn", a.conversationID)
	}
	ok := strings.Replace(line, `"num_turns":0`, `"num_turns":1`, 1)
	if m, err = streamjson.Decode([]byte(ok)); err != nil {
		t.Fatal(err)
	}
	a.add(m)
	if a.conversationID != "11111111-2222-3333-4444-555555555555" {
		t.Errorf("conversation %q from a result after a turn", a.conversationID)
	}
}

// The CLI's synthetic error message is not an answer: stderr says what to do.
func TestSyntheticErrorIsNoAnswer(t *testing.T) {
	var a aggregator
	for _, line := range []string{
		`{"type":"assistant","error":"authentication_failed","session_id":"s","message":{"role":"assistant","model":"<synthetic>","content":[{"type":"text","text":"Not logged in · Please run /login"}]}}`,
		`{"type":"assistant","session_id":"s","message":{"role":"assistant","content":[{"type":"text","text":"a real answer"}]}}`,
	} {
		m, err := streamjson.Decode([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		a.add(m)
	}
	if got := strings.TrimSpace(a.stdout.String()); got != "a real answer" {
		t.Errorf("stdout %q", got)
	}
}
