package markdown

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

var edges = map[string]func(k int) string{
	"quote32 lines":  func(k int) string { return strings.Repeat(strings.Repeat("> ", 16)+"a\n", k) },
	"list32 lines":   func(k int) string { return strings.Repeat(strings.Repeat("- ", 16)+"a\n", k) },
	"quote>":         func(k int) string { return strings.Repeat(">", k) },
	"list- a":        func(k int) string { return strings.Repeat("- ", k) + "a" },
	"[a](":           func(k int) string { return strings.Repeat("[a](", k) + rp("word ", (MaxInput-4*k)/5) },
	"[a](+pad":       func(k int) string { return strings.Repeat("[a](", k) + rp("x", MaxInput-4*k) },
	"[a](b (":        func(k int) string { return strings.Repeat("[a](b (", k) + rp("x ", (MaxInput-7*k)/2) },
	"*a_ ":          func(k int) string { return strings.Repeat("*a_ ", k) },
	"*a_ +pad":       func(k int) string { return strings.Repeat("*a_ ", k) + rp("x ", (MaxInput-4*k)/2) },
	"*a~":            func(k int) string { return strings.Repeat("*a~ ", k) },
	"nested[":        func(k int) string { return strings.Repeat("[", k) + "a" + strings.Repeat("]", k) },
	"backticks":      func(k int) string { var b strings.Builder; for i := 1; i <= k; i++ { b.WriteString("e" + strings.Repeat("`", i)) }; return b.String() },
	"backticks+pad":  func(k int) string { var b strings.Builder; for i := 1; i <= k; i++ { b.WriteString("e" + strings.Repeat("`", i)) }; b.WriteString(rp("x ", (MaxInput-b.Len())/2)); return b.String() },
	"[a]:":           func(k int) string { return strings.Repeat("[a]:\n", k) },
	"table wide":     func(k int) string { return strings.Repeat("a|", 1000) + "\n" + strings.Repeat("-|", 1000) + "\n" + strings.Repeat("x\n", k) },
	"table narrow":   func(k int) string { return "a|b\n-|-\n" + strings.Repeat("c|d\n", k) },
	"ref amp":        func(k int) string { return "[x]: http://x/" + strings.Repeat("a", k) + "\n\n" + rp("[x]", (MaxInput-k-20)/3) },
}

func rp(s string, n int) string { if n < 0 { return "" }; return strings.Repeat(s, n) }

func TestEdge(t *testing.T) {
	if os.Getenv("EDGE") == "" {
		t.Skip()
	}
	r := New()
	for name, f := range edges {
		// largest k under budget and input size
		lo, hi := 0, 1
		for overBudget(f(hi)) == "" && len(f(hi)) <= MaxInput && hi < 1<<20 {
			lo, hi = hi, hi*2
		}
		for hi-lo > 1 {
			m := (lo + hi) / 2
			if overBudget(f(m)) == "" {
				lo = m
			} else {
				hi = m
			}
		}
		s := f(lo)
		start := time.Now()
		out := r.Render(s)
		d := time.Since(start)
		fmt.Printf("EDGE %-14s k=%-7d bytes=%-7d next=%-22q render=%-8v md=%v\n", name, lo, len(s), overBudget(f(hi)), d.Round(time.Millisecond), !strings.HasPrefix(out, "<pre class=\"md-plain\">"))
	}
}
