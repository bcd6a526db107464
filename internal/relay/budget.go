package relay

import (
	"context"
	"time"

	"github.com/claude-relay/claude-relay/internal/budget"
)

// Budget checks the spend caps that cover a working directory before a
// run or a live run's turn starts (budget.Client).
type Budget interface {
	Check(ctx context.Context, cwd string) (budget.Grant, error)
}

// budgetWait bounds one check when the checker has no timeout of its own.
const budgetWait = 10 * time.Second

// checkBudget asks Options.Budget about cwd: an exhausted budget, or an
// unreachable backend under budgets.offline: deny, is a RefuseBudget.
func (c *Core) checkBudget(cwd string) (budget.Grant, error) {
	if c.opts.Budget == nil {
		return budget.Grant{}, nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, budgetWait)
	defer cancel()
	g, err := c.opts.Budget.Check(ctx, cwd)
	if err != nil {
		return g, &RefusedError{Code: RefuseBudget, Message: err.Error(), Err: err}
	}
	return g, nil
}

// limitBudget caps a run's --max-budget-usd at what its budgets have left,
// keeping the user's own amount when it is smaller: the CLI then stops the
// run with its own accounting before it crosses the cap.
func limitBudget(opts *Request, g budget.Grant) {
	if !g.Limited {
		return
	}
	if opts.MaxBudgetUSD <= 0 || g.RemainingUSD < opts.MaxBudgetUSD {
		opts.MaxBudgetUSD = g.RemainingUSD
	}
}

// postUnchecked records that a run or a turn went ahead without its
// budgets checked (budgets.offline: allow).
func (r *Run) postUnchecked(inter string, g budget.Grant) {
	if g.Unchecked == nil {
		return
	}
	r.c.log.Warn("budgets not checked: the backend could not be asked (budgets.offline: allow)", "run", r.id, "err", g.Unchecked)
	if err := r.lc.Post(inter, budget.TypeUnchecked, budget.Unchecked{V: 1, RunID: r.id, Cwd: r.lc.Frame().Cwd, Error: g.Unchecked.Error()}); err != nil {
		r.c.log.Warn("cannot spool relay.budget_unchecked", "run", r.id, "err", err)
	}
}
