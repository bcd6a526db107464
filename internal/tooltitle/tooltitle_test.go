package tooltitle

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	long := strings.Repeat("é", 60)
	tests := []struct {
		name, input, title string
		kind               Kind
	}{
		{"Read", `{"file_path":"/a/b.go"}`, "Read /a/b.go", KindRead},
		{"Edit", `{}`, "Edit file", KindEdit},
		{"Write", `{"file_path":"x"}`, "Write x", KindEdit},
		{"Bash", `{"command":"go test ./...","description":"Run the tests"}`, "Run the tests", KindExecute},
		{"Bash", `{"command":"` + long + `"}`, "Run: " + strings.Repeat("é", 50), KindExecute},
		{"Grep", `{"pattern":"TODO"}`, "Search: TODO", KindSearch},
		{"Glob", `{"pattern":"**/*.go"}`, "Search: **/*.go", KindSearch},
		{"WebFetch", `{"url":"http://x"}`, "Fetch http://x", KindFetch},
		{"mcp__thing", `not json`, "mcp__thing", KindOther},
	}
	for _, tt := range tests {
		title, kind := Of(tt.name, json.RawMessage(tt.input))
		if title != tt.title || kind != tt.kind {
			t.Errorf("Of(%s, %s) = %q %s, want %q %s", tt.name, tt.input, title, kind, tt.title, tt.kind)
		}
	}
}
