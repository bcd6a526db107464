package launch

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Errors of Program; callers wrap them in their own request errors.
var (
	ErrNoCLI             = errors.New("no Claude CLI configured (set claude.path or install it)")
	ErrEmptyCommand      = errors.New("empty base command")
	ErrUnterminatedQuote = errors.New("unterminated quote")
)

// Program resolves what to execute. A base command, when set, replaces path
// and is split into words like a POSIX shell would (quotes and backslashes,
// no expansion); its words after the first come before every other
// argument. The returned slice is the caller's to append to.
func Program(path, baseCommand string) (string, []string, error) {
	switch {
	case baseCommand != "":
		words, err := splitCommand(baseCommand)
		if err != nil {
			return "", nil, err
		}
		return words[0], words[1:], nil
	case path != "":
		return path, nil, nil
	default:
		return "", nil, ErrNoCLI
	}
}

// splitCommand splits s into words: single quotes, double quotes and
// backslashes as in a POSIX shell; no expansion of any kind.
func splitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("base command %q: %w", s, ErrUnterminatedQuote)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("base command %q: %w", s, ErrUnterminatedQuote)
			}
			inWord = true
		case unicode.IsSpace(rune(c)):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, ErrEmptyCommand
	}
	return words, nil
}
