package markdown

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// xssCases is the table of hostile Markdown both this package's tests and the
// dashboard's browser test run: none may leave a script, an event handler,
// a javascript: or data:text URL, a frame or a remote image in the output.
var xssCases = []struct{ Name, Text string }{
	{"javascript link", "[x](javascript:alert(1))"},
	{"javascript link upper case", "[x](JaVaScRiPt:alert(1))"},
	{"javascript autolink", "<javascript:alert(1)>"},
	{"raw script", "<script>alert(1)</script>"},
	{"inline script", "text <script>alert(1)</script> more"},
	{"img onerror", "<img src=x onerror=alert(1)>"},
	{"inline img onerror", "see <img src=x onerror=alert(1)> here"},
	{"iframe", `<iframe src="https://example.com"></iframe>`},
	{"image attribute break-out", `![x](x" onerror="alert(1))`},
	{"image attribute break-out, angle brackets", `![x](<x" onerror="alert(1)>)`},
	{"image javascript", "![x](javascript:alert(1))"},
	{"data text/html link", "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)"},
	{"data text/html link, plain", "[x](data:text/html,<script>alert(1)</script>)"},
	{"entity-split javascript in raw HTML", `<a href="jav&#x09;ascript:alert(1)">x</a>`},
	{"entity-split javascript in a link", "[x](jav&#x09;ascript:alert(1))"},
	{"svg onload", `<svg onload=alert(1)>`},
	{"style tag", `<style>body{display:none}</style>`},
	{"link title break-out", `[x](https://example.com "a\" onmouseover=\"alert(1)")`},
	{"vbscript", "[x](vbscript:msgbox(1))"},
	{"html in code fence language", "```\"><script>alert(1)</script>\nx\n```"},
	{"reference link to javascript", "[x][r]\n\n[r]: javascript:alert(1)"},
	{"form", `<form action="https://example.com"><input name=a></form>`},
	{"object", `<object data="javascript:alert(1)"></object>`},
	{"meta refresh", `<meta http-equiv="refresh" content="0;url=javascript:alert(1)">`},
	{"remote image", "![x](https://example.com/a.png)"},
}

// containsInOrder fails t unless every string of want is in out, each
// after the one before it.
func containsInOrder(t *testing.T, out string, want []string) {
	t.Helper()
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("output %q lacks %q (in order)", out, w)
		}
		rest = rest[i+len(w):]
	}
}

// check fails t for anything unsafe in out: scripts, frames, handlers,
// script URLs, remote images, inline styles. It reads tokens rather than
// building a tree: hostile nesting is deeper than x/net/html's parser
// allows.
func check(t *testing.T, out string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(out))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		switch tok.Data {
		case "script", "iframe", "frame", "object", "embed", "style", "form", "meta", "svg", "base", "link":
			t.Errorf("element <%s> in %q", tok.Data, out)
		}
		for _, a := range tok.Attr {
			k, v := strings.ToLower(a.Key), strings.ToLower(strings.TrimSpace(a.Val))
			switch {
			case strings.HasPrefix(k, "on"):
				t.Errorf("handler attribute %s=%q in %q", a.Key, a.Val, out)
			case k == "style":
				t.Errorf("inline style in %q", out)
			case k == "href" && !(strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") || strings.HasPrefix(v, "mailto:")):
				t.Errorf("href %q in %q", a.Val, out)
			case k == "src" && !dataImage.MatchString(a.Val):
				t.Errorf("src %q in %q", a.Val, out)
			}
		}
	}
}

func TestXSS(t *testing.T) {
	r := New()
	for _, c := range xssCases {
		t.Run(c.Name, func(t *testing.T) {
			check(t, r.Render(c.Text))
		})
	}
}

func TestRawHTMLShownAsText(t *testing.T) {
	r := New()
	out := r.Render("see <img src=x onerror=alert(1)> here")
	if !strings.Contains(out, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Errorf("inline HTML not shown escaped: %q", out)
	}
	out = r.Render("<script>alert(1)</script>")
	if !strings.Contains(out, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("an HTML block not shown escaped: %q", out)
	}
}

