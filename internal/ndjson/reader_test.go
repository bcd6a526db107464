package ndjson

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestLineReader(t *testing.T) {
	in := "a\r\n" + strings.Repeat("x", 100) + "\n\nu\u2028v\nlast"
	lr := NewReader(strings.NewReader(in), 50)
	var got []string
	var errs int
	for {
		line, err := lr.Next()
		if line == nil && err != nil {
			break
		}
		if err != nil {
			errs++
			if !errors.Is(err, ErrLineTooLong) || len(line) > 1024 {
				t.Errorf("long line: %v %d", err, len(line))
			}
			continue
		}
		got = append(got, string(line))
	}
	want := []string{"a", "", "u\u2028v", "last"}
	if !slices.Equal(got, want) || errs != 1 {
		t.Errorf("lines %q (errs %d), want %q", got, errs, want)
	}
}
