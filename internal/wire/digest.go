package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// DigestPrefix starts every InputDigest, naming the hash.
const DigestPrefix = "sha256:"

// InputDigest is "sha256:<hex>" of a tool input in a canonical form (keys
// sorted, no insignificant space, numbers as written), so the helper and
// the backend agree on it whatever a store did to the JSON's layout. A
// remote decision carries the digest of the input its approver was shown,
// and the helper refuses one whose digest is not that of the input it
// asked about: nothing shown can differ from what runs. Input that is not
// JSON is hashed as it is; none at all hashes as null.
func InputDigest(input json.RawMessage) string {
	sum := sha256.Sum256(canonicalJSON(input))
	return DigestPrefix + hex.EncodeToString(sum[:])
}

func canonicalJSON(raw json.RawMessage) []byte {
	if !Present(raw) {
		return []byte("null")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil { // maps encode with sorted keys
		return raw
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
