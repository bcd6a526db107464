package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// What one request, or one credential, may cost the server (issue 22).
// Every ingest body is refused by its declared size before a byte of it is
// read, read as a stream within a deadline, and counted against a cap of
// bytes in flight across all requests; live streams are counted per
// credential.
const (
	// DefaultMaxEvent is the largest event, posted alone or inside a batch:
	// a CLI line carrying a 5 MiB image as base64 fits.
	DefaultMaxEvent = 8 << 20
	// DefaultMaxBatch is the largest batch body.
	DefaultMaxBatch = 32 << 20
	// DefaultMaxStreams is how many live streams (SSE) one credential may
	// hold open at once.
	DefaultMaxStreams = 32
	// inFlightFactor sizes the cap on request-body bytes held by all
	// requests at once: this many maximal batches.
	inFlightFactor = 4
	// defaultBudgetWait is how long a body waits for room under that cap
	// before the request gets 503 with Retry-After.
	defaultBudgetWait = 2 * time.Second
	// defaultBodyFloor and defaultBodyRate give every request body a read
	// deadline: it must arrive within the floor, or at the rate when that
	// is longer (a maximal 32 MiB batch gets 32 s).
	defaultBodyFloor = 10 * time.Second
	defaultBodyRate  = 1 << 20 // bytes per second
	// guardSlack is how far past the per-event limit the batch decoder may
	// have read before it knows a value is too large: the most one read
	// of the guard returns.
	guardSlack = 64 << 10
)

// Keys named in the messages that say a limit was hit, so a user knows
// what to raise.
const (
	keyMaxEvent   = "serve.max_event_bytes"
	keyMaxBatch   = "serve.max_batch_bytes"
	keyMaxStreams = "serve.max_streams_per_token"
)

// limits is the state that enforces the limits beyond the two body sizes
// (Server.maxEvent and maxBatch).
type limits struct {
	inFlight   *byteBudget
	budgetWait time.Duration
	bodyFloor  time.Duration
	bodyRate   int64
	streams    *streamCounts
}

// newLimits resolves o's limits: zero means the default, and a batch may
// always hold one event.
func newLimits(o Options) (maxEvent, maxBatch int64, l limits) {
	maxEvent, maxBatch = o.MaxEventBytes, o.MaxBatchBytes
	if maxEvent <= 0 {
		maxEvent = DefaultMaxEvent
	}
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	maxBatch = max(maxBatch, maxEvent)
	l = limits{budgetWait: o.budgetWait, bodyFloor: o.bodyFloor, bodyRate: o.bodyRate}
	if l.budgetWait <= 0 {
		l.budgetWait = defaultBudgetWait
	}
	if l.bodyFloor <= 0 {
		l.bodyFloor = defaultBodyFloor
	}
	if l.bodyRate <= 0 {
		l.bodyRate = defaultBodyRate
	}
	inFlight := o.maxInFlight
	if inFlight <= 0 {
		inFlight = inFlightFactor * maxBatch
	}
	l.inFlight = newByteBudget(inFlight)
	n := o.MaxStreamsPerToken
	if n <= 0 {
		n = DefaultMaxStreams
	}
	l.streams = &streamCounts{max: n, open: map[string]int{}}
	return maxEvent, maxBatch, l
}

// bodyTime is how long a body of n bytes (-1: unknown) may take to arrive.
func (s *Server) bodyTime(n int64) time.Duration {
	if n < 0 || n > s.maxBatch {
		n = s.maxBatch
	}
	return max(s.lim.bodyFloor, time.Duration(float64(n)/float64(s.lim.bodyRate)*float64(time.Second)))
}

// byteBudget is a cap on bytes held at once. Waiters poll a channel that
// every release closes, so a wait needs no goroutine and ends with its
// context or its timer.
type byteBudget struct {
	mu    sync.Mutex
	size  int64
	free  int64
	freed chan struct{}
}

func newByteBudget(size int64) *byteBudget {
	return &byteBudget{size: size, free: size, freed: make(chan struct{})}
}

