package markdown

import (
	"fmt"
	"strings"
	"testing"
)

// fill repeats unit to n bytes: the pathological inputs at the largest
// size Render would parse.
func fill(unit string, n int) string { return strings.Repeat(unit, n/len(unit)+1)[:n] }

// pathological is the table of inputs goldmark was slow on, or exploded
// with, before the budget, each with the limit that catches it at MaxInput
// bytes; text(n) is n bytes of it (about). Measured before, at MaxInput:
// ">" 13 s, "- - -" 22 s, "[a](" 15 s, "*a_ " 11 s, nested "[" 7.5 s,
// "[a]" lines 1.6 s, and at 16 KB the wide table 11 s and 84 MB of HTML;
// now each takes a few milliseconds. FuzzRender seeds with them.
var pathological = []struct {
	name  string
	text  func(n int) string
	limit string
}{
	{"block quotes >>>", repeat(">"), "nesting"},
	{"block quotes > > >", repeat("> "), "nesting"},
	{"nested lists - - -", repeatThen("- ", "a"), "nesting"},
	{"nested lists * * *", repeatThen("* ", "a"), "nesting"},
	{"nested lists 1. 1.", repeatThen("1. ", "a"), "nesting"},
	{"quote and list > - 1.", repeatThen("> - 1. ", "a"), "nesting"},
	{"indented lists", indentedList, "nesting"},
	{"unclosed links [a](", repeat("[a]("), "link destinations"},
	{"unclosed links [](", repeat("[]("), "link destinations"},
	{"unclosed links [a](b", repeat("[a](b"), "link destinations"},
	{"unclosed links [a](<b", repeat("[a](<b"), "link destinations"},
	{"unclosed links [a](()", repeat("[a](()"), "link destinations"},
	{"emphasis *a_", repeat("*a_ "), "emphasis"},
	{"emphasis a**b c*", func(n int) string { return "a**b" + fill("c* ", n-4) }, "emphasis"},
	{"strikethrough *a~", repeat("*a~ "), "emphasis"},
	{"nested brackets", func(n int) string { return fill("[", n/2) + "a" + fill("]", n/2-1) }, "brackets"},
	{"escaped brackets", func(n int) string { return fill("[", n/3) + fill("\\]", n/3) + fill("]", n/3) }, "brackets"},
	{"labels on every line", repeat("x [a] y\n"), "paragraph lines"},
	{"labels alone on every line", repeat("[a]\n"), "paragraph lines"},
	{"multi-line titles", repeat("[a](b\n\""), "paragraph lines"},
	{"reference definitions", repeat("[a]:\n"), "paragraph lines"},
	{"wide table", func(n int) string {
		cols := min(2000, n/8)
		return fill("a|", 2*cols) + "\n" + fill("-|", 2*cols) + "\n" + fill("x\n", n-4*cols-2)
	}, "table cells"},
	{"long table", func(n int) string { return "a|b\n-|-\n" + fill("c|d\n", n-8) }, "table cells"},
	{"over MaxInput", func(n int) string { return fill("a", n+1) }, "input size"},
}

// overcounted is the table of inputs goldmark parses fast but the budget's
// counts, which err on the safe side, refuse.
var overcounted = []struct {
	name  string
	text  func(n int) string
	limit string
}{
	{"emphasis [ a_", repeat("[ a_"), "emphasis"},
	{"emphasis nested", func(n int) string { return fill("*a **a ", n/2) + "b" + fill(" a** a*", n/2-1) }, "emphasis"},
}

// repeat and repeatThen make the text funcs of the tables.
func repeat(unit string) func(int) string { return func(n int) string { return fill(unit, n) } }

func repeatThen(unit, end string) func(int) string {
	return func(n int) string { return fill(unit, n-len(end)) + end }
}

// indentedList is n bytes of items, each indented a level more than the
// one before.
func indentedList(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(strings.Repeat("  ", i) + "- a\n")
	}
	return b.String()[:n]
}

// backtickRuns is n bytes of "e" and a backtick run, the runs one longer
// each time, none closed (CommonMark's pathological backticks).
func backtickRuns(n int) string {
	var b strings.Builder
	for i := 1; b.Len() < n; i++ {
		b.WriteString("e" + strings.Repeat("`", i))
	}
	return b.String()[:n]
}

