package markdown

import (
	"bytes"
	"net/url"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// safeRenderer replaces goldmark's HTML rendering of the nodes that could
// carry markup or a URL from the text: raw HTML is written escaped, links
// keep only http, https and mailto targets, images only inline data (a
// remote image becomes a link to it, so nothing loads from elsewhere), and
// fenced code is highlighted. The sanitizer checks the result again. Each
// stops the walk once the output is over its budget (limit.go): these are
// the nodes that can write much more than their text.
type safeRenderer struct {
	code *highlighter
}

func newSafeRenderer() *safeRenderer { return &safeRenderer{code: newHighlighter()} }

// RegisterFuncs implements renderer.NodeRenderer.
func (r *safeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, r.rawHTML)
	reg.Register(ast.KindHTMLBlock, r.htmlBlock)
	reg.Register(ast.KindLink, r.link)
	reg.Register(ast.KindAutoLink, r.autoLink)
	reg.Register(ast.KindImage, r.image)
	reg.Register(ast.KindFencedCodeBlock, r.fencedCode)
}

// rawHTML writes inline HTML as the characters written.
func (r *safeRenderer) rawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if over(w) {
		return ast.WalkStop, errOutput
	}
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	for i := range n.Segments.Len() {
		seg := n.Segments.At(i)
		_, _ = w.Write(util.EscapeHTML(seg.Value(source)))
	}
	return ast.WalkSkipChildren, nil
}

// htmlBlock writes a block of HTML as code: it is markup the model wrote,
// shown, not interpreted.
func (r *safeRenderer) htmlBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if over(w) {
		return ast.WalkStop, errOutput
	}
	n := node.(*ast.HTMLBlock)
	if entering {
		_, _ = w.WriteString("<pre><code>")
		for i := range n.Lines().Len() {
			line := n.Lines().At(i)
			_, _ = w.Write(util.EscapeHTML(line.Value(source)))
		}
		return ast.WalkContinue, nil
	}
	if n.HasClosure() {
		_, _ = w.Write(util.EscapeHTML(n.ClosureLine.Value(source)))
	}
	_, _ = w.WriteString("</code></pre>\n")
	return ast.WalkContinue, nil
}

// linkAllowed reports whether dest may be a link's target: an http or
// https URL with a host, or a mailto: with an address.
func linkAllowed(dest []byte) bool {
	u, err := url.Parse(string(dest))
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return u.Host != ""
	case "mailto":
		return u.Opaque != ""
	}
	return false
}

func writeHref(w util.BufWriter, dest []byte) {
	_, _ = w.WriteString(`<a href="`)
	_, _ = w.Write(util.EscapeHTML(util.URLEscape(dest, true)))
	_, _ = w.WriteString(`">`)
}

// link writes an allowed link; any other keeps only its text.
func (r *safeRenderer) link(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if over(w) {
		return ast.WalkStop, errOutput
	}
	n := node.(*ast.Link)
	if !linkAllowed(n.Destination) {
		return ast.WalkContinue, nil
	}
	if entering {
		writeHref(w, n.Destination)
	} else {
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue, nil
}

func (r *safeRenderer) autoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if over(w) {
		return ast.WalkStop, errOutput
	}
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	url, label := n.URL(source), n.Label(source)
	if n.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(url), []byte("mailto:")) {
		url = append([]byte("mailto:"), url...)
	}
	if !linkAllowed(url) {
		_, _ = w.Write(util.EscapeHTML(label))
		return ast.WalkContinue, nil
	}
	writeHref(w, url)
	_, _ = w.Write(util.EscapeHTML(label))
	_, _ = w.WriteString("</a>")
	return ast.WalkContinue, nil
}

// image shows inline image data; a remote image becomes a link to it (the
// page loads nothing from elsewhere), anything else its alt text.
func (r *safeRenderer) image(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if over(w) {
		return ast.WalkStop, errOutput
	}
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Image)
	alt := altText(source, n)
	switch {
	case dataImage.Match(n.Destination):
		_, _ = w.WriteString(`<img src="`)
		_, _ = w.Write(util.EscapeHTML(n.Destination))
		_, _ = w.WriteString(`" alt="`)
		_, _ = w.Write(util.EscapeHTML(alt))
		_, _ = w.WriteString(`">`)
	case linkAllowed(n.Destination):
		if len(alt) == 0 {
			alt = n.Destination
		}
		writeHref(w, n.Destination)
		_, _ = w.WriteString("image: ")
		_, _ = w.Write(util.EscapeHTML(alt))
		_, _ = w.WriteString("</a>")
	default:
		_, _ = w.Write(util.EscapeHTML(alt))
	}
	return ast.WalkSkipChildren, nil
}

// altText is the plain text of an image's description.
func altText(source []byte, n ast.Node) []byte {
	var b bytes.Buffer
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(source))
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.Bytes()
}

func (r *safeRenderer) fencedCode(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if over(w) {
		return ast.WalkStop, errOutput
	}
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.FencedCodeBlock)
	var code bytes.Buffer
	for i := range n.Lines().Len() {
		line := n.Lines().At(i)
		code.Write(line.Value(source))
	}
	r.code.write(w, string(n.Language(source)), code.String())
	return ast.WalkSkipChildren, nil
}
