package markdown

import (
	"bytes"
	"fmt"
	"html"
	"io"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
)

// The stylesheet for these classes is generated from chroma's themes by a
// test (highlight_css_test.go), so the themes are not linked into the
// binary: chroma's styles package parses every theme at init.
//go:generate go test -run TestHighlightCSS -update .

// maxHighlight is the largest code block that is highlighted, in bytes;
// longer ones are shown plain. Chroma's lexers are regular expressions
// (each match bounded by a timeout), fine for code people read, slow for a
// pasted megabyte.
const maxHighlight = 64 << 10

// classPrefix keeps chroma's short class names ("k", "s2", "err") apart
// from the dashboard's own.
const classPrefix = "hl-"

type highlighter struct {
	f *chromahtml.Formatter
	// style is required by Format; with classes it styles nothing.
	style *chroma.Style
}

func newHighlighter() *highlighter {
	return &highlighter{f: formatter(), style: chroma.MustNewStyle("classes", chroma.StyleEntries{})}
}

func formatter() *chromahtml.Formatter {
	return chromahtml.New(chromahtml.WithClasses(true), chromahtml.ClassPrefix(classPrefix), chromahtml.TabWidth(4))
}

// write writes code as a highlighted <pre>, or a plain one when it is too
// long, the language is unknown (lexerFor) or highlighting fails.
func (h *highlighter) write(w io.Writer, lang, code string) {
	if len(code) <= maxHighlight {
		if lexer := lexerFor(lang); lexer != nil {
			if out, err := h.format(lexer, code); err == nil {
				_, _ = w.Write(out)
				return
			}
		}
	}
	_, _ = io.WriteString(w, "<pre><code>"+html.EscapeString(code)+"</code></pre>\n")
}

// format highlights code with lexer. Chroma's emitters panic on a failure
// inside a rule (a sub-lexer that is missing or fails); that must cost
// one code block its colours, not the whole page, so it becomes an error.
func (h *highlighter) format(lexer chroma.Lexer, code string) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("highlighting %s code: %v", lexer.Config().Name, p)
		}
	}()
	it, err := chroma.Coalesce(lexer).Tokenise(nil, code)
	if err != nil {
		return nil, fmt.Errorf("highlighting %s code: %w", lexer.Config().Name, err)
	}
	var buf bytes.Buffer
	if err := h.f.Format(&buf, h.style, it); err != nil {
		return nil, fmt.Errorf("highlighting %s code: %w", lexer.Config().Name, err)
	}
	return buf.Bytes(), nil
}
