package markdown

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

func TestBefore2(t *testing.T) {
	if os.Getenv("BEFORE2") == "" {
		t.Skip()
	}
	n, _ := strconv.Atoi(os.Getenv("SIZE"))
	r := New()
	for _, c := range append(pathological, overcounted...) {
		if c.name == "over MaxInput" {
			continue
		}
		size := n
		if c.name == "wide table" {
			size = 16 << 10
		}
		s := c.text(size)
		start := time.Now()
		out := r.unbudgeted(s)
		before := time.Since(start)
		start = time.Now()
		out2 := r.Render(s)
		after := time.Since(start)
		fmt.Printf("B2 %-28s %7d before=%-10v out=%-9d after=%-8v out=%d\n", c.name, len(s), before.Round(time.Millisecond), len(out), after.Round(time.Microsecond), len(out2))
	}
}
