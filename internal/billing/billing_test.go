package billing

import (
	"errors"
	"strings"
	"testing"
)

func TestFromInitialize(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		want       Source
	}{
		{"api key", `{"account":{"tokenSource":"none","apiKeySource":"ANTHROPIC_API_KEY","apiProvider":"firstParty"}}`, Source{Kind: KindAPIKey, Name: "ANTHROPIC_API_KEY"}},
		{"oauth token", `{"account":{"tokenSource":"CLAUDE_CODE_OAUTH_TOKEN","apiProvider":"firstParty"}}`, Source{Kind: KindSubscription, Name: "CLAUDE_CODE_OAUTH_TOKEN"}},
		{"both: the key is used", `{"account":{"tokenSource":"CLAUDE_CODE_OAUTH_TOKEN","apiKeySource":"ANTHROPIC_API_KEY"}}`, Source{Kind: KindAPIKey, Name: "ANTHROPIC_API_KEY"}},
		{"login", `{"account":{"subscriptionType":"Claude Max","apiProvider":"firstParty"}}`, Source{Kind: KindSubscription, SubscriptionType: "Claude Max"}},
		{"helper", `{"account":{"tokenSource":"apiKeyHelper","apiKeySource":"apiKeyHelper"}}`, Source{Kind: KindAPIKey, Name: "apiKeyHelper"}},
		{"auth token", `{"account":{"tokenSource":"ANTHROPIC_AUTH_TOKEN"}}`, Source{Kind: KindAuthToken, Name: "ANTHROPIC_AUTH_TOKEN"}},
		{"bedrock", `{"account":{"apiProvider":"bedrock"}}`, Source{Kind: KindCloud, Provider: "bedrock"}},
		{"none", `{"account":{"tokenSource":"none","apiProvider":"firstParty"}}`, Source{Kind: KindNone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := FromInitialize([]byte(tc.info))
			if !ok || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, ok, tc.want)
			}
		})
	}
	if got, ok := FromInitialize([]byte(`{"commands":[]}`)); ok || got.Kind != KindUnknown {
		t.Errorf("no account: got %+v, %v", got, ok)
	}
}

func TestCheck(t *testing.T) {
	key := Source{Kind: KindAPIKey, Name: "ANTHROPIC_API_KEY"}
	sub := Source{Kind: KindSubscription, Name: "claude.ai"}
	for _, tc := range []struct {
		p       Policy
		src     Source
		refused bool
	}{
		{PolicyAny, key, false}, {PolicyAny, Source{Kind: KindUnknown}, false},
		{PolicySubscription, sub, false}, {PolicySubscription, key, true}, {PolicySubscription, Source{Kind: KindNone}, true},
		{PolicyAPIKey, key, false}, {PolicyAPIKey, sub, true}, {PolicyAPIKey, Source{Kind: KindUnknown}, true},
	} {
		err := tc.p.Check(tc.src)
		if (err != nil) != tc.refused || (err != nil && !errors.Is(err, ErrRefused)) {
			t.Errorf("%s with %+v: %v", tc.p, tc.src, err)
		}
	}
	msg := PolicySubscription.Check(key).Error()
	for _, want := range []string{"API key ANTHROPIC_API_KEY", "claude.billing is subscription", "Unset ANTHROPIC_API_KEY", "CLAUDE_RELAY_CLAUDE_BILLING"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	if p, err := ParsePolicy(""); err != nil || p != PolicyAny {
		t.Errorf("empty: %v %v", p, err)
	}
	if _, err := ParsePolicy("apikey"); !errors.Is(err, ErrBadPolicy) {
		t.Errorf("apikey: %v", err)
	}
}
