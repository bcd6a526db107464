package relay

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

func TestReplyDecisions(t *testing.T) {
	tool := approvalOf(executor.ApprovalRequest{ApprovalID: "t", ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)})
	plan := approvalOf(executor.ApprovalRequest{ApprovalID: "p", ToolName: "ExitPlanMode", Input: json.RawMessage(`{"plan":"do it"}`)})
	question := approvalOf(executor.ApprovalRequest{ApprovalID: "q", ToolName: "AskUserQuestion", Input: json.RawMessage(`{"questions":[]}`)})
	if tool.Kind != wire.ApprovalTool || plan.Kind != wire.ApprovalPlan || question.Kind != wire.ApprovalQuestion {
		t.Fatalf("kinds %s %s %s", tool.Kind, plan.Kind, question.Kind)
	}
	edited := json.RawMessage(`{"command":"ls -la"}`)
	tests := []struct {
		a       *Approval
		rep     Reply
		want    executor.Decision
		wantErr string
	}{
		{tool, Reply{Decision: "allow"}, executor.Decision{Allow: true}, ""},
		{tool, Reply{Decision: "allow", UpdatedInput: edited}, executor.Decision{Allow: true, UpdatedInput: edited}, ""},
		{tool, Reply{Decision: "allow_always"}, executor.Decision{Allow: true, Always: true}, ""},
		{tool, Reply{Decision: "deny", Reason: "no", Interrupt: true}, executor.Decision{Reason: "no", Interrupt: true}, ""},
		{tool, Reply{Decision: "allow", UpdatedInput: json.RawMessage(`null`)}, executor.Decision{Allow: true}, ""},
		{plan, Reply{Decision: "accept_edits"}, executor.Decision{Allow: true, Mode: streamjson.PermissionModeAcceptEdits}, ""},
		{plan, Reply{Decision: "default"}, executor.Decision{Allow: true, Mode: streamjson.PermissionModeDefault}, ""},
		{plan, Reply{Decision: "keep_planning", Reason: "tests first"}, executor.Decision{Reason: "tests first"}, ""},
		{question, Reply{Decision: "allow", Answers: json.RawMessage(`{"Which?":"A"}`)}, executor.Decision{Allow: true, Answers: map[string]string{"Which?": "A"}}, ""},
		{question, Reply{Decision: "deny"}, executor.Decision{}, ""},

		{tool, Reply{Decision: "accept_edits"}, executor.Decision{}, `decision "accept_edits" is not one of this tool approval's options (allow, allow_always, deny)`},
		{plan, Reply{Decision: "allow"}, executor.Decision{}, `options (accept_edits, default, keep_planning)`},
		{tool, Reply{Decision: "allow", UpdatedInput: json.RawMessage(`["ls"]`)}, executor.Decision{}, `updated_input must be a JSON object`},
		{tool, Reply{Decision: "deny", UpdatedInput: edited}, executor.Decision{}, `updated_input goes with allow or allow_always`},
		{plan, Reply{Decision: "default", UpdatedInput: edited}, executor.Decision{}, `updated_input goes with allow or allow_always`},
		{tool, Reply{Decision: "allow", Answers: json.RawMessage(`{"a":"b"}`)}, executor.Decision{}, `answers are for a question`},
		{question, Reply{Decision: "allow"}, executor.Decision{}, `allow on a question needs answers`},
		{question, Reply{Decision: "allow", Answers: json.RawMessage(`{"a":1}`)}, executor.Decision{}, `answers must map each question's text to its answer`},
		{tool, Reply{Decision: "allow", Interrupt: true}, executor.Decision{}, `interrupt goes with deny, not allow`},
		{plan, Reply{Decision: "accept_edits", Interrupt: true}, executor.Decision{}, `interrupt goes with keep_planning, not accept_edits`},
	}
	for _, tt := range tests {
		got, err := tt.rep.decision(tt.a)
		switch {
		case tt.wantErr != "":
			if !errors.Is(err, ErrBadReply) || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "approval "+tt.a.ID+" is still pending") {
				t.Errorf("%s %+v: error %v, want %q", tt.a.Kind, tt.rep, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%s %+v: %v", tt.a.Kind, tt.rep, err)
		case !reflect.DeepEqual(got, tt.want):
			t.Errorf("%s %+v: %+v, want %+v", tt.a.Kind, tt.rep, got, tt.want)
		}
	}
}
