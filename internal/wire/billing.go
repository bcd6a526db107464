package wire

import "encoding/json"

// The billing guard's events (issue 26 item 2; docs/events.md).
const (
	// TypeBillingSource: where the run's credentials come from, as the
	// CLI's answer to initialize said (once per run).
	TypeBillingSource = "relay.billing_source"
	// TypeBillingRefused: claude.billing stopped the run before its first
	// API request.
	TypeBillingRefused = "relay.billing_refused"

	VBilling = 1
)

// Billing is the data of relay.billing_source and relay.billing_refused.
// It names a credential's source (ANTHROPIC_API_KEY, claude.ai, …), never
// the credential.
type Billing struct {
	V                int    `json:"v"` // VBilling, set when written
	RunID            string `json:"run_id"`
	Kind             string `json:"kind"`             // api_key, subscription, auth_token, cloud, none, unknown
	Source           string `json:"source,omitempty"` // the CLI's name of the source
	SubscriptionType string `json:"subscription_type,omitempty"`
	Provider         string `json:"provider,omitempty"`
	Label            string `json:"label"`             // "API key ANTHROPIC_API_KEY", "subscription (Claude Max)", …
	Policy           string `json:"policy"`            // claude.billing
	Message          string `json:"message,omitempty"` // relay.billing_refused: what was found and how to change it
}

// MarshalJSON writes the data with "v" = VBilling.
func (e Billing) MarshalJSON() ([]byte, error) {
	type data Billing
	e.V = VBilling
	return json.Marshal(data(e))
}
