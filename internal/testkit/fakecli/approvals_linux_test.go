package fakecli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
)

// TestApprovals checks ModeApprovals' protocol, not its figures: stamped
// can_use_tool requests one at a time, a sample for each stamped allow, and
// a result that counts the denials.
func TestApprovals(t *testing.T) {
	samples := filepath.Join(t.TempDir(), "samples")
	p := start(t, fakecli.ModeApprovals, []fakecli.Option{fakecli.WithApprovals(4), fakecli.WithSampleFile(samples)})
	p.sendControl("init", map[string]any{"subtype": "initialize", "hooks": map[string]any{}})
	p.sendUser("go")
	p.expect("control_response")
	p.expect("system")

	// Allow with a stamp, deny, allow without a stamp, allow with a stamp.
	answers := []map[string]any{
		{"behavior": "allow", "updatedInput": map[string]any{"command": fakecli.ApprovalCommand, fakecli.AnswerStampField: 0}},
		{"behavior": "deny", "message": "no"},
		{"behavior": "allow", "updatedInput": map[string]any{"command": fakecli.ApprovalCommand}},
		{"behavior": "allow", "updatedInput": map[string]any{fakecli.AnswerStampField: 0}},
	}
	toolUseIDs := map[string]bool{}
	for i, a := range answers {
		req := p.expect("control_request")
		if req.str("request", "subtype") != "can_use_tool" || req.str("request", "tool_name") != "Bash" ||
			req.str("request", "input", "command") != fakecli.ApprovalCommand {
			t.Fatalf("request %d: %v", i, req)
		}
		if stamp := req.num("request", "input", fakecli.StampField); stamp <= 0 {
			t.Fatalf("request %d has no %s stamp: %v", i, fakecli.StampField, req)
		}
		toolUseIDs[req.str("request", "tool_use_id")] = true
		if up, ok := a["updatedInput"].(map[string]any); ok {
			if _, stamped := up[fakecli.AnswerStampField]; stamped {
				up[fakecli.AnswerStampField] = time.Now().UnixNano()
			}
		}
		p.sendControlResponse(req.str("request_id"), a)
	}
	if a := p.expect("assistant"); a.str("message", "content", 0, "text") != "Asked 4 times: 3 allowed, 1 denied." {
		t.Errorf("assistant: %v", a)
	}
	r := p.expect("result")
	checkSuccess(t, r, 5)
	if r.str("result") != "Asked 4 times: 3 allowed, 1 denied." {
		t.Errorf("result text %q", r.str("result"))
	}
	if d, _ := r.get("permission_denials").([]any); len(d) != 1 {
		t.Errorf("permission_denials %v, want the one denial", r.get("permission_denials"))
	}
	if len(toolUseIDs) != len(answers) {
		t.Errorf("tool_use_ids %v are not one per request", toolUseIDs)
	}
	b, err := os.ReadFile(samples)
	if err != nil {
		t.Fatalf("the sample file was not written before the result: %v", err)
	}
	lines := strings.Fields(string(b))
	if len(lines) != 2 {
		t.Fatalf("samples %q, want one for each of the two stamped allows", lines)
	}
	for _, l := range lines {
		if ns, err := strconv.ParseInt(l, 10, 64); err != nil || ns < 0 {
			t.Errorf("sample %q is not a non-negative number of nanoseconds", l)
		}
	}
	p.stdin.Close()
	p.expectEOF(0)
}
