package executor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// The billing guard with the real CLI: ANTHROPIC_API_KEY set and
// claude.billing subscription stops the run before the scripted API gets
// any request, whether the run names its mode (the prompt would otherwise go
// out at once) or not; api_key lets it run.
func TestRealBillingGuard(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  billing.Policy
		mode    streamjson.PermissionMode
		refused bool
	}{
		{"subscription refuses the key", billing.PolicySubscription, "", true},
		{"subscription refuses the key, mode named", billing.PolicySubscription, streamjson.PermissionModeDefault, true},
		{"api_key takes the key", billing.PolicyAPIKey, streamjson.PermissionModeDefault, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("billed")}, func(o *Options) { o.Billing = tc.policy })
			res, rec := env.run(t, Request{Prompt: "hello", RunOptions: RunOptions{PermissionMode: tc.mode}}, nil)
			bill := rec.kinds(EventBilling)
			if len(bill) != 1 || bill[0].Billing != (billing.Source{Kind: billing.KindAPIKey, Name: "ANTHROPIC_API_KEY"}) {
				t.Fatalf("billing events %+v", bill)
			}
			if !tc.refused {
				if res.Status != StatusCompleted || res.Stdout != "billed" || len(env.api.MainRequests()) == 0 {
					t.Fatalf("result %+v, %d requests", res, len(env.api.MainRequests()))
				}
				return
			}
			if n := len(env.api.Requests()); n != 0 {
				t.Fatalf("the scripted API got %d requests, want none", n)
			}
			var refused *billing.RefusedError
			if res.Status != StatusFailed || res.ExitCode != billing.ExitStatus || !errors.As(res.Cause, &refused) || !errors.Is(bill[0].BillingErr, billing.ErrRefused) {
				t.Fatalf("result %+v", res)
			}
			for _, want := range []string{"API key ANTHROPIC_API_KEY", "claude.billing is subscription", "Unset ANTHROPIC_API_KEY"} {
				if !strings.Contains(res.Reason, want) {
					t.Errorf("reason %q lacks %q", res.Reason, want)
				}
			}
			if strings.Contains(res.Reason, realcli.APIKey) || strings.Contains(res.StderrTail, realcli.APIKey) {
				t.Errorf("the key's value leaked: %q", res.Reason)
			}
		})
	}
}

// ProbeBilling asks the real CLI and sends the API nothing.
func TestRealProbeBilling(t *testing.T) {
	env := newRealEnv(t, mockapi.Script{mockapi.TextTurn("no")}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src, err := env.e.ProbeBilling(ctx, env.cwd)
	if err != nil || src != (billing.Source{Kind: billing.KindAPIKey, Name: "ANTHROPIC_API_KEY"}) {
		t.Fatalf("got %+v, %v", src, err)
	}
	if n := len(env.api.Requests()); n != 0 {
		t.Fatalf("the scripted API got %d requests", n)
	}
}
