package push

import (
	"fmt"
	"mime"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of a push. Titles and bodies are written by the caller and short
// already; these caps are a defence against a caller's bug putting tool
// input in them.
const (
	maxTitleRunes = 100
	maxBodyRunes  = 300
)

// clipped is m with its texts valid UTF-8 within the push limits.
func (m Message) clipped() Message {
	m.Title = ClipRunes(strings.ToValidUTF8(m.Title, "\uFFFD"), maxTitleRunes)
	m.Body = ClipRunes(strings.ToValidUTF8(m.Body, "\uFFFD"), maxBodyRunes)
	return m
}

// ClipRunes cuts s to at most n runes, the last one an ellipsis when cut:
// how a push shortens what it quotes.
func ClipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + "…"
}

// headerText makes s a valid header value: control characters (a newline
// would end the header) become spaces, and non-ASCII text is sent as
// RFC 2047 encoded-words (=?UTF-8?b?…?=), which ntfy decodes; HTTP headers
// have no reliable way to carry UTF-8 otherwise.
func headerText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return mime.BEncoding.Encode("UTF-8", s)
}

// headerURL percent-encodes every byte of u that is not visible ASCII, so
// a URL with spaces, control characters or raw UTF-8 stays one valid
// header value that still points at the same place.
func headerURL(u string) string {
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		c := u[i]
		if c > ' ' && c < 0x7f {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
