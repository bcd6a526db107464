// Package billing is the billing guard (issue 26 item 2): it reads where the
// Claude CLI takes its credentials from, as the CLI itself reports it, and
// decides whether claude.billing allows a run billed that way.
//
// The CLI says so twice: in its answer to initialize (`account`:
// `apiKeySource`, `tokenSource`, `subscriptionType`, `apiProvider`), which
// comes before any prompt is read, and in its system/init line
// (`apiKeySource`), which comes only once a prompt is being processed. The
// guard decides on the first, so a refused run never reaches the API.
// Observed with CLI 2.1.330 in -p stream-json mode:
//
//	ANTHROPIC_API_KEY set                 {"tokenSource":"none","apiKeySource":"ANTHROPIC_API_KEY"}
//	CLAUDE_CODE_OAUTH_TOKEN set           {"tokenSource":"CLAUDE_CODE_OAUTH_TOKEN"}
//	both                                  {"tokenSource":"CLAUDE_CODE_OAUTH_TOKEN","apiKeySource":"ANTHROPIC_API_KEY"} (the key is used)
//	claude.ai login (/login)              {"subscriptionType":"Claude Max"}
//	login and ANTHROPIC_API_KEY           {"tokenSource":"claude.ai","apiKeySource":"ANTHROPIC_API_KEY"} (the key is used)
//	apiKeyHelper in settings              {"tokenSource":"apiKeyHelper","apiKeySource":"apiKeyHelper"}
//	ANTHROPIC_AUTH_TOKEN set              {"tokenSource":"ANTHROPIC_AUTH_TOKEN"}
//	nothing                               {"tokenSource":"none"}
//
// An API key, when the CLI has one, is what a -p run is billed to. Only the
// names of sources ever leave this package: never a credential.
package billing

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ExitStatus is a refused run's exitCode (and `claude-relay run`'s exit
// status): 78, EX_CONFIG of sysexits(3), since the fix is in the
// configuration or the environment, never in the prompt.
const ExitStatus = 78

// Policy is claude.billing: which kind of credential a run may be billed to.
type Policy string

const (
	PolicyAny          Policy = "any" // the default: every source is allowed
	PolicySubscription Policy = "subscription"
	PolicyAPIKey       Policy = "api_key"
)

// Policies lists the values claude.billing takes, for validation messages.
var Policies = []Policy{PolicyAny, PolicySubscription, PolicyAPIKey}

// ParsePolicy reads claude.billing; empty is PolicyAny.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(strings.TrimSpace(s)); p {
	case "":
		return PolicyAny, nil
	case PolicyAny, PolicySubscription, PolicyAPIKey:
		return p, nil
	}
	return "", fmt.Errorf("%w: %q (allowed: any, subscription, api_key)", ErrBadPolicy, s)
}

// Restricts reports whether the policy can refuse a run, so runs must hold
// their prompt until the CLI has said where its credentials come from.
func (p Policy) Restricts() bool { return p != "" && p != PolicyAny }

// Kind is what a run is billed to.
type Kind string

const (
	KindAPIKey       Kind = "api_key"      // an Anthropic API key (env, apiKeyHelper, a key /login made)
	KindSubscription Kind = "subscription" // a Claude subscription's OAuth login or token
	KindAuthToken    Kind = "auth_token"   // ANTHROPIC_AUTH_TOKEN: a bearer token, usually for a gateway
	KindCloud        Kind = "cloud"        // Bedrock, Vertex, Foundry: billed by the cloud account
	KindNone         Kind = "none"         // no credentials: the CLI will say "Not logged in"
	KindUnknown      Kind = "unknown"      // the CLI did not say
)

// Source is where a run's credentials come from: a kind and the CLI's name
// for the source (ANTHROPIC_API_KEY, claude.ai, apiKeyHelper, …). It never
// holds a credential.
type Source struct {
	Kind             Kind   `json:"kind"`
	Name             string `json:"source,omitempty"`            // the CLI's name of the source
	SubscriptionType string `json:"subscription_type,omitempty"` // "Claude Max", when the CLI says
	Provider         string `json:"provider,omitempty"`          // apiProvider when not firstParty
}

