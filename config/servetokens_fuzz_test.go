package config

import (
	"strings"
	"testing"
)

// FuzzServeTokens: any serve.tokens environment value is refused or read
// into entries with a token; an error never quotes the value (it may hold
// a token).
func FuzzServeTokens(f *testing.F) {
	for _, s := range []string{"a,b", `["a",{"token":"b","name":"n","scopes":["approve"]}]`, "[", `[{"token":""}]`, `[{"token":"t","scopes":"admin"}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := serveTokens(s)
		if err != nil {
			if secret := strings.TrimSpace(s); len(secret) >= 12 && strings.Contains(err.Error(), secret) {
				t.Fatalf("error quotes the value: %v", err)
			}
			return
		}
		for _, tok := range got {
			if tok.Token == "" {
				t.Fatalf("%q: an entry without a token: %+v", s, got)
			}
		}
	})
}
