package relay

import (
	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// billing records where the run's credentials come from
// (relay.billing_source) and, when the billing guard stopped the run,
// relay.billing_refused: the backend shows the first as "billed to" and
// lists the second in the audit export. Names of sources only.
func (r *Run) billing(e executor.Event) {
	data := BillingRecord(r.id, e.Billing, e.BillingPolicy)
	r.forward(wire.TypeBillingSource, data)
	if e.BillingErr != nil {
		data.Message = e.BillingErr.Error()
		r.forward(wire.TypeBillingRefused, data)
	}
}

// BillingRecord is the data of relay.billing_source for a run billed to src
// under policy (relay.billing_refused adds Message): background runs and
// terminal runs write the same record.
func BillingRecord(runID string, src billing.Source, policy billing.Policy) wire.Billing {
	if policy == "" {
		policy = billing.PolicyAny
	}
	data := wire.Billing{RunID: runID, Kind: string(src.Kind), Source: src.Name, SubscriptionType: src.SubscriptionType,
		Provider: src.Provider, Label: src.Label(), Policy: string(policy)}
	return data
}
