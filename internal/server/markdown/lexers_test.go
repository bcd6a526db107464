package markdown

import (
	"io/fs"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/alecthomas/chroma/v2"
)

// TestLexersLoad: every embedded file loads, and every lexer's rules
// compile (chroma compiles them on first use, so only tokenising shows a
// bad pattern).
func TestLexersLoad(t *testing.T) {
	reg, err := lexerRegistry()
	if err != nil {
		t.Fatal(err)
	}
	files, err := fs.Glob(lexerFiles, "lexers/*.xml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("only %d embedded lexers: %v", len(files), files)
	}
	if got, want := len(reg.Lexers), len(files)+1; got != want { // +1: Go
		t.Errorf("%d lexers registered, want %d (the %d files and Go)", got, want, len(files))
	}
	for _, l := range reg.Lexers {
		name := l.Config().Name
		if _, err := chroma.Tokenise(l, nil, "x = 1\n"); err != nil {
			t.Errorf("lexer %s: %v", name, err)
		}
		for _, alias := range append([]string{name}, l.Config().Aliases...) {
			for _, a := range []string{alias, strings.ToUpper(alias)} {
				if got := lexerFor(a); got != l {
					t.Errorf("lexerFor(%q) = %v, want %s", a, got, name)
				}
			}
		}
	}
}

// TestHighlightLanguages renders a fenced block per language through the
// whole renderer: each comes out highlighted (classes only; check passes).
// The html, docker and make cases also prove that an XML lexer's reference
// to another (CSS, JavaScript, Bash) resolves in our registry.
func TestHighlightLanguages(t *testing.T) {
	r := New()
	cases := []struct {
		lang, code string
		want       []string // in order
	}{
		{"go", "func main() {\n\tfmt.Println(\"hi\\n\", len(os.Args))\n}\n", []string{`<span class="hl-kd">func</span>`, `<span class="hl-nf">Println</span>`, `<span class="hl-se">\n</span>`, `<span class="hl-nb">len</span>`}},
		{"golang", "var x int\n", []string{`<span class="hl-kd">var</span>`, `<span class="hl-kt">int</span>`}},
		{"Go", "return nil\n", []string{`<span class="hl-k">return</span>`, `<span class="hl-kc">nil</span>`}},
		{"python", "def f(x):\n    return 'a'  # c\n", []string{`<span class="hl-k">def</span>`, `<span class="hl-nf">f</span>`, `<span class="hl-c1"># c</span>`}},
		{"py", "import os\n", []string{`<span class="hl-kn">import</span>`}},
		{"bash", "echo \"$HOME\" # c\n", []string{`<span class="hl-nb">echo</span>`, `<span class="hl-nv">$HOME</span>`, `<span class="hl-c1"># c</span>`}},
		{"sh", "export A=1\n", []string{`<span class="hl-nb">export</span>`}},
		{"shell", "if true; then :; fi\n", []string{`<span class="hl-k">if</span>`}},
		{"zsh", "echo hi\n", []string{`<span class="hl-nb">echo</span>`}},
		{"js", "const x = 1; // c\n", []string{`<span class="hl-kr">const</span>`, `<span class="hl-mi">1</span>`}},
		{"javascript", "function f() {}\n", []string{`<span class="hl-kd">function</span>`}},
		{"ts", "let x: number = 1;\n", []string{`<span class="hl-kd">let</span>`, `<span class="hl-kt">number</span>`}},
		{"typescript", "interface A {}\n", []string{`<span class="hl-kr">interface</span>`}},
		{"json", `{"a": [true, 1]}` + "\n", []string{`<span class="hl-nt">&#34;a&#34;</span>`, `<span class="hl-kc">true</span>`, `<span class="hl-mi">1</span>`}},
		{"yaml", "a: 1\n", []string{`<span class="hl-nt">a</span>`}},
		{"yml", "a: 1\n", []string{`<span class="hl-nt">a</span>`}},
		{"YML", "a: 1\n", []string{`<span class="hl-nt">a</span>`}},
		{"diff", "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n", []string{`<span class="hl-gd">--- a`, `<span class="hl-gi">+++ b`, `<span class="hl-gu">@@ -1 +1 @@`}},
		{"rust", "fn main() { let x = 1; }\n", []string{`<span class="hl-k">fn</span>`, `<span class="hl-nf">main</span>`, `<span class="hl-kd">let</span>`}},
		{"rs", "fn f() {}\n", []string{`<span class="hl-k">fn</span>`}},
		{"c++", "int main() { return 0; }\n", []string{`<span class="hl-kt">int</span>`, `<span class="hl-nf">main</span>`, `<span class="hl-k">return</span>`}},
		{"cpp", "int x;\n", []string{`<span class="hl-kt">int</span>`}},
		{"C", "int x;\n", []string{`<span class="hl-kt">int</span>`}},
		{"html", "<p class=\"x\">hi</p>\n<style>p { color: red; }</style>\n<script>var x = 1;</script>\n",
			[]string{`<span class="hl-nt">p</span>`, `<span class="hl-na">class</span>`, `<span class="hl-k">color</span>`, `<span class="hl-kd">var</span>`}},
		{"dockerfile", "FROM alpine\nRUN echo hi\n", []string{`<span class="hl-k">FROM</span>`, `<span class="hl-k">RUN</span>`, `<span class="hl-nb">echo</span>`}},
		{"make", "all:\n\techo hi\n", []string{`<span class="hl-nf">all</span>`, `<span class="hl-nb">echo</span>`}},
		{"java", "public class A {}\n", []string{`<span class="hl-kd">public</span>`}},
		{"sql", "SELECT 1;\n", []string{`<span class="hl-k">SELECT</span>`}},
		{"toml", "[a]\nb = 1\n", []string{`<span class="hl-mi">1</span>`}},
	}
	for _, c := range cases {
		t.Run(c.lang, func(t *testing.T) {
			out := r.Render("```" + c.lang + "\n" + c.code + "```\n")
			if !strings.HasPrefix(out, `<pre class="hl-chroma">`) {
				t.Fatalf("%s code not highlighted: %q", c.lang, out)
			}
			containsInOrder(t, out, c.want)
			check(t, out)
		})
	}
}

