package forwarder

import (
	"strings"
	"unicode/utf8"
)

// What the backend or a stranger answered ends up in messages and in the
// dead-letter files; these keep it short.

// truncate cuts s to at most n bytes, then an ellipsis.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// snippet is body's first n bytes on one line, whole UTF-8 characters.
func snippet(body []byte, n int) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