// linear is the table of inputs that look hostile but goldmark parses in
// about linear time (backtick runs: n^1.5, 45 ms at MaxInput): at
// MaxInput bytes they stay Markdown.
var linear = []struct {
	name string
	text func(n int) string
}{
	{"autolinks <http://", repeat("<http://")},
	{"angle brackets <", repeat("<")},
	{"raw HTML <a b='", repeat("<a b='")},
	{"comments <!--", func(n int) string { return "</" + fill("<!--", n-2) }},
	{"link closers a]", repeat("a]")},
	{"link openers [a", repeat("[a")},
	{"links [a](b)", repeat("[a](b)")},
	{"images ![[]()", repeat("![[]()")},
	{"titles [a](b (", repeat("[a](b (")},
	{"titles [a](b \"", repeat("[a](b \"")},
	{"stars", repeat("*")},
	{"underscores", repeat("_")},
	{"emphasis openers ~a", repeat("~a ")},
	{"thematic breaks - - -", repeat("- ")},
	{"backtick runs", backtickRuns},
	{"code spans ` a", repeat("` a")},
	{"entities &#", repeat("&#")},
	{"fences", repeat("```\n")},
	{"link uses [x]", func(n int) string { return "[x]: https://example.com\n\n" + fill("[x]", n-30) }},
}

func TestOverBudget(t *testing.T) {
	for _, c := range append(pathological, overcounted...) {
		t.Run(c.name, func(t *testing.T) {
			if got := overBudget(c.text(MaxInput)); got != c.limit {
				t.Errorf("overBudget = %q, want %q", got, c.limit)
			}
		})
	}
	for _, c := range linear {
		t.Run(c.name, func(t *testing.T) {
			if got := overBudget(c.text(MaxInput)); got != "" {
				t.Errorf("overBudget = %q, want none: goldmark is linear on it", got)
			}
		})
	}
}

// TestBudgetRealText: text as people and models write it, as long as the
// dashboard asks for, stays well inside every limit.
func TestBudgetRealText(t *testing.T) {
	var python strings.Builder // one fence, no blank line: every "_" run counts
	for i := 0; python.Len() < 60<<10; i++ {
		fmt.Fprintf(&python, "    result_%d = some_module.do_the_thing(first_arg, second_arg=__name__)  # *ptr_%d\n", i, i)
	}
	var table strings.Builder
	table.WriteString("|" + strings.Repeat(" col |", 20) + "\n|" + strings.Repeat("---|", 20) + "\n")
	for table.Len() < MaxInput-200 {
		table.WriteString("|" + strings.Repeat(" `x` |", 20) + "\n")
	}
	var links strings.Builder
	for i := 0; links.Len() < MaxInput-200; i++ {
		fmt.Fprintf(&links, "- [**item %d**](https://example.com/%d \"title\") and _more_ `code`\n", i, i)
	}
	for _, c := range []struct{ name, text string }{
		{"python fence", "```python\n" + python.String() + "```\n"},
		{"20-column table", table.String()},
		{"list of links", links.String()},
		{"mixed document", ordinary(MaxInput - 2000)},
		{"inline image", "![chart](data:image/png;base64," + strings.Repeat("iVBORw0KGgo", 15000) + ")"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := overBudget(c.text); got != "" {
				t.Errorf("%d bytes of ordinary text are over the %s budget", len(c.text), got)
			}
		})
	}
}

// ordinary is about n bytes of the Markdown a model writes: headings,
// emphasis, links, quotes, nested lists, code, a table, thematic breaks.
func ordinary(n int) string {
	var doc strings.Builder
	for doc.Len() < n {
		doc.WriteString("## Heading\n\nSome *emphasis*, **strong**, ~~gone~~, `code` and a [link](https://example.com/a_b) in a sentence.\n\n" +
			"> A quote with **bold**\n> > and a nested one\n\n" +
			"1. one\n   - nested `x`\n     - deeper *y*\n       - deepest\n2. two\n\n" +
			"```go\nfunc f(a, b int) int { return a * b }\n```\n\n" +
			"| a | b |\n|:--|--:|\n| 1 | 2 |\n\n* * * * * * * * * * * * * * * * * * * * * * * * * * * * *\n\n")
	}
	return doc.String()
}

