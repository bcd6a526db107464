package config

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/claude-relay/claude-relay/internal/policy"
)

// policyAllowed is what serve.policy takes, for its validation errors.
const policyAllowed = `allowed: a list of {rule, effect: allow|ask|deny, approver: dashboard (optional), reason}, ` +
	`rule in the Claude CLI's permission syntax ("Bash(git push *)", "Write(**/.env*)", "WebFetch(domain:*)", "mcp__server__tool"); ` +
	`in the environment, the same list as JSON`

// policyKey is serve.policy (issue 26: central policy): ordered rules, the
// first match wins. Checked here so that serve refuses a rule it could not
// enforce rather than serve it to every helper.
var policyKey = key{name: "serve.policy", def: constant(""), apply: func(c *Config, raw any) error {
	rules, err := policyRules(raw)
	if err == nil {
		_, err = policy.Compile(rules)
	}
	if err != nil {
		return fmt.Errorf("%w; %s", err, policyAllowed)
	}
	c.Serve.Policy = rules
	return nil
}}

// policyRules reads the YAML list, or the JSON of CLAUDE_RELAY_SERVE_POLICY.
func policyRules(raw any) ([]policy.Rule, error) {
	switch v := raw.(type) {
	case nil:
		return nil, nil
	case string:
		if strings.TrimSpace(v) == "" {
			return nil, nil
		}
		return policy.ParseList(v)
	case []any:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return policy.ParseList(string(b))
	default:
		return nil, fmt.Errorf("got %T", raw)
	}
}
