package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestInputDigest(t *testing.T) {
	base := InputDigest(json.RawMessage(`{"command":"echo <a> & b","n":1.50,"x":[1,{"b":2,"a":1}]}`))
	same := []string{
		`{ "x": [1, {"a":1, "b":2}], "n": 1.50, "command": "echo <a> & b" }`,
		"{\"command\":\"echo \\u003ca\\u003e \\u0026 b\",\"n\":1.50,\"x\":[1,{\"a\":1,\"b\":2}]}",
	}
	for _, in := range same {
		if got := InputDigest(json.RawMessage(in)); got != base {
			t.Errorf("InputDigest(%s) = %s, want %s (same JSON, another layout)", in, got, base)
		}
	}
	differ := []string{
		`{"command":"echo <a> & b ","n":1.50,"x":[1,{"b":2,"a":1}]}`,
		`{"command":"echo <a> & b","n":1.5,"x":[1,{"b":2,"a":1}]}`,
		`{"command":"echo <a> & b","n":1.50,"x":[{"b":2,"a":1},1]}`,
		`not json`,
		``,
	}
	for _, in := range differ {
		if got := InputDigest(json.RawMessage(in)); got == base {
			t.Errorf("InputDigest(%q) = the digest of another input", in)
		}
	}
	if !strings.HasPrefix(base, DigestPrefix) || len(base) != len(DigestPrefix)+64 {
		t.Errorf("digest %q: want sha256:<64 hex>", base)
	}
	if InputDigest(nil) != InputDigest(json.RawMessage("null")) {
		t.Error("no input and null differ")
	}
}

func FuzzInputDigest(f *testing.F) {
	f.Add([]byte(`{"command":"ls"}`))
	f.Add([]byte(`[1,2,{"a":"\u00e9"}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := InputDigest(b)
		if !json.Valid(b) {
			return
		}
		// Canonical form is a fixed point: hashing it again gives the same.
		if again := InputDigest(canonicalJSON(b)); again != d {
			t.Errorf("digest of the canonical form %s differs from %s for %q", again, d, b)
		}
	})
}
