package markdown

import (
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

// Render returns text as sanitised HTML. It never fails: text over the
// render budget (budget.go), or that goldmark fails or panics on, comes
// back escaped in a <pre>. It has no deadline (goldmark cannot be
// stopped mid-parse); Pool adds one.
func (r *Renderer) Render(text string) string {
	if overBudget(text) != "" {
		return plain(text)
	}
	return r.render(text)
}

// render is Render without the budget's pre-scan. A panic in goldmark or
// chroma on hostile text costs that text its Markdown, not the process:
// Pool renders on goroutines of its own, where nothing else would recover.
func (r *Renderer) render(text string) (html string) {
	defer func() {
		if p := recover(); p != nil {
			html = plain(text)
		}
	}()
	w := &limitWriter{max: maxOutput}
	if err := r.md.Convert([]byte(text), w); err != nil || w.over {
		return plain(text)
	}
	return r.policy.Sanitize(w.String())
}

// plain is text as escaped HTML in a <pre>, for text not rendered.
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
