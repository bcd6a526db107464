package backend

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/claude-relay/claude-relay/internal/budget"
	"github.com/claude-relay/claude-relay/internal/server/push"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/tokens"
)

// budgetCheckGap spaces the budget checks that new spend wakes, so a busy
// ingest costs at most one usage query per budget window per gap.
const budgetCheckGap = time.Second

// budgets is the server's spend caps (serve.budgets, issue 26).
type budgets struct {
	rules []budget.Rule
	wake  chan struct{} // new events were stored; nil without rules or pushes
}

// handleBudgets is GET /api/budgets: every configured budget's spend in its
// period now. A helper asks it with the token it posts with (ingest) before
// each run and turn, the dashboard with read.
func (s *Server) handleBudgets(w http.ResponseWriter, r *http.Request) {
	if p := principalOf(r); p == nil || !(p.scopes.Has(tokens.Read) || p.scopes.Has(tokens.Ingest)) {
		if p != nil {
			s.forbidden(w, r, p, tokens.Read)
			return
		}
		s.unauthorized(w, r, false)
		return
	}
	start := time.Now()
	st, err := s.budgetStatus(r.Context(), start)
	setServerTiming(w, time.Since(start))
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, budget.Response{Budgets: st, Now: start.UTC()})
}

// budgetStatus is each budget's status at now. Spend is the store's usage
// rows in the budget's period (by each result's own timestamp), summed over
// the projects the budget covers; budgets with the same period share one
// query.
func (s *Server) budgetStatus(ctx context.Context, now time.Time) ([]budget.Status, error) {
	type window struct{ from, to time.Time }
	rows := map[window][]store.UsageRow{}
	out := make([]budget.Status, 0, len(s.budgets.rules))
	for _, rule := range s.budgets.rules {
		from, to := rule.Window(now)
		wn := window{from, to}
		rs, ok := rows[wn]
		if !ok {
			var err error
			if rs, err = s.store.Usage(ctx, store.UsageQuery{From: from, To: to}); err != nil {
				return nil, err
			}
			rows[wn] = rs
		}
		spent := 0.0
		for _, row := range rs {
			if rule.Covers(row.Project) {
				spent += row.CostUSD
			}
		}
		out = append(out, budget.StatusOf(rule, spent, now))
	}
	return out, nil
}

// startBudgetPushes pushes each budget's warning and exhaustion, once per
// threshold per period across replicas (store.ClaimNotice), checking after
// new events were stored.
func (s *Server) startBudgetPushes() {
	if s.push == nil || len(s.budgets.rules) == 0 {
		return
	}
	s.budgets.wake = make(chan struct{}, 1)
	s.bg.Add(1)
	go s.budgetLoop()
}

// noteSpend wakes the budget loop after an Append stored new events.
func (s *Server) noteSpend(res []store.AppendResult) {
	if s.budgets.wake == nil {
		return
	}
	for _, r := range res {
		if !r.Duplicate {
			select {
			case s.budgets.wake <- struct{}{}:
			default: // a check is pending already
			}
			return
		}
	}
}

func (s *Server) budgetLoop() {
	defer s.bg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.budgets.wake:
		}
		s.pushBudgets(s.ctx, time.Now())
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(budgetCheckGap):
		}
	}
}

// pushBudgets sends the push of every budget at or over a threshold whose
// push for this period no process sent yet.
func (s *Server) pushBudgets(ctx context.Context, now time.Time) {
	st, err := s.budgetStatus(ctx, now)
	if err != nil {
		s.log.Warn("backend: cannot read the budgets' spend; no budget pushes for now", "err", err)
		return
	}
	for _, b := range st {
		if b.State == budget.OK {
			continue
		}
		// The warning is claimed too when a budget goes straight to
		// exhausted, so one that was exhausted is not warned about after.
		states := []budget.State{budget.Warning}
		if b.State == budget.Exhausted {
			states = append(states, budget.Exhausted)
		}
		var send budget.State
		for _, state := range states {
			won, err := s.store.ClaimNotice(ctx, budgetNoticeKey(b, state))
			if err != nil {
				s.log.Warn("backend: cannot claim a budget's push; not sending it", "budget", b.Project, "err", err)
				return
			}
			if won {
				send = state
			}
		}
		if send != "" {
			s.push.Send(ctx, s.budgetPush(b, send))
		}
	}
}

// budgetNoticeKey names a budget's push for one threshold in one period.
func budgetNoticeKey(b budget.Status, state budget.State) string {
	return "budget\x00" + b.Project + "\x00" + string(b.Period) + "\x00" + b.PeriodStart.UTC().Format(time.RFC3339) + "\x00" + string(state)
}

func (s *Server) budgetPush(b budget.Status, state budget.State) push.Message {
	scope := "All projects"
	if b.Project != budget.AllProjects {
		scope = "Project " + b.Project
	}
	m := push.Message{Title: "Budget warning: " + scope}
	if state == budget.Exhausted {
		m.Title = "Budget exhausted: " + scope
	}
	m.Body = scope + " spent $" + dollars(b.SpentUSD) + " of $" + dollars(b.CapUSD) + " this " + string(b.Period) +
		"; it resets at " + b.PeriodEnd.UTC().Format(time.RFC3339) + "."
	if state == budget.Exhausted {
		m.Body += " New runs are refused until then."
	}
	if s.publicURL != "" {
		m.ClickURL = s.publicURL + "/#budgets"
	}
	return m
}

// dollars shows an amount with cents, and sub-cent spend to the tenth of a
// cent, so a $0.01 cap reads sensibly.
func dollars(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
