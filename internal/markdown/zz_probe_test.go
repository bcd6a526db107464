package markdown

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func rep(s string, n int) string { return strings.Repeat(s, n/len(s)+1)[:n] }

func lines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(f(i))
	}
	return b.String()[:n]
}

var probes = map[string]func(n int) string{
	"quote>":          func(n int) string { return rep(">", n) },
	"quote> ":         func(n int) string { return rep("> ", n) },
	"link[a](":        func(n int) string { return rep("[a](", n) },
	"list- ":          func(n int) string { return rep("- ", n) },
	"list* ":          func(n int) string { return rep("* ", n) },
	"list1. ":         func(n int) string { return rep("1. ", n) },
	"indentlist":      func(n int) string { return lines(n, func(i int) string { return strings.Repeat("  ", i) + "* a\n" }) },
	"indentquote":     func(n int) string { return lines(n, func(i int) string { return strings.Repeat("> ", i) + "a\n" }) },
	"stars":           func(n int) string { return rep("*", n) },
	"*a ":             func(n int) string { return rep("*a ", n) },
	"a* ":             func(n int) string { return rep("a* ", n) },
	"_a ":             func(n int) string { return rep("_a ", n) },
	"a_ ":             func(n int) string { return rep("a_ ", n) },
	"*a_ ":            func(n int) string { return rep("*a_ ", n) },
	"nestedemph":      func(n int) string { return rep("*a **a ", n/2) + "b" + rep(" a** a*", n/2) },
	"a**b c* ":        func(n int) string { return "a**b" + rep("c* ", n) },
	"[ a_":            func(n int) string { return rep("[ a_", n) },
	"[ (](":           func(n int) string { return rep("[ (](", n) },
	"![[]()":          func(n int) string { return rep("![[]()", n) },
	"a]":              func(n int) string { return rep("a]", n) },
	"[a":              func(n int) string { return rep("[a", n) },
	"[":               func(n int) string { return rep("[", n) },
	"nestedbrackets":  func(n int) string { return rep("[", n/2) + "a" + rep("]", n/2) },
	"backticks":       func(n int) string { return lines(n, func(i int) string { return "e" + strings.Repeat("`", i+1) }) },
	"`":               func(n int) string { return rep("`", n) },
	"` a":             func(n int) string { return rep("` a", n) },
	"[a](<b":          func(n int) string { return rep("[a](<b", n) },
	"[a](b":           func(n int) string { return rep("[a](b", n) },
	"<!--":            func(n int) string { return "</" + rep("<!--", n) },
	"<":               func(n int) string { return rep("<", n) },
	"<a":              func(n int) string { return rep("<a ", n) },
	"<http":           func(n int) string { return rep("<http://", n) },
	"<a b='":          func(n int) string { return rep("<a b='", n) },
	"<?":              func(n int) string { return rep("a <?", n) },
	"<![CDATA[":       func(n int) string { return rep("a <![CDATA[", n) },
	"<!A":             func(n int) string { return rep("a <!A ", n) },
	"tablecols":       func(n int) string { k := n / 8; return rep("a|", k) + "\n" + rep("-|", k) + "\n" + rep("b|", k) + "\n" },
	"tablerows":       func(n int) string { return "a|b\n-|-\n" + rep("c|d\n", n) },
	"tablewide rows":  func(n int) string { k := 500; return rep("a|", k) + "\n" + rep("-|", k) + "\n" + rep("|", n) },
	"refdefs":         func(n int) string { return lines(n, func(i int) string { return fmt.Sprintf("[%d]: http://x\n", i) }) },
	"refuse":          func(n int) string { return "[x]: http://x\n\n" + rep("[x]", n) },
	"www.":            func(n int) string { return rep("www.", n) },
	"http://":         func(n int) string { return rep("http://", n) },
	"www.a.com/(":     func(n int) string { return "www.a.com/" + rep("(", n) },
	"a@":              func(n int) string { return rep("a@", n) },
	"a.":              func(n int) string { return rep("a.", n) },
	"~~":              func(n int) string { return rep("~a ", n) },
	"&#":              func(n int) string { return rep("&#", n) },
	"\\":              func(n int) string { return rep("\\", n) },
	"[x]: ":           func(n int) string { return rep("[x]: ", n) },
	"fences":          func(n int) string { return rep("```\n", n) },
	"- [ ]":           func(n int) string { return rep("- [ ] ", n) },
	"quote-list":      func(n int) string { return rep("> - ", n) },
	"newlines":        func(n int) string { return rep("\n", n) },
	"a\\n":            func(n int) string { return rep("a\n", n) },
	"setext":          func(n int) string { return rep("a\n=\n", n) },
	"normal":          func(n int) string { return rep("# Title\n\nSome *text* with `code` and [a link](https://x.y/z).\n\n- one\n- two\n\n```go\nfunc main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n", n) },
	"![":              func(n int) string { return rep("![", n) },
	"](":              func(n int) string { return rep("](", n) },
	"[]":              func(n int) string { return rep("[](", n) },
	"(":               func(n int) string { return "[a](" + rep("(", n) },
	"[a](b (":         func(n int) string { return rep("[a](b \"", n) },
	"[a]:":            func(n int) string { return rep("[a]:\n", n) },
	"    indent":      func(n int) string { return rep("    a\n\n", n) },
	"<tags>":          func(n int) string { return rep("<div>", n) },
	"emph_":           func(n int) string { return rep("_", n) },
	"**":              func(n int) string { return rep("**a", n) },
	"list- a":         func(n int) string { return rep("- ", n) + "a" },
	"list* a":         func(n int) string { return rep("* ", n) + "a" },
	"list+ a":         func(n int) string { return rep("+ ", n) + "a" },
	"list1) a":        func(n int) string { return rep("1) ", n) + "a" },
	"mixed > - 1.":    func(n int) string { return rep("> - 1. ", n) + "a" },
	"table amp":       func(n int) string { k := 1000; return rep("a|", k) + "\n" + rep("-|", k) + "\n" + rep("x\n", n-4*k) },
	"ref amp":         func(n int) string { return "[x]: http://x/" + rep("a", n/2) + "\n\n" + rep("[x]", n/2) },
	"ref amp img":     func(n int) string { return "[x]: http://x/" + rep("a", n/2) + "\n\n" + rep("![x]", n/2) },
	"ref amp title":   func(n int) string { return "[x]: http://x/ '" + rep("a", n/2) + "'\n\n" + rep("[x]", n/2) },
	"emph amp":        func(n int) string { return rep("*", n/2) + "a" + rep("*", n/2) },
	"_ runs":          func(n int) string { return rep("_a_ ", n) },
	"a*b":             func(n int) string { return rep("a*b ", n) },
	"***a":            func(n int) string { return rep("***a ", n) },
	"quote lines":     func(n int) string { return rep(">\n", n) },
	"quote a lines":   func(n int) string { return rep("> a\n", n) },
	"`a` runs":        func(n int) string { return rep("``a`", n) },
	"entity":          func(n int) string { return rep("&amp;", n) },
	"html block lines": func(n int) string { return rep("<div>\n", n) },
	"<a><":            func(n int) string { return rep("<a><", n) },
	"[![":             func(n int) string { return rep("[![a](", n) },
	"[a](b)":          func(n int) string { return rep("[a](http://b)", n) },
	"]]":              func(n int) string { return rep("[a]", n) },
	"[^":              func(n int) string { return rep("[^a", n) },
	"|||":             func(n int) string { return rep("|", n) },
	"|-":              func(n int) string { return "|a|\n" + rep("|-", n) },
}

func TestProbe(t *testing.T) {
	if os.Getenv("PROBE") == "" {
		t.Skip()
	}
	r := New()
	sizes := []int{8 << 10, 16 << 10, 32 << 10}
	only := os.Getenv("ONLY")
	for name, f := range probes {
		if only != "" && !strings.Contains(","+only+",", ","+name+",") {
			continue
		}
		line := name + ":"
		for _, n := range sizes {
			s := f(n)
			start := time.Now()
			done := make(chan struct{})
			go func() { r.Render(s); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				line += fmt.Sprintf(" %dK>20s", n>>10)
				fmt.Println(line)
				os.Exit(1)
			}
			d := time.Since(start)
			line += fmt.Sprintf(" %dK=%v", n>>10, d.Round(time.Millisecond))
			if d > 3*time.Second {
				break
			}
		}
		fmt.Println(line)
	}
}
