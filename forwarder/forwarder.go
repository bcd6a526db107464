package forwarder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// Errors of Enqueue and Stop.
var (
	ErrSpoolFull   = errors.New("spool full")
	ErrStopped     = errors.New("forwarder stopped")
	ErrUndelivered = errors.New("events left undelivered in the spool")
	ErrTooLarge    = errors.New("event too large for the spool")
)

// Options configure a Forwarder; zero values mean the defaults.
type Options struct {
	Dir            string        // spool directory (required)
	MaxBytes       int64         // bound of unacknowledged bytes (1 GiB)
	BackendURL     string        // base URL (required)
	Token          func() string // read on every attempt, so a reloaded token applies at once
	AttemptTimeout time.Duration // per HTTP attempt (10s)
	MinBackoff     time.Duration // (100ms)
	MaxBackoff     time.Duration // also caps Retry-After (30s)
	Batch          string        // auto (detect), always or never
	MaxBatch       int           // events per batch request (200)
	SyncInterval   time.Duration // group fsync period (50ms); negative: fsync every event
	OnError        func(Error)   // permanent problems: dead letters, auth, corruption; see also Forwarder.OnError
	Logger         *slog.Logger
	Transport      http.RoundTripper // tests; nil: a pooled transport
	Backoff        func(min, max time.Duration, attempt int, resp *http.Response) time.Duration

	// Destination is the backend these events are for, as recorded in
	// each session spool (destination.go): URLDestination(BackendURL) by
	// default; LocalDestination(data dir) for a data dir's own backend,
	// whose port changes from run to run. Open adopts only spools of this
	// destination (and those that record none: older spools, once).
	Destination string
	// Move takes over spools waiting for another destination (`spool flush
	// --to`): those it returns true for are re-recorded for Destination
	// and delivered. Nil: none.
	Move func(from string) bool
	// PoisonAfter bounds how long one event may block its session: an
	// event refused with a 5xx other than 503 this many times in a row is
	// dead-lettered once the backend is seen storing other events
	// meanwhile (retry.go says how); 0 means 20, negative never.
	PoisonAfter int
}

// ErrorCode says what kind of problem an Error is. Its text is stable: it
// appears in logs and in a session's last_error file (`spool status`).
type ErrorCode string

// Error codes.
const (
	CodeAuth         ErrorCode = "auth"          // the backend refused the token; events wait
	CodeDeadLetter   ErrorCode = "dead_letter"   // the backend refused an event for good
	CodeCorruptSpool ErrorCode = "corrupt_spool" // unreadable spool bytes were skipped, or a spool could not be opened
	CodeDelivery     ErrorCode = "delivery"      // a local failure while delivering (reading the spool, writing acks)
	CodeNotBackend   ErrorCode = "not_backend"   // the URL answers, but not as a claude-relay backend; events wait
)

// Error is a problem the producer should hear about.
type Error struct {
	Code      ErrorCode
	SessionID string
	Message   string
	Status    int
}

func (e Error) Error() string { return e.Message }

// Stats are the forwarder's figures.
type Stats struct {
	Pending      int64  `json:"pending"` // accepted in this process, not yet delivered or dead-lettered
	InFlight     int64  `json:"in_flight"`
	Delivered    int64  `json:"delivered"`
	Retried      int64  `json:"retried"`
	DeadLettered int64  `json:"dead_lettered"`
	SpoolBytes   int64  `json:"spool_bytes"`
	Sessions     int    `json:"sessions"`
	LastError    string `json:"last_error,omitempty"`
}

