package tokens

import (
	"strings"
	"testing"
)

// FuzzParse: any token file content is refused or parsed into entries with
// ids, known scopes and decoded digests; never a panic.
func FuzzParse(f *testing.F) {
	h := strings.Repeat("ab", 32)
	f.Add([]byte(`{"version":1,"tokens":[]}`))
	f.Add([]byte(`{"version":1,"tokens":[{"id":"a","name":"n","scopes":["approve"],"created_at":"2026-01-01T00:00:00Z","token_sha256":"` + h + `","cookie_sha256":"` + h + `"}]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := parse(b)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.ID == "" || len(e.Scopes) == 0 {
				t.Fatalf("accepted %+v", e)
			}
			if ts, _ := e.Digests(); ts == [32]byte{} && e.TokenSHA256 != strings.Repeat("0", 64) {
				t.Fatalf("digest not decoded: %+v", e)
			}
		}
	})
}

// FuzzParseScopes: accepted scopes are known, deduplicated and ordered.
func FuzzParseScopes(f *testing.F) {
	for _, s := range []string{"approve", "ingest,read", "admin+read", "", "x", "READ, ,approve"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseScopes(s)
		if err != nil {
			return
		}
		if len(normalize(got)) != len(got) {
			t.Fatalf("%q: %v not normalized", s, got)
		}
	})
}
