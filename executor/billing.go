package executor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/claude-relay/claude-relay/internal/billing"
)

// The billing guard (issue 26 item 2). With a restricting claude.billing,
// nothing but the control requests initialize, the modes question and
// set_permission_mode is written to the CLI until its answer to initialize
// has said where its credentials come from: every user message (the first
// prompt, an early send, an idle run's first message) waits in the stdin
// writer, gated. The CLI sends an API request only for a user message, so a
// refused run is stopped having made none.

// guarding reports whether this run's stdin stays gated until the verdict.
func (r *run) guarding() bool { return r.e.opts.Billing.Restricts() }

// checkBilling reads the source from initialize's answer (nil: the CLI
// refused or never answered), reports it, and opens the gate or has the
// loop stop the run; true when it refused.
func (r *run) checkBilling(info json.RawMessage) bool {
	if info == nil && !r.guarding() {
		return false // nothing to report, nothing to decide
	}
	src, _ := billing.FromInitialize(info)
	err := r.e.opts.Billing.Check(src)
	r.obs.Event(Event{Kind: EventBilling, RunID: r.req.RunID, Time: time.Now(), Billing: src, BillingErr: err, BillingPolicy: cmp.Or(r.e.opts.Billing, billing.PolicyAny)})
	if !r.guarding() {
		return false
	}
	var refused *billing.RefusedError
	if errors.As(err, &refused) {
		// Debug: the user hears it from the error event and the run's end.
		r.e.log.Debug("billing guard: run stopped before its first API request", "run_id", r.req.RunID,
			"billed_to", src.Label(), "claude.billing", r.e.opts.Billing)
		select {
		case r.refused <- refused:
		default:
		}
		return true
	}
	r.w.open()
	return false
}

// ProbeBilling starts the CLI as a run in cwd would be started, asks it
// initialize and nothing else, and returns where its credentials come from
// (doctor, and terminal runs, whose interactive CLI cannot be asked). No
// user message is written, so no API request is made. ctx bounds the wait.
func (e *Executor) ProbeBilling(ctx context.Context, cwd string) (billing.Source, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	probe := *e
	// Restricting makes the run report even a CLI that did not answer, and
	// keeps every write but the control requests away from it.
	probe.opts.Billing, probe.opts.Registry = billing.PolicySubscription, nil
	probe.log = slog.New(slog.DiscardHandler) // the probe's own refusal is no news
	found := make(chan billing.Source, 1)
	obs := ObserverFunc(func(ev Event) {
		if ev.Kind == EventBilling {
			found <- ev.Billing
			cancel()
		}
	})
	res, err := probe.Run(ctx, Request{RunOptions: RunOptions{Cwd: cwd, KeepAlive: true}, Idle: true}, obs, nil)
	select {
	case src := <-found:
		if src.Kind != billing.KindUnknown {
			return src, nil
		}
		err = errors.New("the Claude CLI's answer to initialize has no account")
	default:
	}
	if err == nil {
		err = fmt.Errorf("the Claude CLI did not say where its credentials come from: %s", cmp.Or(res.Reason, res.Stderr, "no answer to initialize"))
	}
	return billing.Source{Kind: billing.KindUnknown}, err
}