// TestBudgetEdges: each limit lets through what is just inside it.
func TestBudgetEdges(t *testing.T) {
	r := New()
	for _, c := range []struct {
		name, in, over string
	}{
		{"quotes", strings.Repeat(">", maxNesting) + " a", strings.Repeat(">", maxNesting+1) + " a"},
		{"lists", strings.Repeat("- ", maxNesting) + "a", strings.Repeat("- ", maxNesting+1) + "a"},
		{"table", strings.Repeat("a|", 99) + "a\n" + strings.Repeat("-|", 99) + "-\n" + strings.Repeat("x\n", maxTableCells/100-2),
			strings.Repeat("a|", 99) + "a\n" + strings.Repeat("-|", 99) + "-\n" + strings.Repeat("x\n", maxTableCells/100)},
		{"input", strings.Repeat("a", MaxInput), strings.Repeat("a", MaxInput+1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if why := overBudget(c.in); why != "" {
				t.Errorf("just inside: over the %s budget", why)
			}
			if out := r.Render(c.in); strings.HasPrefix(out, `<pre class="md-plain">`) {
				t.Errorf("just inside: rendered plain: %.100q", out)
			}
			if why := overBudget(c.over); why == "" {
				t.Errorf("just outside: within the budget")
			}
		})
	}
}

// TestPathologicalPlain: each pathological input comes back as escaped
// text in a <pre>, at once (the pre-scan, not goldmark, decided).
func TestPathologicalPlain(t *testing.T) {
	r := New()
	for _, c := range pathological {
		t.Run(c.name, func(t *testing.T) {
			out := r.Render(c.text(MaxInput))
			if !strings.HasPrefix(out, `<pre class="md-plain">`) || !strings.HasSuffix(out, "</pre>") {
				t.Errorf("not the plain fallback: %.100q", out)
			}
			check(t, out)
		})
	}
}

// TestFallbackEscapes: the plain fallback is inert whatever the text holds:
// markup comes back as the characters written, and invalid UTF-8 as U+FFFD.
func TestFallbackEscapes(t *testing.T) {
	r := New()
	hostile := `<script>alert(1)</script><img src=x onerror=alert(1)>"'&` + "\xff</pre><iframe>"
	for _, text := range []string{
		strings.Repeat(">", maxNesting+1) + hostile,                                                      // nesting
		hostile + fill("[a](", MaxInput-len(hostile)),                                                    // link destinations
		hostile + fill("<b>", MaxInput+1-len(hostile)),                                                   // input size
		"[x]: https://example.com/" + fill("a", 64<<10) + "\n\n" + strings.Repeat("[x] ", 200) + hostile, // output
	} {
		out := r.Render(text)
		check(t, out)
		if strings.Contains(out, "<script") || strings.Contains(out, "<img") || strings.Contains(out, "<iframe") ||
			strings.Count(out, "</pre>") > 1 || strings.Contains(out, "\xff") {
			t.Errorf("fallback lets markup through: %.300q", out[max(0, strings.Index(out, "&lt;script")-50):])
		}
	}
	out := plain(hostile)
	want := `<pre class="md-plain">&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&#34;&#39;&amp;` +
		"\uFFFD&lt;/pre&gt;&lt;iframe&gt;</pre>"
	if out != want {
		t.Errorf("plain(%q) = %q, want %q", hostile, out, want)
	}
}

// TestOutputBudget: a reference used again and again repeats a long
// destination into an output bomb; the walk stops at maxOutput and the
// text comes back plain.
func TestOutputBudget(t *testing.T) {
	r := New()
	dest := "https://example.com/" + strings.Repeat("a", 64<<10)
	bomb := "[x]: " + dest + "\n\n" + strings.Repeat("[x] ", 200) // 13 MB of hrefs
	if why := overBudget(bomb); why != "" {
		t.Fatalf("the bomb is caught by the pre-scan (%s); this test is for the output limit", why)
	}
	out := r.Render(bomb)
	if !strings.HasPrefix(out, `<pre class="md-plain">`) || len(out) > 2*len(bomb) {
		t.Errorf("output bomb rendered: %d bytes, %.100q", len(out), out)
	}
	// Under the limit, the same shape renders as links.
	out = r.Render("[x]: " + dest + "\n\n" + strings.Repeat("[x] ", 10))
	if strings.Count(out, "<a href=") != 10 {
		t.Errorf("10 reference links: %d anchors", strings.Count(out, "<a href="))
	}

	w := &limitWriter{max: 8}
	if _, err := w.WriteString("12345678"); err != nil || over(w) {
		t.Fatalf("within max: %v, over %v", err, over(w))
	}
	if err := w.WriteByte('9'); err == nil || !over(w) || w.String() != "12345678" {
		t.Errorf("past max: %v, over %v, kept %q", err, over(w), w.String())
	}
	if _, err := w.Write([]byte("x")); err == nil || w.Flush() == nil {
		t.Errorf("writes after over must fail, and Flush report it")
	}
}