func TestRender(t *testing.T) {
	r := New()
	png := "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	cases := []struct {
		name, in string
		want     []string // substrings of the output, in order
	}{
		{"heading and list", "# Title\n\n- one\n- two\n", []string{"<h1>Title</h1>", "<ul>", "<li>one</li>", "<li>two</li>"}},
		{"highlighted code", "```go\nfunc main() {}\n```\n", []string{`<pre class="hl-chroma">`, `<span class="hl-kd">func</span>`}},
		{"unknown language: plain code", "```nosuchlang\nx < y\n```\n", []string{"<pre><code>x &lt; y\n</code></pre>"}},
		{"indented code", "    a && b\n", []string{"<pre><code>a &amp;&amp; b\n</code></pre>"}},
		{"link", "[docs](https://example.com/a?b=1&c=2)", []string{`<a href="https://example.com/a?b=1&amp;c=2"`, `rel="nofollow noreferrer noopener"`, `target="_blank"`, ">docs</a>"}},
		{"autolink", "see https://example.com now", []string{`<a href="https://example.com"`, `target="_blank"`}},
		{"mail", "<me@example.com>", []string{`<a href="mailto:me@example.com"`}},
		{"relative link keeps its text only", "[file](src/main.go)", []string{"<p>file</p>"}},
		{"inline image", "![dot](" + png + ")", []string{`<img src="` + png + `" alt="dot">`}},
		{"remote image becomes a link", "![chart](https://example.com/c.png)", []string{`<a href="https://example.com/c.png"`, "image: chart</a>"}},
		{"table", "| a | b |\n|:--|--:|\n| 1 | 2 |\n", []string{"<table>", `<th align="left">a</th>`, `<td align="right">2</td>`}},
		{"task list", "- [x] done\n- [ ] todo\n", []string{`<input checked="" disabled="" type="checkbox"> done`, `<input disabled="" type="checkbox"> todo`}},
		{"strikethrough", "~~gone~~", []string{"<del>gone</del>"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := r.Render(c.in)
			containsInOrder(t, out, c.want)
			check(t, out)
		})
	}
}

func TestBounds(t *testing.T) {
	r := New()
	big := strings.Repeat("# not a heading <b>\n", MaxInput/20+1)
	out := r.Render(big)
	if !strings.HasPrefix(out, `<pre class="md-plain">`) || strings.Contains(out, "<h1>") || !strings.Contains(out, "&lt;b&gt;") {
		t.Errorf("text over MaxInput was parsed or not escaped: %.200q", out)
	}
	// A code block too long to highlight is shown plain.
	code := "```go\n" + strings.Repeat("x := 1\n", maxHighlight/7+1) + "```\n"
	out = r.Render(code)
	if strings.Contains(out, "hl-chroma") || !strings.HasPrefix(out, "<pre><code>x := 1") {
		t.Errorf("a long code block was highlighted: %.200q", out)
	}
	// Invalid UTF-8 and control characters come back as text.
	out = r.Render("a\x00b\xffc\x1b[31m")
	if !strings.Contains(out, "a") || !strings.Contains(out, "c") {
		t.Errorf("binary-ish text: %q", out)
	}
	check(t, out)
	// Deep nesting renders and stays bounded.
	out = r.Render(strings.Repeat(">", 1000) + " deep\n" + strings.Repeat("- ", 500) + "list\n")
	check(t, out)
}

func FuzzRender(f *testing.F) {
	for _, c := range xssCases {
		f.Add(c.Text)
	}
	f.Add("# h\n\n```go\nx\n```\n| a |\n|---|\n| b |\n")
	// The budget's inputs, small: goldmark parses most of them, some hit a
	// limit (TestPathologicalPlain has them at full size, which would make
	// every mutation and minimisation here take milliseconds).
	for _, c := range append(pathological, overcounted...) {
		f.Add(c.text(2 << 10))
	}
	for _, c := range linear {
		f.Add(c.text(2 << 10))
	}
	r := New()
	f.Fuzz(func(t *testing.T, s string) {
		check(t, r.Render(s))
	})
}
