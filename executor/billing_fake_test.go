package executor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
)

// A CLI whose answer to initialize has no account: the guard cannot see
// where its credentials come from, so a restricting policy refuses the run
// with no user message written (the prompt never reached the CLI), any lets
// it run and reports the source unknown, and the probe says why it failed.
func TestBillingNoAccount(t *testing.T) {
	run := func(t *testing.T, policy billing.Policy) (*Result, *recorder, []string) {
		t.Helper()
		record := filepath.Join(t.TempDir(), "stdin")
		path, env := fakecli.Command(fakecli.ModeNormal, fakecli.WithoutAccount(), fakecli.WithRecordFile(record))
		e := New(Options{CLIPath: path, BaseEnv: append(os.Environ(), env...), StartupTimeout: 5 * time.Second,
			InterruptGrace: 300 * time.Millisecond, SignalGap: 150 * time.Millisecond, Billing: policy})
		rec := &recorder{}
		res, err := e.Run(context.Background(), Request{Prompt: "hello"}, rec, nil)
		if err != nil && !errors.Is(err, billing.ErrRefused) {
			t.Fatal(err)
		}
		return res, rec, readLines(t, record)
	}
	t.Run("subscription refuses", func(t *testing.T) {
		res, rec, stdin := run(t, billing.PolicySubscription)
		var refused *billing.RefusedError
		if res.Status != StatusFailed || res.ExitCode != billing.ExitStatus || !errors.As(res.Cause, &refused) ||
			refused.Source.Kind != billing.KindUnknown || !strings.Contains(res.Reason, "would bill this run to unknown") {
			t.Fatalf("result %+v", res)
		}
		if bill := rec.kinds(EventBilling); len(bill) != 1 || bill[0].Billing.Kind != billing.KindUnknown || !errors.Is(bill[0].BillingErr, billing.ErrRefused) {
			t.Errorf("billing events %+v", bill)
		}
		for _, l := range stdin[1:] {
			if strings.Contains(l, `"type":"user"`) {
				t.Errorf("the prompt reached the CLI: %s", l)
			}
		}
	})
	t.Run("any runs", func(t *testing.T) {
		res, rec, _ := run(t, billing.PolicyAny)
		if res.Status != StatusCompleted || res.Stdout != fakecli.ReplyText {
			t.Fatalf("result %+v", res)
		}
		if bill := rec.kinds(EventBilling); len(bill) != 1 || bill[0].Billing.Kind != billing.KindUnknown || bill[0].BillingErr != nil {
			t.Errorf("billing events %+v", bill)
		}
	})
	t.Run("probe", func(t *testing.T) {
		path, env := fakecli.Command(fakecli.ModeNormal, fakecli.WithoutAccount())
		e := New(Options{CLIPath: path, BaseEnv: append(os.Environ(), env...), StartupTimeout: 5 * time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		src, err := e.ProbeBilling(ctx, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "no account") || src.Kind != billing.KindUnknown {
			t.Errorf("ProbeBilling = %+v, %v", src, err)
		}
	})
}