// TestHighlightPlain: no language, or one we have no lexer for, is
// escaped code without a class, as before.
func TestHighlightPlain(t *testing.T) {
	r := New()
	for _, fence := range []string{"```", "``` ", "```nosuchlang", "```text", "```markdown"} {
		t.Run(fence, func(t *testing.T) {
			out := r.Render(fence + "\nx < y\n```\n")
			if want := "<pre><code>x &lt; y\n</code></pre>"; !strings.HasPrefix(out, want) {
				t.Errorf("Render(%q) = %q, want it to start %q", fence, out, want)
			}
		})
	}
}

// TestFormatRecovers: chroma's emitters panic when a sub-lexer is missing;
// that must become an error (and the block plain), not a panic in the
// handler.
func TestFormatRecovers(t *testing.T) {
	reg := chroma.NewLexerRegistry()
	l := reg.Register(chroma.MustNewLexer(&chroma.Config{Name: "broken"}, func() chroma.Rules {
		return chroma.Rules{"root": {{Pattern: `[\s\S]+`, Type: chroma.Using("NoSuchLexer")}}}
	}))
	if out, err := newHighlighter().format(l, "x\n"); err == nil {
		t.Errorf("format with a missing sub-lexer = %q, nil; want an error", out)
	}
}

// goToken is one expected token of the Go lexer.
type goToken struct {
	T chroma.TokenType // exported so that %v prints its name
	V string
}

