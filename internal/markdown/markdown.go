package markdown

import (
	"bytes"
	"html"
	"net/url"
	"regexp"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// MaxInput is the largest text Render parses as Markdown, in bytes. Longer
// text is shown escaped in a <pre>, unparsed: rendering costs time on every
// view, and text that long is a pasted dump rather than prose.
const MaxInput = 256 << 10

// Renderer turns Markdown into sanitised HTML. It is safe for concurrent
// use; build one with New and keep it.
type Renderer struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
}

// New returns a Renderer.
func New() *Renderer {
	md := goldmark.New(
		goldmark.WithExtensions(
			extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
			extension.Strikethrough,
			extension.TaskList,
			extension.Linkify,
		),
		goldmark.WithRendererOptions(
			// Ahead of goldmark's own HTML renderer (priority 1000; lower
			// runs the kind last, so it wins).
			renderer.WithNodeRenderers(util.Prioritized(newSafeRenderer(), 100)),
		),
	)
	return &Renderer{md: md, policy: policy()}
}

// Render returns text as sanitised HTML. It never fails: text it cannot
// render comes back escaped in a <pre>.
func (r *Renderer) Render(text string) string {
	if len(text) > MaxInput {
		return plain(text)
	}
	var buf bytes.Buffer
	if err := r.md.Convert([]byte(text), &buf); err != nil {
		return plain(text)
	}
	return r.policy.Sanitize(buf.String())
}

// plain is text as escaped HTML in a <pre>, for text too long to render.
func plain(text string) string {
	return `<pre class="md-plain">` + html.EscapeString(strings.ToValidUTF8(text, "\uFFFD")) + "</pre>"
}

// classes is what the highlighter emits (chroma's classes under our
// prefix) and the plain-text <pre>; nothing else may carry a class.
var classes = regexp.MustCompile(`^(md-plain|hl-[a-z0-9]+( hl-[a-z0-9]+)*)$`)

// dataImage is the only image source allowed: inline PNG, JPEG, GIF or
// WebP, base64.
var dataImage = regexp.MustCompile(`^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+={0,2}$`)

// policy is bluemonday's UGCPolicy narrowed to what the page may show.
func policy() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowRelativeURLs(false) // a relative link would point into the dashboard
	p.AllowURLSchemes("http", "https", "mailto")
	p.AllowDataURIImages() // data: only as image/(png|jpeg|gif|webp);base64
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true) // adds rel=noopener too
	// Belt and braces: the renderer emits no remote image, and an img whose
	// source is not inline data loses it here.
	p.RewriteSrc(func(u *url.URL) {
		if !dataImage.MatchString(u.String()) {
			*u = url.URL{}
		}
	})
	p.AllowAttrs("class").Matching(classes).OnElements("span", "pre", "code")
	// Task list items: goldmark's disabled checkboxes.
	p.AllowAttrs("type").Matching(regexp.MustCompile(`^checkbox$`)).OnElements("input")
	p.AllowAttrs("checked", "disabled").Matching(regexp.MustCompile(`^(|checked|disabled)$`)).OnElements("input")
	return p
}