// Label is the source for people: `API key ANTHROPIC_API_KEY`,
// `subscription (Claude Max)`, … as the dashboard shows it after "billed to".
func (s Source) Label() string {
	switch s.Kind {
	case KindAPIKey:
		return "API key " + cmp.Or(s.Name, "(unnamed)")
	case KindSubscription:
		if s.SubscriptionType != "" {
			return "subscription (" + s.SubscriptionType + ")"
		}
		if s.Name != "" && s.Name != "claude.ai" {
			return "subscription (" + s.Name + ")"
		}
		return "subscription"
	case KindAuthToken:
		return "auth token " + cmp.Or(s.Name, "ANTHROPIC_AUTH_TOKEN")
	case KindCloud:
		return "cloud provider " + s.Provider
	case KindNone:
		return "no credentials"
	}
	return "unknown"
}

// account is the initialize answer's `account` object.
type account struct {
	APIKeySource     string `json:"apiKeySource"`
	TokenSource      string `json:"tokenSource"`
	SubscriptionType string `json:"subscriptionType"`
	APIProvider      string `json:"apiProvider"`
}

// FromInitialize reads the source from the CLI's answer to initialize (the
// control_response's `response` object). ok is false when the answer has no
// `account`: an older or newer CLI the guard cannot read.
func FromInitialize(info json.RawMessage) (Source, bool) {
	var r struct {
		Account *account `json:"account"`
	}
	if json.Unmarshal(info, &r) != nil || r.Account == nil {
		return Source{Kind: KindUnknown}, false
	}
	return r.Account.source(), true
}

func (a account) source() Source {
	set := func(v string) bool { return v != "" && v != "none" }
	switch {
	case a.APIProvider != "" && a.APIProvider != "firstParty":
		return Source{Kind: KindCloud, Provider: a.APIProvider}
	case set(a.APIKeySource):
		// A key wins over a login in -p mode: that is what the CLI sends.
		return Source{Kind: KindAPIKey, Name: a.APIKeySource}
	case a.TokenSource == "ANTHROPIC_AUTH_TOKEN":
		return Source{Kind: KindAuthToken, Name: a.TokenSource}
	case set(a.TokenSource) || a.SubscriptionType != "":
		return Source{Kind: KindSubscription, Name: a.TokenSource, SubscriptionType: a.SubscriptionType}
	}
	return Source{Kind: KindNone}
}

// FromInitAPIKeySource reads the system/init line's apiKeySource, the only
// word a CLI line gives: a named key, else not an API key (a login, or
// nothing: the line cannot tell which).
func FromInitAPIKeySource(s string) (Source, bool) {
	if s == "" || s == "none" {
		return Source{}, false
	}
	return Source{Kind: KindAPIKey, Name: s}, true
}

var (
	// ErrBadPolicy: claude.billing has a value it does not take.
	ErrBadPolicy = errors.New("invalid claude.billing")
	// ErrRefused: the run's credentials are not the kind claude.billing allows.
	ErrRefused = errors.New("billing guard")
)

// RefusedError is a run the guard stopped before its first API request.
type RefusedError struct {
	Policy Policy
	Source Source
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

// Error says which credential was found and how to change it.
func (e *RefusedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "billing guard: the Claude CLI would bill this run to %s, but claude.billing is %s; nothing was sent to the API. ", e.Source.Label(), e.Policy)
	switch e.Policy {
	case PolicySubscription:
		switch e.Source.Kind {
		case KindAPIKey:
			if e.Source.Name == "apiKeyHelper" {
				b.WriteString("Remove apiKeyHelper from the Claude settings")
			} else {
				fmt.Fprintf(&b, "Unset %s (or set claude.disable_api_key: true)", e.Source.Name)
			}
			b.WriteString(" so the CLI uses your subscription login")
		case KindNone, KindUnknown:
			b.WriteString("Log in with `claude /login` (a Claude subscription)")
		default:
			b.WriteString("Log in with `claude /login` and remove the other credentials")
		}
	case PolicyAPIKey:
		b.WriteString("Set ANTHROPIC_API_KEY (or apiKeyHelper in the Claude settings)")
	}
	b.WriteString(", or allow it with claude.billing (CLAUDE_RELAY_CLAUDE_BILLING): any | subscription | api_key.")
	return b.String()
}

// Check is nil when p allows a run billed to src, else a *RefusedError.
// A source the CLI did not report is refused by a restricting policy: the
// guard cannot promise what it cannot see.
func (p Policy) Check(src Source) error {
	switch {
	case !p.Restricts():
		return nil
	case p == PolicySubscription && src.Kind == KindSubscription,
		p == PolicyAPIKey && src.Kind == KindAPIKey:
		return nil
	}
	return &RefusedError{Policy: p, Source: src}
}
