package markdown

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// DefaultTimeout is how long Pool.Render waits for a render it started:
// a few times the slowest render the budget lets through (300 ms, for
// MaxInput bytes of 16-deep lists), so only an overloaded machine or a
// pattern the budget misses reaches it.
const DefaultTimeout = time.Second

// PoolOptions configures a Pool; zero values mean the defaults.
type PoolOptions struct {
	// Workers is how many renders run at once (0: GOMAXPROCS): rendering
	// is CPU-bound, so more would only slow each one down.
	Workers int
	// Timeout is how long Render waits for a render once it runs
	// (0: DefaultTimeout).
	Timeout time.Duration
}

// Pool renders with a deadline and bounded concurrency. Goldmark cannot be
// stopped mid-parse, so a render its caller stopped waiting for runs on to
// its end: bounded by the budget (budget.go), and in one of Workers slots,
// so slow renders never pile up goroutines. The pool owns those goroutines
// and Close waits for them. A Pool is safe for concurrent use.
type Pool struct {
	slots   chan struct{} // one token per render running
	timeout time.Duration
	// render is Renderer.Render of a Renderer built on first use (most
	// processes that link a Pool never render); tests replace it.
	render func(text string) string

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup // renders running; Add under mu, never after closed
}

// NewPool returns a Pool. It starts nothing.
func NewPool(opts PoolOptions) *Pool {
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	r := sync.OnceValue(New)
	return &Pool{
		slots:   make(chan struct{}, opts.Workers),
		timeout: opts.Timeout,
		render:  func(text string) string { return r().Render(text) },
	}
}

// Render returns text as sanitised HTML, as Renderer.Render does, with ok
// true. When ctx ends before a slot is free, the render takes longer than
// the Timeout, or the pool is closed, it returns at once the text escaped
// in a <pre> (as Render does for text over the budget) and false. A render that started finishes anyway and then, if its caller has
// gone, hands its HTML to late (when not nil) on the pool's goroutine, so
// the work is not lost: a cache can keep it for the next view.
func (p *Pool) Render(ctx context.Context, text string, late func(html string)) (html string, ok bool) {
	if ctx.Err() != nil {
		return plain(text), false // select would pick a free slot as often as not
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return plain(text), false
	}
	j, started := p.start(text)
	if !started {
		return plain(text), false
	}
	timer := time.NewTimer(p.timeout)
	defer timer.Stop()
	select {
	case <-j.done:
		return j.html, true
	case <-timer.C:
	case <-ctx.Done():
	}
	return j.leave(text, late)
}

// job is one render handed from the pool's goroutine to its caller, or to
// late once the caller has left.
type job struct {
	done chan struct{} // closed once html is set
	mu   sync.Mutex
	html string
	gone bool // the caller left; late has the result
	late func(html string)
}

// start runs the render of text on a goroutine that holds the slot the
// caller took, until the render ends. It gives the slot back and reports
// false when the pool is closed.
func (p *Pool) start(text string) (*job, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		<-p.slots
		return nil, false
	}
	j := &job{done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		html := p.render(text)
		<-p.slots
		j.finish(html)
	}()
	return j, true
}

// finish records html, or hands it to late when the caller has left.
func (j *job) finish(html string) {
	j.mu.Lock()
	j.html = html
	close(j.done)
	gone, late := j.gone, j.late
	j.mu.Unlock()
	if gone && late != nil {
		late(html)
	}
}

// leave is the caller giving up on j: the HTML when it arrived meanwhile,
// else the fallback, with late left to receive the render's result.
func (j *job) leave(text string, late func(html string)) (string, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	select {
	case <-j.done:
		return j.html, true
	default:
	}
	j.gone, j.late = true, late
	return plain(text), false
}

// Close makes every later Render return the fallback at once and waits
// for the renders running, late hand-overs included. It is idempotent.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
}
