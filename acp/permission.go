package acp

import (
	"context"
	"encoding/json"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Permission option IDs: each is the approval decision it stands for, so
// the client's choice maps back without a table.
var (
	toolOptions = []acpsdk.PermissionOption{
		{OptionId: acpsdk.PermissionOptionId(wire.DecisionAllow), Name: "Allow once", Kind: acpsdk.PermissionOptionKindAllowOnce},
		{OptionId: acpsdk.PermissionOptionId(wire.DecisionAllowAlways), Name: "Allow always", Kind: acpsdk.PermissionOptionKindAllowAlways},
		{OptionId: acpsdk.PermissionOptionId(wire.DecisionDeny), Name: "Reject", Kind: acpsdk.PermissionOptionKindRejectOnce},
	}
	planOptions = []acpsdk.PermissionOption{
		{OptionId: acpsdk.PermissionOptionId(wire.DecisionAcceptEdits), Name: "Yes, and accept edits", Kind: acpsdk.PermissionOptionKindAllowAlways},
		{OptionId: acpsdk.PermissionOptionId(wire.DecisionDefault), Name: "Yes, and ask before each edit (manual)", Kind: acpsdk.PermissionOptionKindAllowOnce},
		{OptionId: acpsdk.PermissionOptionId(wire.DecisionKeepPlanning), Name: "No, keep planning", Kind: acpsdk.PermissionOptionKindRejectOnce},
	}
)

// permission asks the client about one approval and answers it. A request
// the client cancels, or that the turn's cancel withdrew, is a deny.
func (s *session) permission(ctx context.Context, ap *relay.Approval) {
	defer func() {
		s.mu.Lock()
		delete(s.perms, ap.ID)
		s.mu.Unlock()
	}()
	req, questions := s.permissionRequest(ap)
	resp, err := s.a.conn.RequestPermission(ctx, req)
	rep := relay.Reply{By: wire.ByACP}
	switch {
	case err != nil || resp.Outcome.Selected == nil:
		rep.Decision, rep.Reason = wire.DecisionDeny, "the editor cancelled the request"
		if ap.Kind == wire.ApprovalPlan {
			rep.Decision = wire.DecisionKeepPlanning
		}
	case ap.Kind == wire.ApprovalQuestion:
		rep = questionReply(string(resp.Outcome.Selected.OptionId), questions)
	default:
		rep.Decision = wire.Decision(resp.Outcome.Selected.OptionId)
		if rep.Decision == wire.DecisionKeepPlanning {
			rep.Reason = "keep planning"
		}
	}
	rep.By = wire.ByACP
	s.mu.Lock()
	runID := s.runID
	s.mu.Unlock()
	if err := s.a.opts.Core.Answer(runID, ap.ID, rep); err != nil {
		s.a.log.Debug("approval answer not taken", "session", s.id, "approval", ap.ID, "err", err)
	}
}

// permissionRequest shows the approval as the tool call it is about, with
// the options its kind offers. A question's options are its answers: ACP
// has no question dialog, and a permission dialog shows them as buttons.
func (s *session) permissionRequest(ap *relay.Approval) (acpsdk.RequestPermissionRequest, []wire.Question) {
	// The tool call as its tool_call showed it (kind, diff, locations),
	// titled with what will run in full.
	tc := permissionToolCall(ap.ToolUseID, ap.ToolName, ap.Input, s.sp.cwd)
	title := ap.Title
	tc.Title = &title
	req := acpsdk.RequestPermissionRequest{SessionId: acpsdk.SessionId(s.id), ToolCall: tc}
	switch ap.Kind {
	case wire.ApprovalPlan:
		req.Options = planOptions
		return req, nil
	case wire.ApprovalQuestion:
		qs := wire.Questions(ap.Questions)
		if len(qs) > 0 {
			q := qs[0]
			t := q.Question
			tc.Title = &t
			req.ToolCall = tc
			for i, o := range q.Options {
				req.Options = append(req.Options, acpsdk.PermissionOption{OptionId: acpsdk.PermissionOptionId(fmt.Sprintf("answer-%d", i)),
					Name: o.Label, Kind: acpsdk.PermissionOptionKindAllowOnce})
			}
		}
		req.Options = append(req.Options, acpsdk.PermissionOption{OptionId: acpsdk.PermissionOptionId(wire.DecisionDeny), Name: "Skip the question", Kind: acpsdk.PermissionOptionKindRejectOnce})
		return req, qs
	default:
		req.Options = toolOptions
		return req, nil
	}
}

// questionReply answers the first question with the chosen option; the
// others, which the dialog did not show, get an answer saying so.
func questionReply(optionID string, qs []wire.Question) relay.Reply {
	var i int
	if _, err := fmt.Sscanf(optionID, "answer-%d", &i); err != nil || len(qs) == 0 || i < 0 || i >= len(qs[0].Options) {
		return relay.Reply{Decision: wire.DecisionDeny, Reason: "the user skipped the question"}
	}
	answers := map[string]string{qs[0].Question: qs[0].Options[i].Label}
	for _, q := range qs[1:] {
		answers[q.Question] = "(not asked: the editor shows one question at a time; ask again if it matters)"
	}
	b, _ := json.Marshal(answers)
	return relay.Reply{Decision: wire.DecisionAllow, Answers: b}
}

// dashboardOnlyText tells the ACP client that an approval waits for the
// dashboard (serve.policy's approver: dashboard).
func dashboardOnlyText(ap *relay.Approval) string {
	t := fmt.Sprintf("%s waits for the dashboard: the central policy (rule %s) lets only an approve-scope token there decide.",
		ap.Title, ap.Policy.Rule)
	if ap.Policy.Reason != "" {
		t += " " + ap.Policy.Reason
	}
	return t
}
