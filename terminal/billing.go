package terminal

import (
	"context"
	"errors"

	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// The billing guard for terminal runs (issue 26 item 2). The interactive
// CLI's hooks never say where its credentials come from, so before it
// starts, Options.ProbeBilling asks the CLI as a background run would start
// it (initialize only, no API request). The probe is print mode: there a
// key in ANTHROPIC_API_KEY always wins over a login, while the interactive
// CLI may ask the user whether to use that key. The guard goes by the
// probe, so with claude.billing: subscription a key in the environment
// refuses the run even if the user would have declined it; unsetting it (or
// claude.disable_api_key: true, which removes it for the probe and the run
// alike) is the fix the message gives.

// guardBilling runs the probe when the policy restricts, records the
// source (relay.billing_source) and, when the policy refuses it,
// relay.billing_refused; it returns the refusal.
func (r *runner) guardBilling(ctx context.Context) *billing.RefusedError {
	if !r.o.Billing.Restricts() || r.o.ProbeBilling == nil {
		return nil
	}
	src, err := r.o.ProbeBilling(ctx, r.o.Cwd)
	if err != nil {
		// The guard cannot promise what it cannot see: an unknown
		// source is refused, as for background runs.
		r.o.Logger.Warn("billing guard: could not ask the Claude CLI where its credentials come from", "run_id", r.o.RunID, "err", err)
		src = billing.Source{Kind: billing.KindUnknown}
	}
	data := relay.BillingRecord(r.o.RunID, src, r.o.Billing)
	r.emit(wire.TypeBillingSource, data)
	var refused *billing.RefusedError
	if !errors.As(r.o.Billing.Check(src), &refused) {
		return nil
	}
	data.Message = refused.Error()
	r.emit(wire.TypeBillingRefused, data)
	r.o.Logger.Warn("billing guard: terminal run stopped before the CLI started", "run_id", r.o.RunID,
		"billed_to", src.Label(), "claude.billing", r.o.Billing)
	return refused
}

// refuse ends a run the billing guard stopped: relay.run_failed with
// billing.ExitStatus and the refusal as its reason, as a background run's.
func (r *runner) refuse(refused *billing.RefusedError) (*Result, error) {
	code := billing.ExitStatus
	r.res.ExitCode = code
	r.spooled(wire.EndType(wire.StatusFailed), r.rec.Ended(wire.RunEnded{Status: wire.StatusFailed,
		Result: wire.Result{ExitCode: code}, Reason: refused.Error()}))
	return r.res, refused
}
