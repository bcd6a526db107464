package backend

import (
	"container/list"
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/claude-relay/claude-relay/internal/markdown"
)

// markdownCacheBytes bounds the rendered blocks kept: a few hundred
// sessions' windows of ordinary text, a small share of a server's memory.
const markdownCacheBytes = 32 << 20

// markdownRenderer renders the dashboard's text blocks: bounded and with a
// deadline (markdown.Pool), and cached, so reopening a page renders
// nothing again. The Server owns it; close waits for its renders.
type markdownRenderer struct {
	pool   *markdown.Pool
	cache  *htmlCache
	budget time.Duration // markdownBudget; tests shorten it
	// render is pool.Render; tests replace it to count and to stall.
	render func(ctx context.Context, text string, late func(string)) (string, bool)
}

func newMarkdownRenderer() *markdownRenderer {
	m := &markdownRenderer{
		pool:   markdown.NewPool(markdown.PoolOptions{}),
		cache:  newHTMLCache(markdownCacheBytes),
		budget: markdownBudget,
	}
	m.render = m.pool.Render
	return m
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

// cacheKey names one text block: the event by session and cursor, the
// block by index, and a hash of the text itself, so a block is never
// answered with another's HTML even where a cursor came to name another
// event (a store recreated under a running server).
type cacheKey struct {
	session string
	cursor  int64
	block   int
	sum     [sha256.Size]byte
}

// entryOverhead approximates what an entry costs beside its strings: the
// list element, the map slot, the key.
const entryOverhead = 160

// htmlCache is an LRU of rendered blocks bounded by bytes. It is safe for
// concurrent use.
type htmlCache struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // of *cacheEntry, most recently used first
	items map[cacheKey]*list.Element
}

type cacheEntry struct {
	key  cacheKey
	html string
}

func newHTMLCache(maxBytes int) *htmlCache {
	return &htmlCache{max: maxBytes, order: list.New(), items: map[cacheKey]*list.Element{}}
}

func (e *cacheEntry) size() int { return len(e.html) + len(e.key.session) + entryOverhead }

func (c *htmlCache) get(k cacheKey) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return "", false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).html, true
}

// add keeps html for k, dropping the least recently used entries to stay
// within max. An entry larger than a quarter of max is not kept: it would
// push out most of the rest.
func (c *htmlCache) add(k cacheKey, html string) {
	e := &cacheEntry{key: k, html: html}
	if e.size() > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.MoveToFront(el)
		return // the same text renders the same; keep the first
	}
	c.items[k] = c.order.PushFront(e)
	c.size += e.size()
	for c.size > c.max {
		last := c.order.Back()
		old := last.Value.(*cacheEntry)
		c.order.Remove(last)
		delete(c.items, old.key)
		c.size -= old.size()
	}
}
