package relay

import (
	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// billing records where the run's credentials come from
// (relay.billing_source) and, when the billing guard stopped the run,
// relay.billing_refused: the backend shows the first as "billed to" and
// lists the second in the audit export. Names of sources only.
func (r *Run) billing(e executor.Event) {
	src := e.Billing
	data := wire.Billing{RunID: r.id, Kind: string(src.Kind), Source: src.Name, SubscriptionType: src.SubscriptionType,
		Provider: src.Provider, Label: src.Label(), Policy: string(e.BillingPolicy)}
	r.forward(wire.TypeBillingSource, data)
	if e.BillingErr != nil {
		data.Message = e.BillingErr.Error()
		r.forward(wire.TypeBillingRefused, data)
	}
}