func TestGoLexer(t *testing.T) {
	cases := []struct {
		name, code string
		want       []goToken // in order, whitespace left out
	}{
		{"package", "package main", []goToken{{chroma.KeywordNamespace, "package"}, {chroma.NameNamespace, "main"}}},
		{"type declaration", "type T struct{}", []goToken{{chroma.KeywordDeclaration, "type"}, {chroma.NameClass, "T"}, {chroma.KeywordDeclaration, "struct"}, {chroma.Punctuation, "{"}, {chroma.Punctuation, "}"}}},
		{"type switch", "x.(type)", []goToken{{chroma.Name, "x"}, {chroma.Punctuation, "."}, {chroma.Punctuation, "("}, {chroma.KeywordDeclaration, "type"}, {chroma.Punctuation, ")"}}},
		{"method", "func (t *T) Run() error", []goToken{{chroma.KeywordDeclaration, "func"}, {chroma.Punctuation, "("}, {chroma.Name, "t"}, {chroma.Operator, "*"}, {chroma.Name, "T"}, {chroma.Punctuation, ")"}, {chroma.NameFunction, "Run"}, {chroma.Punctuation, "("}, {chroma.Punctuation, ")"}, {chroma.KeywordType, "error"}}},
		{"builtin only when called", "max := len (s)", []goToken{{chroma.Name, "max"}, {chroma.Operator, ":="}, {chroma.NameBuiltin, "len"}, {chroma.Punctuation, "("}, {chroma.Name, "s"}, {chroma.Punctuation, ")"}}},
		{"conversion", "int64(n)", []goToken{{chroma.KeywordType, "int64"}, {chroma.Punctuation, "("}, {chroma.Name, "n"}, {chroma.Punctuation, ")"}}},
		{"unicode name", "café := π", []goToken{{chroma.Name, "café"}, {chroma.Operator, ":="}, {chroma.Name, "π"}}},
		{"constants", "true false nil iota", []goToken{{chroma.KeywordConstant, "true"}, {chroma.KeywordConstant, "false"}, {chroma.KeywordConstant, "nil"}, {chroma.KeywordConstant, "iota"}}},
		{"numbers", "42 1_000 0x1F 0b101 0o17 0755 3.14 .5 1e9 6.02e+23 0x1p-2 2i",
			[]goToken{{chroma.LiteralNumberInteger, "42"}, {chroma.LiteralNumberInteger, "1_000"}, {chroma.LiteralNumberHex, "0x1F"}, {chroma.LiteralNumberBin, "0b101"},
				{chroma.LiteralNumberOct, "0o17"}, {chroma.LiteralNumberOct, "0755"}, {chroma.LiteralNumberFloat, "3.14"}, {chroma.LiteralNumberFloat, ".5"},
				{chroma.LiteralNumberFloat, "1e9"}, {chroma.LiteralNumberFloat, "6.02e+23"}, {chroma.LiteralNumberFloat, "0x1p-2"}, {chroma.LiteralNumberInteger, "2i"}}},
		{"strings", "\"a\\tb\\x41\" `raw\\n`", []goToken{{chroma.LiteralStringDouble, `"`}, {chroma.LiteralStringDouble, "a"}, {chroma.LiteralStringEscape, `\t`}, {chroma.LiteralStringDouble, "b"}, {chroma.LiteralStringEscape, `\x41`}, {chroma.LiteralStringDouble, `"`}, {chroma.LiteralStringBacktick, "`raw\\n`"}}},
		{"multi-line raw string", "`a\nb` x", []goToken{{chroma.LiteralStringBacktick, "`a\nb`"}, {chroma.Name, "x"}}},
		{"unterminated string ends with its line", "s := \"abc\nx", []goToken{{chroma.Name, "s"}, {chroma.Operator, ":="}, {chroma.LiteralStringDouble, `"`}, {chroma.LiteralStringDouble, "abc"}, {chroma.Name, "x"}}},
		{"runes", `'a' '\n' '\'' '\u00e9' 'é'`, []goToken{{chroma.LiteralStringChar, "'a'"}, {chroma.LiteralStringChar, `'\n'`}, {chroma.LiteralStringChar, `'\''`}, {chroma.LiteralStringChar, `'\u00e9'`}, {chroma.LiteralStringChar, "'é'"}}},
		{"comments", "x // a \"b\"\n/* c\nd */ y /* open", []goToken{{chroma.Name, "x"}, {chroma.CommentSingle, `// a "b"`}, {chroma.CommentMultiline, "/* c\nd */"}, {chroma.Name, "y"}, {chroma.CommentMultiline, "/* open"}}},
		{"operators", "a &^= b<<2 && c <- d... != e", []goToken{{chroma.Name, "a"}, {chroma.Operator, "&^="}, {chroma.Name, "b"}, {chroma.Operator, "<<"}, {chroma.LiteralNumberInteger, "2"}, {chroma.Operator, "&&"},
			{chroma.Name, "c"}, {chroma.Operator, "<-"}, {chroma.Name, "d"}, {chroma.Operator, "..."}, {chroma.Operator, "!="}, {chroma.Name, "e"}}},
		{"stray characters are text", "x @ $", []goToken{{chroma.Name, "x"}, {chroma.Text, "@"}, {chroma.Text, "$"}}},
	}
	l := goLexer()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			toks, err := chroma.Tokenise(l, nil, c.code)
			if err != nil {
				t.Fatal(err)
			}
			var got []goToken
			var text strings.Builder
			for _, tok := range toks {
				text.WriteString(tok.Value)
				if tok.Type != chroma.TextWhitespace {
					got = append(got, goToken{tok.Type, tok.Value})
				}
			}
			if text.String() != c.code {
				t.Errorf("tokens spell %q, not the input %q", text.String(), c.code)
			}
			if len(got) != len(c.want) {
				t.Fatalf("tokens of %q:\n got %v\nwant %v", c.code, got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("token %d of %q = %v %q, want %v %q", i, c.code, got[i].T, got[i].V, c.want[i].T, c.want[i].V)
				}
			}
		})
	}
}

// FuzzGoLexer: whatever is pasted as Go, the tokens spell it exactly and
// none is an error (which the stylesheet paints red).
func FuzzGoLexer(f *testing.F) {
	for _, s := range []string{"package main\n\nfunc main() { fmt.Println(\"hi\\n\", 'x', `r`, 0x1p-2) }\n", "/* open", "\"open\n", "'", "`", "\\", "0x", "1e", "a.(type)"} {
		f.Add(s)
	}
	l := goLexer()
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsRune(s, '\r') {
			t.Skip("chroma rewrites invalid UTF-8 and CR before lexing")
		}
		toks, err := chroma.Tokenise(l, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, tok := range toks {
			if tok.Type == chroma.Error {
				t.Errorf("error token %q in %q", tok.Value, s)
			}
			text.WriteString(tok.Value)
		}
		if text.String() != s {
			t.Errorf("tokens spell %q, not the input %q", text.String(), s)
		}
	})
}

// TestBinaryDoesNotLinkChromaRegistries keeps the server light: importing
// chroma/v2/lexers (or styles) runs an init that parses every lexer (or
// theme) in every claude-relay-server process, the embedded default of
// each helper among them. (claude-relay links no chroma at all:
// cmd/claude-relay's tests.)
func TestBinaryDoesNotLinkChromaRegistries(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not in PATH:", err)
	}
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "../../../cmd/claude-relay-server").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ../../cmd/claude-relay-server: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch pkg {
		case "github.com/alecthomas/chroma/v2/lexers", "github.com/alecthomas/chroma/v2/styles":
			t.Errorf("claude-relay-server links %s, whose init costs every process; use internal/server/markdown/lexers.go", pkg)
		}
	}
}
