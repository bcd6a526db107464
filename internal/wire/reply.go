package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// OptionsFor is what a decision may be, by approval kind, when the
// approval names no options of its own.
func OptionsFor(kind Kind) []Decision {
	switch kind {
	case ApprovalPlan:
		return []Decision{DecisionAcceptEdits, DecisionDefault, DecisionKeepPlanning}
	case ApprovalQuestion:
		return []Decision{DecisionAllow, DecisionDeny}
	default:
		return []Decision{DecisionAllow, DecisionAllowAlways, DecisionDeny}
	}
}

// CheckReply holds a reply to the rules any decision on an approval of
// kind kind obeys, wherever it comes from (the helper's front ends, the
// backend's API): one of options; updated_input an object, only to allow
// a tool; answers only for a question, which needs them to be allowed. It
// returns the answers, decoded. One copy, so the backend never stores a
// decision the helper would refuse.
func CheckReply(kind Kind, options []Decision, decision Decision, updatedInput, answers json.RawMessage) (map[string]string, error) {
	if !slices.Contains(options, decision) {
		return nil, fmt.Errorf("decision %q is not one of this %s approval's options (%s)", clip(string(decision)), orDash(string(kind)), JoinDecisions(options))
	}
	allow := decision.Allows()
	if Present(updatedInput) {
		if !allow || kind != ApprovalTool {
			return nil, fmt.Errorf("updated_input goes with allow or allow_always on a tool approval, not %s on a %s", decision, orDash(string(kind)))
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(updatedInput, &m) != nil || m == nil {
			return nil, fmt.Errorf("updated_input must be a JSON object (the tool's whole input, e.g. {\"command\": \"…\"}), got %s", preview(updatedInput))
		}
	}
	var out map[string]string
	if Present(answers) {
		if kind != ApprovalQuestion {
			return nil, fmt.Errorf("answers are for a question (kind question); this is a %s approval", orDash(string(kind)))
		}
		if err := json.Unmarshal(answers, &out); err != nil {
			return nil, fmt.Errorf("answers must map each question's text to its answer, e.g. {\"Which color?\": \"Blue\"}, got %s", preview(answers))
		}
	}
	if kind == ApprovalQuestion && allow && len(out) == 0 {
		return nil, errors.New(`allow on a question needs answers: {"<question text>": "<answer>"}`)
	}
	return out, nil
}

// Present says whether a reply's optional JSON value was given: absent,
// blank and null all mean not.
func Present(b json.RawMessage) bool {
	t := bytes.TrimSpace(b)
	return len(t) > 0 && string(t) != "null"
}

// preview is a short quote of a bad value for an error message.
func preview(b json.RawMessage) string {
	s := string(bytes.TrimSpace(b))
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

// clip keeps a refused decision's quote short: it is whatever the caller
// sent.
func clip(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	for i := n; i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i] + "…"
		}
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// JoinDecisions lists decisions for a message: "allow, deny".
func JoinDecisions(ds []Decision) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = string(d)
	}
	return strings.Join(s, ", ")
}