// Forwarder owns the spool directory's sessions and their delivery goroutines.
type Forwarder struct {
	opts   Options
	log    *slog.Logger
	client *client

	policy destPolicy
	epoch  time.Time // storedAt is measured from here, on the monotonic clock
	// storedAt is when (since epoch) the backend last answered "stored":
	// the evidence that it stores events which an event it refuses again
	// and again needs before it is called poison (retry.go).
	storedAt atomic.Int64

	mu        sync.Mutex
	sessions  map[string]*sessionSpool
	elsewhere map[string]int  // sessions Open left for other destinations, per destination
	moved     map[string]int  // sessions Open took over from other destinations (Move), per destination
	extra     []*sessionSpool // sibling spools adopted at start, delivered then closed with the rest
	started   bool            // delivery goroutines run; before Start, attach only registers
	stopped   bool
	opening   sync.Mutex // serialises opening new session spools
	startOnce sync.Once

	// The error handler has its own lock, never held while calling out:
	// report runs on delivery goroutines and must not wait on f.mu.
	handlerMu sync.Mutex
	onError   func(Error)
	held      []Error // reported before Start, handed over by Start
	handed    bool    // Start has handed held errors over: report calls onError directly

	bytes                                               atomic.Int64
	pending, inFlight, delivered, retried, deadLettered atomic.Int64
	lastErr                                             atomic.Pointer[string]

	ctx     context.Context // workers; cancelled when Stop gives up
	cancel  context.CancelFunc
	drain   chan struct{} // closed by Stop: workers exit when idle
	workers sync.WaitGroup
	syncer  sync.WaitGroup
}

// Open opens the spool and adopts every session spool no other process
// holds. It starts no goroutine: Start begins delivery, so the caller can
// finish wiring (set OnError) first. Problems found while adopting are
// logged and noted now, and handed to the error handler by Start.
func Open(opts Options) (*Forwarder, error) {
	if opts.Dir == "" || opts.BackendURL == "" {
		return nil, errors.New("forwarder: Dir and BackendURL are required")
	}
	defaults(&opts)
	if err := os.MkdirAll(filepath.Join(opts.Dir, "sessions"), 0o700); err != nil {
		return nil, fmt.Errorf("spool directory %s: %w", opts.Dir, err)
	}
	f := &Forwarder{opts: opts, log: opts.Logger, sessions: map[string]*sessionSpool{}, drain: make(chan struct{}),
		onError: opts.OnError, policy: destPolicy{dest: opts.Destination, move: opts.Move}, epoch: time.Now(),
		elsewhere: map[string]int{}, moved: map[string]int{}}
	f.storedAt.Store(-1)
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.client = newClient(f)
	if err := f.adopt(); err != nil {
		f.cancel()
		f.closeAll()
		return nil, err
	}
	return f, nil
}

// OnError sets the handler of permanent problems, replacing
// Options.OnError. Set it before Start to hear what Open found; it may be
// called at any time.
func (f *Forwarder) OnError(fn func(Error)) {
	f.handlerMu.Lock()
	f.onError = fn
	f.handlerMu.Unlock()
}

// Start hands the problems Open found to the error handler, then starts
// delivering every spool (those adopted and those Enqueue opened since) and
// the group fsync. A second Start does nothing; so does Start after Stop,
// apart from handing over the errors.
func (f *Forwarder) Start() { f.startOnce.Do(f.begin) }

func (f *Forwarder) begin() {
	f.handOver()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	// Set under the same lock as the loop below: a spool attached from
	// now on starts its own delivery, those before are started here, and
	// none twice.
	f.started = true
	for _, s := range f.sessions {
		f.deliver(s)
	}
	for _, s := range f.extra {
		f.deliver(s)
	}
	if f.opts.SyncInterval > 0 {
		f.syncer.Add(1)
		go f.syncLoop()
	}
}

// handOver gives the held errors to the handler in order, without holding
// a lock while it runs; errors reported meanwhile join the queue until it
// is empty, so none overtakes an older one.
func (f *Forwarder) handOver() {
	for {
		f.handlerMu.Lock()
		held, fn := f.held, f.onError
		f.held = nil
		if len(held) == 0 {
			f.handed = true
			f.handlerMu.Unlock()
			return
		}
		f.handlerMu.Unlock()
		if fn != nil {
			for _, e := range held {
				fn(e)
			}
		}
	}
}

func defaults(o *Options) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.AttemptTimeout, 10*time.Second)
	def(&o.MinBackoff, 100*time.Millisecond)
	def(&o.MaxBackoff, 30*time.Second)
	def(&o.SyncInterval, 50*time.Millisecond)
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 30
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 200
	}
	if o.Batch == "" {
		o.Batch = "auto"
	}
	if o.Token == nil {
		o.Token = func() string { return "" }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Backoff == nil {
		o.Backoff = jitterBackoff
	}
	if o.Destination == "" {
		o.Destination = URLDestination(o.BackendURL)
	}
	if o.PoisonAfter == 0 {
		o.PoisonAfter = 20
	}
}

