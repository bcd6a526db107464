package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Effect is what a matching rule does to a tool call.
type Effect string

// Effects.
const (
	Allow Effect = "allow" // runs without asking, whatever the mode
	Ask   Effect = "ask"   // someone decides (Approver says who)
	Deny  Effect = "deny"  // a tool error with the rule's reason; the run goes on
)

// Approver is who may decide an Ask.
type Approver string

// Approvers.
const (
	AnyApprover Approver = ""          // whoever the run asks: the editor, the terminal, the ACP client or the dashboard
	Dashboard   Approver = "dashboard" // only an approve-scope token in the dashboard
)

// Rule is one serve.policy entry, as configured and as served.
type Rule struct {
	Rule     string   `json:"rule"`
	Effect   Effect   `json:"effect"`
	Approver Approver `json:"approver,omitempty"`
	Reason   string   `json:"reason,omitempty"`
}

// ErrInvalid is a rule that cannot be used.
var ErrInvalid = errors.New("invalid policy rule")

// Policy is a compiled rule list. The zero value (and nil) matches nothing.
type Policy struct {
	rules    []Rule
	matchers []matcher
}

// Compile checks rules and makes them a Policy; an error names the entry
// (1-based) and what is wrong with it.
func Compile(rules []Rule) (*Policy, error) {
	p := &Policy{rules: append([]Rule(nil), rules...)}
	for i, r := range rules {
		m, err := check(r)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d (%q): %s", ErrInvalid, i+1, r.Rule, err)
		}
		p.matchers = append(p.matchers, m)
	}
	return p, nil
}

func check(r Rule) (matcher, error) {
	switch r.Effect {
	case Allow, Ask, Deny:
	default:
		return matcher{}, fmt.Errorf("effect %q: allowed: allow, ask, deny", r.Effect)
	}
	switch r.Approver {
	case AnyApprover:
	case Dashboard:
		if r.Effect != Ask {
			return matcher{}, fmt.Errorf("approver %q goes with effect ask, not %s", r.Approver, r.Effect)
		}
	default:
		return matcher{}, fmt.Errorf("approver %q: allowed: dashboard (or none)", r.Approver)
	}
	return parseRule(r.Rule)
}

// Rules are the policy's rules, in order.
func (p *Policy) Rules() []Rule {
	if p == nil {
		return nil
	}
	return append([]Rule(nil), p.rules...)
}

// Empty says whether the policy has no rules.
func (p *Policy) Empty() bool { return p == nil || len(p.rules) == 0 }

// Call is a tool call to decide.
type Call struct {
	Tool  string
	Input json.RawMessage
	Cwd   string // the run's working directory: relative patterns and paths start here
	Home  string // the home directory, for ~/ patterns
}

// Match is the rule that decided a call.
type Match struct {
	Index int // 0-based position in the policy
	Rule
}

// Decide returns the first rule matching c; ok is false when none does
// (the CLI's own permissions then apply).
func (p *Policy) Decide(c Call) (m Match, ok bool) {
	if p == nil {
		return Match{}, false
	}
	for i, mt := range p.matchers {
		if mt.matches(c, p.rules[i].Effect) {
			return Match{Index: i, Rule: p.rules[i]}, true
		}
	}
	return Match{}, false
}

// MarshalJSON serves the rules (GET /api/policy, the disk cache).
func (p *Policy) MarshalJSON() ([]byte, error) {
	return json.Marshal(Document{Rules: orEmpty(p.Rules())})
}

// Document is GET /api/policy's body and the disk cache's content.
type Document struct {
	Rules []Rule `json:"rules"`
}

func orEmpty(r []Rule) []Rule {
	if r == nil {
		return []Rule{}
	}
	return r
}

// ParseList reads serve.policy from its JSON form (the environment
// variable CLAUDE_RELAY_SERVE_POLICY).
func ParseList(s string) ([]Rule, error) {
	var rules []Rule
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rules); err != nil {
		return nil, fmt.Errorf("%w: not a JSON list of {rule, effect, approver, reason}: %v", ErrInvalid, err)
	}
	return rules, nil
}
