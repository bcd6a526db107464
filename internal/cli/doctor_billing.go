package cli

import (
	"context"
	"errors"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/discovery"
)

// checkBilling asks the CLI, as a run would start it, where its credentials
// come from (initialize only: no API request) and whether claude.billing
// allows it. Only the source's name is shown, never a credential.
func checkBilling(ctx context.Context, a *App) finding {
	f := finding{name: "billing"}
	c := a.loaded.Config
	info := cliInfo{path: c.Claude.Command}
	if info.path == "" {
		res, err := discovery.Find(ctx, a.discoveryOptions(c.Claude.Path))
		if err != nil {
			f.skipped, f.detail = true, "no Claude CLI to ask (see above)"
			return f
		}
		info.path = res.Path
	}
	cwd, _ := a.Getwd()
	src, err := executor.New(a.executorOptions(info)).ProbeBilling(ctx, cwd)
	if err != nil {
		f.skipped, f.detail = true, "could not ask the Claude CLI: "+err.Error()
		return f
	}
	policy := c.Claude.Billing
	if policy == "" {
		policy = billing.PolicyAny
	}
	f.detail = "runs are billed to " + src.Label() + " (claude.billing: " + string(policy) + ")"
	var refused *billing.RefusedError
	if err := policy.Check(src); errors.As(err, &refused) {
		f.problem = "runs would be refused: " + refused.Error()
	}
	return f
}
