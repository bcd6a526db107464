package backend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"

	relaywire "github.com/claude-relay/claude-relay/internal/wire"
)

// Bounds of GET /api/approvals/decisions.
const (
	defaultDecisionsWait = 25 * time.Second
	maxDecisionsWait     = 60 * time.Second
	maxDecisionIDs       = 100
	// defaultRecheck is how often a waiting poll asks the store whatever
	// the notifications say: a safety net for a lost one, and the only way
	// to hear of a decision made by another process on one SQLite file
	// (its Subscribe is in-process), where the issue wants a dashboard
	// decision at the helper within a second. One indexed read per waiting
	// helper per tick.
	defaultRecheck = 500 * time.Millisecond
)

// handleDecisionsWait is GET /api/approvals/decisions?ids=a,b,c&wait=25s,
// the helper's long-poll (package remote): it answers at once when any of
// ids has a remote decision, else when one arrives (the store's
// notifications wake it, from any replica on the same database; it also
// asks again every recheck), else with an empty list when wait ends or the
// server stops.
func (s *Server) handleDecisionsWait(w http.ResponseWriter, r *http.Request) {
	ids, wait, err := decisionsParams(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx := r.Context()
	// Subscribe before the first read, so a decision made in between still
	// wakes this poll.
	sub := s.hub.subscribe("")
	if sub != nil {
		defer s.hub.unsubscribe(sub)
	}
	ws := &decisionWait{s: s, ids: ids, approvals: make(map[string]store.Approval)}
	ws.resolve(ctx)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	recheck := time.NewTicker(s.recheck)
	defer recheck.Stop()
	var wake <-chan struct{}
	if sub != nil {
		wake = sub.wake
	}
	for {
		ds, err := s.store.Decisions(ctx, ids)
		if err != nil {
			s.storeError(w, r, err)
			return
		}
		if len(ds) > 0 || wait == 0 || sub == nil {
			writeJSON(w, http.StatusOK, relaywire.RemoteDecisions{Decisions: ws.describe(ctx, ds)})
			return
		}
	waiting:
		for {
			select {
			case <-ctx.Done():
				return // the helper left; nobody reads an answer
			case <-s.ctx.Done():
				writeJSON(w, http.StatusOK, relaywire.RemoteDecisions{Decisions: []relaywire.RemoteDecision{}})
				return
			case <-deadline.C:
				wait = 0 // one last look, then answer
				break waiting
			case <-recheck.C:
				ws.resolve(ctx)
				break waiting
			case <-wake:
				if ws.concerned(sub.take()) {
					break waiting
				}
			}
		}
	}
}

// decisionsParams reads ?ids= (comma-separated, 1 to maxDecisionIDs) and
// ?wait= (a duration such as 25s, or seconds; at most maxDecisionsWait).
func decisionsParams(q url.Values) ([]string, time.Duration, error) {
	var ids []string
	for _, v := range q["ids"] {
		for id := range strings.SplitSeq(v, ",") {
			if id = strings.TrimSpace(id); id != "" && !slices.Contains(ids, id) {
				if len(id) > maxApprovalID {
					return nil, 0, fmt.Errorf("ids must be approval IDs of at most %d bytes, got %q", maxApprovalID, clip(id))
				}
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return nil, 0, errors.New("ids must list the approval IDs to wait for, comma-separated (?ids=a,b)")
	}
	if len(ids) > maxDecisionIDs {
		return nil, 0, fmt.Errorf("ids lists %d approval IDs; at most %d per poll", len(ids), maxDecisionIDs)
	}
	wait := defaultDecisionsWait
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			n, nerr := strconv.Atoi(v)
			d, err = time.Duration(n)*time.Second, nerr
		}
		if err != nil || d < 0 {
			return nil, 0, fmt.Errorf("wait must be a duration such as 25s (or a number of seconds), at most %v, got %q", maxDecisionsWait, clip(v))
		}
		wait = min(d, maxDecisionsWait)
	}
	return ids, wait, nil
}

// decisionWait is what one poll knows of its approvals: their sessions,
// so that only notifications about those wake it into a store read.
type decisionWait struct {
	s          *Server
	ids        []string
	approvals  map[string]store.Approval // by ID, once found
	sessions   map[string]bool
	unresolved int // ids not found yet (their request may still be on its way)
}

// resolve looks up the approvals not found yet.
func (ws *decisionWait) resolve(ctx context.Context) {
	if ws.sessions != nil && ws.unresolved == 0 {
		return
	}
	if ws.sessions == nil {
		ws.sessions = make(map[string]bool)
	}
	ws.unresolved = 0
	for _, id := range ws.ids {
		if _, ok := ws.approvals[id]; ok {
			continue
		}
		a, err := ws.s.store.Approval(ctx, id)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				ws.s.log.Debug("backend: decisions poll: cannot read an approval; polling it", "approval", id, "err", err)
			}
			ws.unresolved++
			continue
		}
		ws.approvals[id] = a
		ws.sessions[a.SessionID] = true
	}
}

// concerned reports whether a wake-up may matter: a session of ours
// changed (a decision notifies its approval's session), notifications may
// have been lost (resync), or some approval's session is not known yet.
func (ws *decisionWait) concerned(changed []string, resync bool) bool {
	if resync || ws.unresolved > 0 {
		return true
	}
	return slices.ContainsFunc(changed, func(id string) bool { return ws.sessions[id] })
}

// describe adds run and session to each decision, from its approval.
func (ws *decisionWait) describe(ctx context.Context, ds []store.Decision) []relaywire.RemoteDecision {
	out := make([]relaywire.RemoteDecision, 0, len(ds))
	for _, d := range ds {
		a, ok := ws.approvals[d.ApprovalID]
		if !ok {
			var err error
			if a, err = ws.s.store.Approval(ctx, d.ApprovalID); err != nil {
				ws.s.log.Debug("backend: decisions poll: cannot read a decided approval", "approval", d.ApprovalID, "err", err)
			}
		}
		out = append(out, relaywire.RemoteDecision{ApprovalID: d.ApprovalID, DecisionID: d.DecisionID, Decision: relaywire.Decision(d.Decision),
			Reason: d.Reason, UpdatedInput: d.UpdatedInput, Answers: d.Answers, By: d.By, DecidedAt: d.DecidedAt,
			RunID: a.RunID, SessionID: a.SessionID, InputSHA256: relaywire.InputDigest(a.Input)})
	}
	return out
}