// adopt opens the session spools found on disk; those locked by another
// live process are theirs to deliver.
func (f *Forwarder) adopt() error {
	root := filepath.Join(f.opts.Dir, "sessions")
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("read spool: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		id, err := os.ReadFile(filepath.Join(root, e.Name(), idFile))
		if err != nil {
			continue
		}
		s, err := openSessionDir(root, e.Name(), string(id), f.policy, true)
		var other *OtherBackendError
		if errors.Is(err, ErrSessionLocked) || errors.Is(err, errIdle) {
			continue
		}
		if errors.As(err, &other) {
			f.elsewhere[other.Backend]++
			continue
		}
		if err != nil {
			perr := Error{Code: CodeCorruptSpool, SessionID: string(id), Message: err.Error()}
			noteError(filepath.Join(root, e.Name()), string(perr.Code)+": "+perr.Message)
			f.report(nil, perr)
			continue
		}
		if s.movedFrom != "" {
			f.moved[s.movedFrom]++
			f.log.Info("took over a session spool for this backend", "session_id", s.id, "from", s.movedFrom, "to", f.policy.dest)
		}
		f.reportRecovered(s)
		f.mu.Lock()
		f.attach(s)
		f.mu.Unlock()
	}
	for dest, n := range f.elsewhere {
		f.log.Warn("the spool holds events for another backend; they stay there (`claude-relay spool status` says how to deliver or move them)",
			"backend", dest, "sessions", n, "this_backend", f.policy.dest)
	}
	return nil
}

// Elsewhere says, per destination, how many session spools with events
// waiting Open left because they are for another backend.
func (f *Forwarder) Elsewhere() map[string]int { return maps.Clone(f.elsewhere) }

// Moved says, per destination, how many session spools Open took over from
// it for this forwarder's (Options.Move).
func (f *Forwarder) Moved() map[string]int { return maps.Clone(f.moved) }

// reportRecovered reports corruption that opening s found. Callers hold no
// lock: report calls out to the handler.
func (f *Forwarder) reportRecovered(s *sessionSpool) {
	if s.corrupt > 0 {
		f.report(s, Error{Code: CodeCorruptSpool, SessionID: s.id, Message: s.lastCorruption.Error()})
	}
}

// attach registers an opened spool and, once started, delivers it. The
// caller holds f.mu.
func (f *Forwarder) attach(s *sessionSpool) {
	if f.sessions[s.id] == nil {
		f.sessions[s.id] = s
	} else {
		f.extra = append(f.extra, s) // a sibling spool of the same session
	}
	f.bytes.Add(s.bytes)
	if f.started {
		f.deliver(s)
	}
}

// deliver starts s's delivery goroutine; Stop waits for it.
func (f *Forwarder) deliver(s *sessionSpool) {
	f.workers.Add(1)
	go f.deliverLoop(s)
}

// session returns the open spool of a session, opening it on first use.
// Opening does a few fsyncs, so it happens outside f.mu: Enqueue for other
// sessions never waits on a new session's disk work.
func (f *Forwarder) session(id string) (*sessionSpool, error) {
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return nil, ErrStopped
	}
	if s := f.sessions[id]; s != nil {
		f.mu.Unlock()
		return s, nil
	}
	f.mu.Unlock()
	f.opening.Lock() // one opener at a time keeps two spools of one session from racing
	defer f.opening.Unlock()
	f.mu.Lock()
	if s := f.sessions[id]; s != nil {
		f.mu.Unlock()
		return s, nil
	}
	f.mu.Unlock()
	s, err := openSessionAny(filepath.Join(f.opts.Dir, "sessions"), id, f.policy)
	if err != nil {
		return nil, err
	}
	f.reportRecovered(s) // before f.mu: the handler must not run under it
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		s.close()
		return nil, ErrStopped
	}
	f.attach(s)
	return s, nil
}

