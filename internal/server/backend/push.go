package backend

import (
	"context"
	"encoding/json"
	"net/url"
	"path"
	"strings"

	"github.com/claude-relay/claude-relay/internal/redact"
	"github.com/claude-relay/claude-relay/internal/server/push"
	"github.com/claude-relay/claude-relay/internal/server/store"
	relaywire "github.com/claude-relay/claude-relay/internal/wire"
)

// pusher sends pushes (a *push.Client); tests put a fake in.
type pusher interface {
	Send(ctx context.Context, m push.Message)
	Close(ctx context.Context) error
}

var _ pusher = (*push.Client)(nil)

// pushQueue bounds the approvals waiting for pushLoop. Ingestion never
// waits for a push: past this, pushes are dropped and logged.
const pushQueue = 256

// maxPushTitle bounds the approval title a push quotes, in runes.
const maxPushTitle = 120

// startPushes makes every new pending approval a push through p.
func (s *Server) startPushes(p pusher) {
	s.push = p
	s.pushes = make(chan string, pushQueue)
	s.bg.Add(1)
	go s.pushLoop()
}

// queuePushes hands the new relay.approval_requested events among evs
// (those res says were stored now, not duplicates) to pushLoop. Called
// after Append returned, so the approval is committed when the loop reads
// it.
func (s *Server) queuePushes(evs []store.Event, res []store.AppendResult) {
	s.noteSpend(res) // budgets.go: new spend may cross a budget's threshold
	if s.pushes == nil {
		return
	}
	for i, ev := range evs {
		if ev.EventType != relaywire.TypeApprovalRequested || i >= len(res) || res[i].Duplicate {
			continue
		}
		var req struct {
			ApprovalID string `json:"approval_id"`
		}
		if json.Unmarshal(ev.EventData, &req) != nil || req.ApprovalID == "" {
			continue
		}
		select {
		case s.pushes <- req.ApprovalID:
		default:
			s.throttled(&s.lastPushDropLog, func() {
				s.log.Warn("backend: too many approvals waiting for their push; dropping pushes", "queue", pushQueue)
			})
		}
	}
}

// pushLoop sends the queued approvals' pushes until the server stops.
func (s *Server) pushLoop() {
	defer s.bg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case id := <-s.pushes:
			s.pushOne(s.ctx, id)
		}
	}
}

// pushOne sends approval id's push when this process wins its claim (so
// replicas sharing the database push it once) and it still waits.
func (s *Server) pushOne(ctx context.Context, id string) {
	won, err := s.store.ClaimNotify(ctx, id)
	if err != nil {
		s.log.Warn("backend: cannot claim an approval's push; not sending it", "approval", id, "err", err)
		return
	}
	if !won {
		s.log.Debug("backend: another process sends this approval's push", "approval", id)
		return
	}
	a, err := s.store.Approval(ctx, id)
	if err != nil {
		s.log.Warn("backend: cannot read an approval for its push; not sending it", "approval", id, "err", err)
		return
	}
	if a.State != store.ApprovalPending {
		return // answered already: nothing to call anyone for
	}
	project := ""
	if sess, err := s.store.Session(ctx, a.SessionID); err == nil && sess.Project != "" {
		project = path.Base(sess.Project)
	}
	s.push.Send(ctx, s.pushFor(a, project))
}

// pushFor is the push of a pending approval: who asks what, in which
// project, and a link to it. The body names the tool and the project only:
// a command line carries whatever the agent put in it (a token in an
// environment assignment, mysql -pPASSWORD), and a push goes to a third
// party. With serve.notify_include_input the approval's short title (the
// command, the file) comes first, on one line, redacted (shortTitle).
func (s *Server) pushFor(a store.Approval, project string) push.Message {
	var m push.Message
	var what string
	switch relaywire.Kind(a.Kind) {
	case relaywire.ApprovalQuestion:
		m.Title = "Claude asks a question"
	case relaywire.ApprovalPlan:
		m.Title = "Claude has a plan to approve"
	default:
		m.Title = "Claude wants to run " + orDash(a.ToolName)
		what = orDash(a.ToolName)
	}
	if s.pushInput {
		what = s.shortTitle(a.Title)
	}
	var lines []string
	if what != "" {
		lines = append(lines, what)
	}
	if project != "" {
		lines = append(lines, "in "+project)
	}
	if len(lines) == 0 {
		lines = append(lines, "Open the dashboard to answer.")
	}
	m.Body = strings.Join(lines, "\n")
	if s.publicURL != "" {
		m.ClickURL = s.publicURL + "/approvals#" + (&url.URL{Fragment: a.ApprovalID}).EscapedFragment()
	}
	return m
}

// shortTitle is an approval's title on one line, without the configured
// tokens and credential-shaped words (redact.Text), cut to maxPushTitle
// runes.
func (s *Server) shortTitle(title string) string {
	title = strings.Join(strings.Fields(title), " ")
	var known []string
	for _, t := range s.serveTokens() {
		known = append(known, t.Token.Reveal())
	}
	for _, t := range s.tokens() {
		known = append(known, t.Reveal())
	}
	return push.ClipRunes(redact.Text(title, known), maxPushTitle)
}
