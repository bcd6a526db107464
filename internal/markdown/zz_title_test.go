package markdown

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestTitles(t *testing.T) {
	if os.Getenv("TITLES") == "" {
		t.Skip()
	}
	r := New()
	gens := map[string]func(int) string{
		"backtick runs":     backtickRuns,
		"indented lists":    indentedList,
		"emphasis [ a_":     repeat("[ a_"),
		"emphasis nested":   func(n int) string { return fill("*a **a ", n/2) + "b" + fill(" a** a*", n/2-1) },
		"x [a] y lines":     repeat("x [a] y\n"),
		"[a] lines":         repeat("[a]\n"),
		"[a]: lines":        repeat("[a]:\n"),
		"multiline titles":  repeat("[a](b\n\""),
		"titles [a](b (":    repeat("[a](b ("),
		"escaped \\]":       func(n int) string { return fill("[", n/3) + fill("\\]", n/3) + fill("]", n/3) },
	}
	for name, g := range gens {
		if o := os.Getenv("ONLY"); o != "" && !strings.Contains(o, name) {
			continue
		}
		for _, n := range []int{64 << 10, MaxInput} {
			s := g(n)
			st := time.Now()
			r.unbudgeted(s)
			fmt.Printf("T %-18s %6d before=%-8v scan=%q\n", name, n, time.Since(st).Round(time.Millisecond), overBudget(s))
		}
	}
}