// Enqueue makes ev durable (one write(2); fsync per SyncInterval) and
// returns its event ID and seq. It never waits on the network. A full spool
// fails at once with ErrSpoolFull; accepted events are never dropped.
func (f *Forwarder) Enqueue(ev Event) (Accepted, error) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if err := validateEvent(ev); err != nil {
		return Accepted{}, err
	}
	if b := f.bytes.Load(); b >= f.opts.MaxBytes {
		err := fmt.Errorf("%w: %d bytes waiting (spool.max_bytes %d); is the backend reachable?", ErrSpoolFull, b, f.opts.MaxBytes)
		return Accepted{}, err
	}
	s, err := f.session(ev.SessionID)
	if err != nil {
		return Accepted{}, err
	}
	id := uuid.NewString()
	s.mu.Lock()
	seq := s.seqs[ev.InteractionID] + 1
	n, err := s.appendLocked(encodeEnvelope(make([]byte, 0, 256+len(ev.Data)), ev, id, seq))
	if err == nil {
		s.seqs[ev.InteractionID] = seq
	}
	s.mu.Unlock()
	if err != nil {
		return Accepted{}, err
	}
	f.bytes.Add(n)
	f.pending.Add(1)
	if f.opts.SyncInterval < 0 {
		if err := s.sync(); err != nil {
			return Accepted{EventID: id, Seq: seq}, err
		}
	}
	return Accepted{EventID: id, Seq: seq}, nil
}

func (f *Forwarder) syncLoop() {
	defer f.syncer.Done()
	t := time.NewTicker(f.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
			f.syncAll()
		}
	}
}

func (f *Forwarder) syncAll() {
	f.mu.Lock()
	ss := make([]*sessionSpool, 0, len(f.sessions)+len(f.extra))
	for _, s := range f.sessions {
		ss = append(ss, s)
	}
	ss = append(ss, f.extra...)
	f.mu.Unlock()
	for _, s := range ss {
		if err := s.sync(); err != nil {
			f.setLastError(err.Error())
		}
	}
}

// Stop delivers what it can until ctx ends, then stops every goroutine and
// closes the spool. Nothing undelivered is deleted; ErrUndelivered says how
// much is left. Stop is idempotent.
func (f *Forwarder) Stop(ctx context.Context) error {
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return nil
	}
	f.stopped = true
	close(f.drain)
	f.mu.Unlock()

	done := make(chan struct{})
	go func() { f.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	f.cancel()
	<-done
	f.syncer.Wait()
	f.closeAll()
	if left := f.bytes.Load(); left > 0 {
		return fmt.Errorf("%w: %d bytes in %s", ErrUndelivered, left, f.opts.Dir)
	}
	return nil
}

// closeAll closes every spool, releasing their locks.
func (f *Forwarder) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sessions {
		s.close()
	}
	for _, s := range f.extra {
		s.close()
	}
}

// Stats returns the current figures.
func (f *Forwarder) Stats() Stats {
	f.mu.Lock()
	n := len(f.sessions)
	f.mu.Unlock()
	// Pending goes negative when a restart delivers an older backlog.
	st := Stats{Pending: max(f.pending.Load(), 0), InFlight: f.inFlight.Load(), Delivered: f.delivered.Load(),
		Retried: f.retried.Load(), DeadLettered: f.deadLettered.Load(), SpoolBytes: f.bytes.Load(), Sessions: n}
	if p := f.lastErr.Load(); p != nil {
		st.LastError = *p
	}
	return st
}

func (f *Forwarder) setLastError(s string) { f.lastErr.Store(&s) }

// report keeps e as the last error (of s, when the problem is s's, for
// `spool status`), logs it and gives it to the error handler, or holds it
// for Start. It takes the spool it is about rather than looking it up
// under f.mu, so it may be called from anywhere that holds no lock.
func (f *Forwarder) report(s *sessionSpool, e Error) {
	f.setLastError(e.Message)
	if s != nil {
		noteError(s.dir, string(e.Code)+": "+e.Message)
		s.lastErrorWritten.Store(true)
	}
	f.log.Warn("forwarder", "code", string(e.Code), "session_id", e.SessionID, "status", e.Status, "msg", e.Message)
	f.handlerMu.Lock()
	if !f.handed {
		f.held = append(f.held, e)
		f.handlerMu.Unlock()
		return
	}
	fn := f.onError
	f.handlerMu.Unlock()
	if fn != nil {
		fn(e)
	}
}
