package markdown

import (
	"os"
	"testing"

	"github.com/yuin/goldmark/text"
)

func BenchmarkProbeParse(b *testing.B) {
	u := os.Getenv("UNIT")
	if u == "" {
		b.Skip()
	}
	r := New()
	s := []byte(fill(u, 96<<10))
	for b.Loop() {
		r.md.Parser().Parse(text.NewReader(s))
	}
}
