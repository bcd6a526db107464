package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/billing"
)

// TestRunBillingGuard: with a restricting claude.billing the probe is asked
// before the CLI starts; a source the policy refuses ends the run as a
// background run's refusal does (billing.ExitStatus, the message naming the
// credential) with the CLI never started, and the record shows the source
// and the refusal. An allowed source, or a probe that fails for a policy
// of any, lets the CLI run.
func TestRunBillingGuard(t *testing.T) {
	key := billing.Source{Kind: billing.KindAPIKey, Name: "ANTHROPIC_API_KEY"}
	sub := billing.Source{Kind: billing.KindSubscription, SubscriptionType: "Claude Max"}
	for _, tc := range []struct {
		name     string
		policy   billing.Policy
		src      billing.Source
		probeErr error
		refused  bool
		probed   bool
		label    string
	}{
		{"subscription refuses a key", billing.PolicySubscription, key, nil, true, true, "API key ANTHROPIC_API_KEY"},
		{"subscription takes a login", billing.PolicySubscription, sub, nil, false, true, "subscription (Claude Max)"},
		{"a failed probe refuses", billing.PolicyAPIKey, billing.Source{}, errors.New("no answer to initialize"), true, true, "unknown"},
		{"any does not probe", billing.PolicyAny, key, nil, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			transcript := filepath.Join(t.TempDir(), "t.jsonl")
			o, ev, _ := fakeRun(t, "fakecli", fakeTranscript+"="+transcript)
			probed := false
			o.Billing = tc.policy
			o.ProbeBilling = func(ctx context.Context, cwd string) (billing.Source, error) {
				probed = true
				if cwd != o.Cwd {
					t.Errorf("probed in %q, want the run's %q", cwd, o.Cwd)
				}
				return tc.src, tc.probeErr
			}
			res, err := Run(context.Background(), o)
			if probed != tc.probed {
				t.Errorf("probed %v, want %v", probed, tc.probed)
			}
			_, statErr := os.Stat(filepath.Join(outDir(o), "report.json"))
			if started := statErr == nil; started == tc.refused {
				t.Errorf("the CLI started %v with refused %v", started, tc.refused)
			}
			var got []string
			for _, e := range ev.all() {
				if strings.HasPrefix(e.Type, "relay.") {
					got = append(got, e.Type)
				}
			}
			if !tc.refused {
				if err != nil || res.ExitCode != 0 {
					t.Fatalf("Run = %+v, %v", res, err)
				}
				if want := fmt.Sprint(tc.probed); fmt.Sprint(strings.Contains(strings.Join(got, " "), "relay.billing_source")) != want {
					t.Errorf("events %v: billing_source recorded should be %s", got, want)
				}
				return
			}
			var refused *billing.RefusedError
			if !errors.As(err, &refused) || res == nil || res.ExitCode != billing.ExitStatus {
				t.Fatalf("Run = %+v, %v; want exit %d and a refusal", res, err, billing.ExitStatus)
			}
			if want := "relay.run_started relay.billing_source relay.billing_refused relay.run_failed"; strings.Join(got, " ") != want {
				t.Errorf("events %v, want %s", got, want)
			}
			evs := ev.all()
			var rec struct {
				Label, Policy, Message string
			}
			if err := json.Unmarshal(evs[2].Data, &rec); err != nil || rec.Label != tc.label || rec.Policy != string(tc.policy) ||
				!strings.Contains(rec.Message, "claude.billing is "+string(tc.policy)) {
				t.Errorf("billing_refused %s", evs[2].Data)
			}
			var end struct {
				Reason string `json:"reason"`
				Result struct {
					ExitCode int `json:"exitCode"`
				} `json:"result"`
			}
			if err := json.Unmarshal(evs[3].Data, &end); err != nil || end.Result.ExitCode != billing.ExitStatus || end.Reason != refused.Error() {
				t.Errorf("run_failed %s", evs[3].Data)
			}
		})
	}
}
