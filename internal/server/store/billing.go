package store

import (
	"encoding/json"
	"strings"

	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// How much a Facts.BilledTo says (issue 26, "billed to"): the billing
// guard's own record, read from the CLI's answer to initialize, names every
// kind of source; a system/init line's apiKeySource names an API key only
// (it says "none" for a login and for no credentials alike), which is all a
// session from a helper before the guard has.
const (
	BilledInit  = 1
	BilledGuard = 2
)

// maxBilledRunes bounds Session.BilledTo: it is outside input shown in
// every list row.
const maxBilledRunes = 120

// billingFacts reads where a run's credentials came from:
// relay.billing_source's label (else the label of its kind and source), a
// system/init line's apiKeySource when it names a key (the CLI's stdout,
// and a terminal run's transcript if it ever carries one).
func billingFacts(f *Facts, ev Event, obj map[string]json.RawMessage, typ string) {
	var label string
	switch et := ev.EventType; {
	case et == wire.TypeBillingSource:
		label = jsonString(obj["label"])
		if strings.TrimSpace(label) == "" {
			label = billing.Source{Kind: billing.Kind(jsonString(obj["kind"])), Name: jsonString(obj["source"]),
				SubscriptionType: jsonString(obj["subscription_type"]), Provider: jsonString(obj["provider"])}.Label()
		}
		f.BilledRank = BilledGuard
	case (et == "system" || et == "transcript.system") && typ == "system" && jsonString(obj["subtype"]) == "init":
		src, ok := billing.FromInitAPIKeySource(jsonString(obj["apiKeySource"]))
		if !ok {
			return
		}
		label, f.BilledRank = src.Label(), BilledInit
	default:
		return
	}
	if label = strings.Join(strings.Fields(clean(label)), " "); label == "" {
		f.BilledRank = 0
		return
	}
	if len([]rune(label)) > maxBilledRunes {
		label = truncateRunes(label, maxBilledRunes-1) + "…"
	}
	f.BilledTo = label
}
