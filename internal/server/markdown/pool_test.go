package markdown

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// gate is a render func for tests that blocks each render until released,
// and records how many ran at once.
type gate struct {
	release          chan struct{}
	started          chan string // each render's text, as it starts
	running, maxSeen atomic.Int32
}

func newGate() *gate { return &gate{release: make(chan struct{}), started: make(chan string, 100)} }

func (g *gate) render(text string) string {
	n := g.running.Add(1)
	for {
		m := g.maxSeen.Load()
		if n <= m || g.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	g.started <- text
	<-g.release
	g.running.Add(-1)
	return "<p>" + text + "</p>"
}

// notOurs are goroutines that outlive a render but are not the pool's:
// chroma's regexp engine keeps a clock running while match timeouts may be
// pending, and stops it by itself.
var notOurs = goleak.IgnoreAnyFunction("github.com/dlclark/regexp2/v2.runClock")

func testPool(t *testing.T, opts PoolOptions) (*Pool, *gate) {
	t.Helper()
	p := NewPool(opts)
	g := newGate()
	p.render = g.render
	t.Cleanup(func() {
		p.Close()
		goleak.VerifyNone(t, notOurs)
	})
	return p, g
}

// TestPoolBound: at most Workers renders run at once, and a caller over
// the limit waits for a slot as long as its context allows, then gets the
// fallback without starting one.
func TestPoolBound(t *testing.T) {
	p, g := testPool(t, PoolOptions{Workers: 2, Timeout: time.Hour})
	type result struct {
		html string
		ok   bool
	}
	results := make(chan result, 4)
	for _, text := range []string{"a", "b", "c", "d"} {
		go func() {
			html, ok := p.Render(context.Background(), text, nil)
			results <- result{html, ok}
		}()
	}
	<-g.started
	<-g.started // two run; the other two wait for a slot

	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan result)
	go func() {
		html, ok := p.Render(ctx, "<late>", nil)
		waited <- result{html, ok}
	}()
	cancel()
	if r := <-waited; r.ok || r.html != `<pre class="md-plain">&lt;late&gt;</pre>` {
		t.Errorf("a caller whose context ended waiting for a slot got %q, %v; want the fallback", r.html, r.ok)
	}

	close(g.release)
	for range 4 {
		if r := <-results; !r.ok || !strings.HasPrefix(r.html, "<p>") {
			t.Errorf("a caller that waited for a slot got %q, %v", r.html, r.ok)
		}
	}
	if n := g.maxSeen.Load(); n != 2 {
		t.Errorf("%d renders ran at once, want at most (and here exactly) 2", n)
	}
	if len(g.started) != 2 { // "a".."d": two more after the first two; never "<late>"
		t.Errorf("%d more renders started, want 2", len(g.started))
	}
	for range len(g.started) {
		if text := <-g.started; text == "<late>" {
			t.Errorf("the caller that gave up waiting for a slot started a render anyway")
		}
	}
}

// TestPoolTimeout: a render slower than the Timeout leaves its caller with
// the fallback at the deadline; it keeps its slot until it ends, then hands
// its HTML to late.
func TestPoolTimeout(t *testing.T) {
	p, g := testPool(t, PoolOptions{Workers: 1, Timeout: time.Millisecond})
	late := make(chan string, 1)
	html, ok := p.Render(context.Background(), "slow", func(html string) { late <- html })
	if ok || html != `<pre class="md-plain">slow</pre>` {
		t.Fatalf("Render past its deadline = %q, %v; want the fallback", html, ok)
	}
	<-g.started

	// The slot is still taken: a second caller waits, then gives up.
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan bool)
	go func() {
		_, ok := p.Render(ctx, "second", nil)
		second <- ok
	}()
	cancel()
	if <-second {
		t.Errorf("a second render ran while the slow one held the only slot")
	}

	close(g.release)
	if got := <-late; got != "<p>slow</p>" {
		t.Errorf("late got %q", got)
	}
	if html, ok := p.Render(context.Background(), "next", nil); !ok || html != "<p>next</p>" {
		t.Errorf("after the slow render ended: %q, %v", html, ok)
	}
}

// TestPoolContext: a caller whose context ends while its render runs gets
// the fallback at once, as with the Timeout.
func TestPoolContext(t *testing.T) {
	p, g := testPool(t, PoolOptions{Workers: 1, Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() {
		_, ok := p.Render(ctx, "x", nil)
		done <- ok
	}()
	<-g.started
	cancel()
	if <-done {
		t.Errorf("Render after its context ended reported a rendering")
	}
	close(g.release)
}

// TestPoolClose: Close waits for the renders running, late hand-overs
// included, and later Renders get the fallback without rendering.
func TestPoolClose(t *testing.T) {
	p, g := testPool(t, PoolOptions{Workers: 1, Timeout: time.Millisecond})
	var handed atomic.Bool
	if _, ok := p.Render(context.Background(), "x", func(string) { handed.Store(true) }); ok {
		t.Fatal("the render should have outlived its 1ms deadline: it waits for release")
	}
	<-g.started
	closed := make(chan struct{})
	go func() {
		p.Close()
		close(closed)
	}()
	close(g.release)
	<-closed
	if !handed.Load() {
		t.Errorf("Close returned before the running render handed over its HTML")
	}
	if html, ok := p.Render(context.Background(), "y", nil); ok || html != `<pre class="md-plain">y</pre>` {
		t.Errorf("Render after Close = %q, %v; want the fallback", html, ok)
	}
	if len(g.started) != 0 {
		t.Errorf("a render started after Close")
	}
	p.Close() // idempotent
}

// TestPoolRealRenders: the pool over the real Renderer, many callers at
// once: every caller gets the same HTML as Render, and nothing is left
// running after Close.
func TestPoolRealRenders(t *testing.T) {
	p := NewPool(PoolOptions{Workers: 2})
	r := New()
	texts := []string{"# a", "*b*", "`c`", "[d](https://example.com)", fill(">", MaxInput)}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			text := texts[i%len(texts)]
			if html, ok := p.Render(context.Background(), text, nil); ok && html != r.Render(text) {
				t.Errorf("pool rendered %q as %q, Render as %q", text, html, r.Render(text))
			}
		})
	}
	wg.Wait()
	p.Close()
	goleak.VerifyNone(t, notOurs)
}
