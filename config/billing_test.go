package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/billing"
)

// claude.billing (issue 26): any by default; a value it does not take fails
// at start with the key, the value, where it came from and the allowed
// values, from the environment and from the file alike.
func TestBillingConfig(t *testing.T) {
	dir := t.TempDir()
	l, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"HOME": dir})})
	if err != nil || l.Config.Claude.Billing != billing.PolicyAny {
		t.Fatalf("default: %q, %v", l.Config.Claude.Billing, err)
	}
	l, err = Load(LoadOptions{LookupEnv: envOf(map[string]string{"HOME": dir, "CLAUDE_RELAY_CLAUDE_BILLING": "api_key"})})
	if err != nil || l.Config.Claude.Billing != billing.PolicyAPIKey {
		t.Fatalf("env api_key: %q, %v", l.Config.Claude.Billing, err)
	}
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte("claude:\n  billing: subscriptions\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]LoadOptions{
		"env":  {LookupEnv: envOf(map[string]string{"HOME": dir, "CLAUDE_RELAY_CLAUDE_BILLING": "apikey"})},
		"file": {File: file, LookupEnv: envOf(map[string]string{"HOME": dir})},
	} {
		_, err := Load(o)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Key != "claude.billing" || !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: %v; want a claude.billing ValidationError", name, err)
		}
		for _, want := range []string{"claude.billing", ve.Value, "any", "subscription", "api_key"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", name, err, want)
			}
		}
		if want := map[string]string{"env": "apikey", "file": "subscriptions"}[name]; ve.Value != want {
			t.Errorf("%s: value %q, want %q", name, ve.Value, want)
		}
	}
}
