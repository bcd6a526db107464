// Package markdown renders the assistant's text for the dashboard: Markdown
// to HTML that is safe to insert into the session page.
//
// # Libraries, and why
//
//   - github.com/yuin/goldmark parses: it is CommonMark compliant (it passes
//     the spec's examples), has the GitHub extensions built in (tables,
//     strikethrough, task lists, autolinks), is pure Go with no cgo, and is
//     actively maintained (Hugo's renderer). Raw HTML is never enabled
//     (no html.WithUnsafe); on top of that, raw HTML in the text is shown
//     escaped, as the characters the model wrote, instead of goldmark's
//     "<!-- raw HTML omitted -->", so a reader sees what was said.
//   - github.com/microcosm-cc/bluemonday sanitises goldmark's output again:
//     it is the standard Go HTML sanitizer (an allowlist over
//     golang.org/x/net/html's tokenizer; Gitea's, for one). Its UGCPolicy
//     is the base; links keep only http, https and mailto and get
//     rel="nofollow noreferrer" (web links also noopener and
//     target=_blank); images keep only data:image/(png|jpeg|gif|webp)
//     sources, so the page never loads a remote image (the dashboard's CSP
//     forbids that too: img-src 'self' data:). Two independent layers: a
//     bug in one is not an XSS.
//   - github.com/alecthomas/chroma/v2 highlights fenced code blocks on the
//     server with CSS classes (prefix "hl-"), never inline styles, which the
//     dashboard's CSP (style-src 'self') would block. Its stylesheet, a light
//     and a dark theme, is generated once into
//     internal/server/dashboard/static/highlight.css by highlight_css_test.go (go
//     generate; the test fails when the checked-in file drifts), so chroma's
//     themes are not linked into the binary. Nor is chroma/v2/lexers, whose
//     init parses about 280 lexers in every claude-relay process: about 25
//     of its XML definitions are embedded from lexers/ and registered on the
//     first highlight (lexers.go), Go has our own lexer, and any other
//     language renders plain. The page needs no JavaScript
//     library at all: nothing to vendor, nothing that runs event content in
//     the browser.
//
// # Bounds
//
// Goldmark is linear on the Markdown people write but quadratic on some
// hostile text (250 KB of ">" took 31 s), and cannot be stopped once it
// parses. So Render first reads the text once against a budget
// (budget.go): its size (MaxInput), the containers open on a line, and
// the work goldmark would spend on unclosed links, emphasis, nested
// brackets, code spans, reference definitions and table cells. Text over
// any of it is shown escaped in a <pre>, unparsed; so is a render whose
// HTML outgrows maxOutput (limit.go). Code blocks over maxHighlight are
// not highlighted. Pool runs renders in at most GOMAXPROCS goroutines, each
// caller waiting for one as long as its context allows and for the render
// until a deadline, after which it gets the escaped text and the render,
// bounded by the budget, finishes for whoever caches it.
package markdown