// acquire takes n bytes (at most the whole budget), waiting up to wait for
// room. It returns the function that gives them back, or false when there
// was no room in time or ctx ended.
func (b *byteBudget) acquire(ctx context.Context, n int64, wait time.Duration) (func(), bool) {
	n = min(max(n, 0), b.size)
	var timer *time.Timer
	for {
		b.mu.Lock()
		if n <= b.free {
			b.free -= n
			b.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return sync.OnceFunc(func() { b.release(n) }), true
		}
		freed := b.freed
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		select {
		case <-freed:
		case <-timer.C:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += n
	close(b.freed)
	b.freed = make(chan struct{})
}

// streamCounts counts the live streams of each credential.
type streamCounts struct {
	mu   sync.Mutex
	max  int
	open map[string]int // credential id -> streams open
}

// take counts one more stream of credential id; false when it has max
// open already. release is idempotent.
func (c *streamCounts) take(id string) (release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[id] >= c.max {
		return nil, false
	}
	c.open[id]++
	return sync.OnceFunc(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.open[id]--; c.open[id] <= 0 {
			delete(c.open, id)
		}
	}), true
}

// limitBodies gives every request that has a body a read deadline, from
// its declared size (bodyTime), so a client that trickles a body (or
// never finishes one) loses its connection instead of holding a handler,
// its share of the in-flight budget and a goroutine. The deadline is
// lifted once the body has been read to its end, so a slow store does not
// cancel a request whose body is in. It runs before authentication, so
// bodies sent without a valid token are bounded too. Requests without a
// body (reads, live streams, long polls) get none: their connection's
// background read must not time out.
func (s *Server) limitBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			d := s.bodyTime(r.ContentLength)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, within: d}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline at the end of the body and turns a
// timeout into a SlowBodyError.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	within time.Duration
	done   bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		if !b.done {
			b.done = true
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = &SlowBodyError{Within: b.within, Err: err}
	}
	return n, err
}

// SlowBodyError is a request body that did not arrive within its deadline.
type SlowBodyError struct {
	Within time.Duration
	Err    error
}

func (e *SlowBodyError) Error() string {
	return fmt.Sprintf("the request body did not arrive within %s", e.Within)
}

func (e *SlowBodyError) Unwrap() error { return e.Err }

// readBody reads a body of at most limit bytes (the per-event limit, which
// applies to every body but a batch): into a buffer of exactly its size
// when declared (no growth), else through a MaxBytesReader. Over the limit
// it is a 413, too slow a 408.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, int, *RejectError) {
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, tooLarge(limit,
			"body is %d bytes; the limit is %d (%s)", r.ContentLength, limit, keyMaxEvent)
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	var (
		b   []byte
		err error
	)
	if n := r.ContentLength; n >= 0 {
		b = make([]byte, n)
		_, err = io.ReadFull(body, b)
	} else {
		b, err = readCapped(body, limit)
	}
	if err != nil {
		status, rerr := readError(err, limit, keyMaxEvent)
		return nil, status, rerr
	}
	return b, 0, nil
}

// readCapped reads r, which fails past limit bytes, into a buffer that
// doubles and then takes the limit's size at once: about twice the limit
// allocated at worst, where io.ReadAll's growth allocates several times
// what it reads.
func readCapped(r io.Reader, limit int64) ([]byte, error) {
	buf := make([]byte, 0, min(64<<10, limit+1))
	for {
		if len(buf) == cap(buf) {
			n := 2 * int64(cap(buf))
			if n >= limit {
				n = limit + 1 // r fails before filling it
			}
			if n <= int64(cap(buf)) {
				return buf, fmt.Errorf("body is over the limit of %d bytes", limit)
			}
			buf = append(make([]byte, 0, n), buf...)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// admit refuses a body declared larger than limit (key names the setting)
// before reading any of it, and takes its bytes (limit when it declares
// none) from the in-flight budget, waiting briefly for room. On a problem
// it has answered: 413, or 503 with Retry-After. The caller calls release
// when it no longer holds the body.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, limit int64, key string) (release func(), ok bool) {
	if r.ContentLength > limit {
		s.refuse(w, http.StatusRequestEntityTooLarge, tooLarge(limit,
			"body is %d bytes; the limit is %d (%s)", r.ContentLength, limit, key))
		return nil, false
	}
	n := r.ContentLength
	if n < 0 {
		n = limit
	}
	release, ok = s.lim.inFlight.acquire(r.Context(), n, s.lim.budgetWait)
	if !ok {
		w.Header().Set("Retry-After", "1")
		s.refuse(w, http.StatusServiceUnavailable, reject(reasonBusy,
			"the server holds %d bytes of request bodies already, its limit (4 × %s); retry shortly", s.lim.inFlight.size, keyMaxBatch))
		return nil, false
	}
	return release, true
}

// readError classifies an error reading a body of at most limit bytes
// (key names the setting): 413 over the limit, 408 too slow, else 400.
func readError(err error, limit int64, key string) (int, *RejectError) {
	var tooBig *http.MaxBytesError
	var slow *SlowBodyError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, tooLarge(limit, "body is over the limit of %d bytes (%s)", limit, key)
	case errors.As(err, &slow):
		return http.StatusRequestTimeout, reject(reasonSlowBody, "%v; send it faster, or smaller", slow)
	}
	return http.StatusBadRequest, reject(reasonBadJSON, "reading the body: %v", err)
}
