package wire

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCheckReply holds every rule CheckReply enforces, for both of its
// callers at once: the helper refuses what breaks them and the backend
// never stores it. Each refusal is told apart by the words of its message
// (the rules have no sentinels: the message is what a client reads).
func TestCheckReply(t *testing.T) {
	tool, plan, question := OptionsFor(ApprovalTool), OptionsFor(ApprovalPlan), OptionsFor(ApprovalQuestion)
	const (
		notOption  = "is not one of this"
		inputWhere = "updated_input goes with allow or allow_always on a tool approval"
		inputShape = "updated_input must be a JSON object"
		answersFor = "answers are for a question"
		answersMap = "answers must map each question's text to its answer"
		needs      = "allow on a question needs answers"
	)
	for _, tc := range []struct {
		name     string
		kind     Kind
		options  []Decision
		decision Decision
		input    string // updated_input, raw
		answers  string // raw
		want     map[string]string
		wantErr  string // a part of the refusal; "" for none
	}{
		// The decision is one of the approval's options, exactly.
		{name: "allow on a tool", kind: ApprovalTool, options: tool, decision: DecisionAllow},
		{name: "allow_always on a tool", kind: ApprovalTool, options: tool, decision: DecisionAllowAlways},
		{name: "deny on a tool", kind: ApprovalTool, options: tool, decision: DecisionDeny},
		{name: "keep_planning on a plan", kind: ApprovalPlan, options: plan, decision: DecisionKeepPlanning},
		{name: "accept_edits on a plan", kind: ApprovalPlan, options: plan, decision: DecisionAcceptEdits},
		{name: "default on a plan", kind: ApprovalPlan, options: plan, decision: DecisionDefault},
		{name: "no decision", kind: ApprovalTool, options: tool, decision: "", wantErr: notOption},
		{name: "a word that is no decision", kind: ApprovalTool, options: tool, decision: "yes", wantErr: notOption},
		{name: "another case", kind: ApprovalTool, options: tool, decision: "Allow", wantErr: notOption},
		{name: "a plan's decision on a tool", kind: ApprovalTool, options: tool, decision: DecisionAcceptEdits, wantErr: notOption},
		{name: "a tool's decision on a plan", kind: ApprovalPlan, options: plan, decision: DecisionAllow, wantErr: notOption},
		{name: "allow_always on a question", kind: ApprovalQuestion, options: question, decision: DecisionAllowAlways, wantErr: notOption},
		{name: "not among the approval's own options", kind: ApprovalTool, options: []Decision{DecisionAllow, DecisionDeny},
			decision: DecisionAllowAlways, wantErr: notOption},
		{name: "no options at all", kind: ApprovalTool, options: nil, decision: DecisionDeny, wantErr: notOption},
		{name: "the decision is checked before what comes with it", kind: ApprovalTool, options: tool, decision: "maybe",
			input: `[1]`, answers: `{"a":"b"}`, wantErr: notOption},

		// updated_input: an object, only to allow a tool.
		{name: "allow with updated_input", kind: ApprovalTool, options: tool, decision: DecisionAllow, input: `{"command":"ls -l"}`},
		{name: "allow_always with updated_input", kind: ApprovalTool, options: tool, decision: DecisionAllowAlways, input: `{"command":"ls"}`},
		{name: "an empty object", kind: ApprovalTool, options: tool, decision: DecisionAllow, input: ` {} `},
		{name: "deny with updated_input", kind: ApprovalTool, options: tool, decision: DecisionDeny, input: `{"command":"rm -rf /"}`, wantErr: inputWhere},
		{name: "updated_input on a plan", kind: ApprovalPlan, options: plan, decision: DecisionAcceptEdits, input: `{"plan":"x"}`, wantErr: inputWhere},
		{name: "updated_input on a question", kind: ApprovalQuestion, options: question, decision: DecisionAllow,
			input: `{"x":1}`, answers: `{"Q?":"A"}`, wantErr: inputWhere},
		{name: "updated_input on an approval of no kind", kind: "", options: tool, decision: DecisionAllow, input: `{"x":1}`, wantErr: "on a -"},
		{name: "an array", kind: ApprovalTool, options: tool, decision: DecisionAllow, input: `[{"command":"ls"}]`, wantErr: inputShape},
		{name: "a string", kind: ApprovalTool, options: tool, decision: DecisionAllow, input: `"ls"`, wantErr: inputShape},
		{name: "a number", kind: ApprovalTool, options: tool, decision: DecisionAllow, input: `7`, wantErr: inputShape},
		{name: "not JSON", kind: ApprovalTool, options: tool, decision: DecisionAllow, input: `{command: ls}`, wantErr: inputShape},
		{name: "null is no updated_input", kind: ApprovalTool, options: tool, decision: DecisionDeny, input: `null`},
		{name: "blank is no updated_input", kind: ApprovalTool, options: tool, decision: DecisionDeny, input: " \n\t"},

		// answers: only for a question, text to text.
		{name: "answers to a question", kind: ApprovalQuestion, options: question, decision: DecisionAllow,
			answers: `{"Which color?":"Blue","Size?":"L"}`, want: map[string]string{"Which color?": "Blue", "Size?": "L"}},
		{name: "answers on a tool", kind: ApprovalTool, options: tool, decision: DecisionAllow, answers: `{"Q?":"A"}`, wantErr: answersFor},
		{name: "answers on a plan", kind: ApprovalPlan, options: plan, decision: DecisionDefault, answers: `{"Q?":"A"}`, wantErr: answersFor},
		{name: "null is no answers", kind: ApprovalTool, options: tool, decision: DecisionAllow, answers: `null`},
		{name: "an answer that is not text", kind: ApprovalQuestion, options: question, decision: DecisionAllow, answers: `{"Q?":1}`, wantErr: answersMap},
		{name: "answers as a list", kind: ApprovalQuestion, options: question, decision: DecisionAllow, answers: `["Blue"]`, wantErr: answersMap},
		{name: "answers as text", kind: ApprovalQuestion, options: question, decision: DecisionAllow, answers: `"Blue"`, wantErr: answersMap},
		{name: "answers not JSON", kind: ApprovalQuestion, options: question, decision: DecisionAllow, answers: `{Q: A}`, wantErr: answersMap},

		// Allowing a question needs its answers; denying it does not.
		{name: "allow on a question without answers", kind: ApprovalQuestion, options: question, decision: DecisionAllow, wantErr: needs},
		{name: "allow on a question with null answers", kind: ApprovalQuestion, options: question, decision: DecisionAllow, answers: `null`, wantErr: needs},
		{name: "allow on a question with no answer in them", kind: ApprovalQuestion, options: question, decision: DecisionAllow, answers: `{}`, wantErr: needs},
		{name: "deny on a question", kind: ApprovalQuestion, options: question, decision: DecisionDeny},
		{name: "deny on a question with answers", kind: ApprovalQuestion, options: question, decision: DecisionDeny,
			answers: `{"Q?":"A"}`, want: map[string]string{"Q?": "A"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckReply(tc.kind, tc.options, tc.decision, rawJSON(tc.input), rawJSON(tc.answers))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !maps.Equal(got, tc.want) {
					t.Errorf("answers %v, want %v", got, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
			if got != nil {
				t.Errorf("answers %v returned with a refusal", got)
			}
		})
	}
}

// TestCheckReplyMessages: a refusal says what was sent and what would do,
// and quotes a client's long decision only in part.
func TestCheckReplyMessages(t *testing.T) {
	_, err := CheckReply(ApprovalPlan, OptionsFor(ApprovalPlan), "allow", nil, nil)
	if err == nil || !strings.Contains(err.Error(), `"allow"`) || !strings.Contains(err.Error(), "plan approval") ||
		!strings.Contains(err.Error(), "accept_edits, default, keep_planning") {
		t.Errorf("unoffered decision: %v", err)
	}
	_, err = CheckReply("", OptionsFor(""), "nope", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "this - approval") {
		t.Errorf("an approval of no kind: %v", err)
	}
	long := Decision(strings.Repeat("é", 200))
	_, err = CheckReply(ApprovalTool, OptionsFor(ApprovalTool), long, nil, nil)
	if err == nil || strings.Contains(err.Error(), string(long)) || !strings.Contains(err.Error(), "…") || !utf8.ValidString(err.Error()) {
		t.Errorf("a long decision is quoted whole or cut inside a rune: %v", err)
	}
	_, err = CheckReply(ApprovalTool, OptionsFor(ApprovalTool), DecisionAllow, rawJSON(`[`+strings.Repeat(`"x",`, 50)+`"x"]`), nil)
	if err == nil || !strings.Contains(err.Error(), `["x","x"`) || len(err.Error()) > 200 {
		t.Errorf("a bad updated_input is quoted in part: %v", err)
	}
}

func rawJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}
