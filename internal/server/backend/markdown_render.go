package backend

import (
	"context"
	"crypto/sha256"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/markdown"
)

// markdownRenderer renders the dashboard's text blocks: bounded and with a
// deadline (markdown.Pool), and cached, so reopening a page renders
// nothing again. The Server owns it; close waits for its renders.
type markdownRenderer struct {
	pool  *markdown.Pool
	cache *htmlCache
	// budget and maxBytes bound one request's renders: markdownBudget and
	// markdownMaxBytes; tests lower them.
	budget   time.Duration
	maxBytes int
	// render is pool.Render; tests replace it to count and to stall.
	render func(ctx context.Context, text string, late func(string)) (string, bool)
}

func newMarkdownRenderer() *markdownRenderer {
	m := &markdownRenderer{
		pool:     markdown.NewPool(markdown.PoolOptions{}),
		cache:    newHTMLCache(markdownCacheBytes),
		budget:   markdownBudget,
		maxBytes: markdownMaxBytes,
	}
	m.render = m.pool.Render
	return m
}

// blocks returns the HTML of texts, the text blocks of the event at cursor
// in session. size is the HTML of the answer so far, which it adds to;
// once that is over maxBytes, blocks come back empty. ok is false when
// one is a stand-in or empty for that reason.
func (m *markdownRenderer) blocks(ctx context.Context, session string, cursor int64, texts []string, size *int) (html []string, ok bool) {
	html, ok = make([]string, len(texts)), true
	for i, text := range texts {
		if *size > m.maxBytes {
			ok = false
			continue
		}
		var done bool
		html[i], done = m.block(ctx, session, cursor, i, text)
		ok = ok && done
		*size += len(html[i])
	}
	return html, ok
}

// block returns the HTML of text, block i of the event at cursor in
// session. ok is false when it is a stand-in (escaped text) because ctx
// ended or the render was slow: the render then finishes on the pool and
// goes into the cache for the next request.
func (m *markdownRenderer) block(ctx context.Context, session string, cursor int64, i int, text string) (html string, ok bool) {
	key := cacheKey{session: session, cursor: cursor, block: i, sum: sha256.Sum256([]byte(text))}
	if html, ok := m.cache.get(key); ok {
		return html, true
	}
	html, ok = m.render(ctx, text, func(html string) { m.cache.add(key, html) })
	if ok {
		m.cache.add(key, html)
	}
	return html, ok
}

// close waits for the renders running; later ones get the stand-in.
func (m *markdownRenderer) close() { m.pool.Close() }
