package backend

import (
	"container/list"
	"crypto/sha256"
	"sync"
)

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

// markdownCacheBytes bounds the rendered blocks kept: a few hundred
// sessions' windows of ordinary text, a small share of a server's memory.
const markdownCacheBytes = 32 << 20

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
