package forwarder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	OnError        func(Error)   // permanent problems: dead letters, auth, corruption
	Logger         *slog.Logger
	Transport      http.RoundTripper // tests; nil: a pooled transport
	Backoff        func(min, max time.Duration, attempt int, resp *http.Response) time.Duration
}

// Error is a problem the producer should hear about.
type Error struct {
	Code      string // auth, dead_letter, corrupt_spool, spool_full, delivery
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

	mu       sync.Mutex
	sessions map[string]*sessionSpool
	extra    []*sessionSpool // sibling spools adopted at start, delivered then closed with the rest
	stopped  bool
	opening  sync.Mutex // serialises opening new session spools

	bytes                                     atomic.Int64
	pending, inFlight, delivered, retried, dl atomic.Int64
	lastErr                                   atomic.Pointer[string]

	ctx     context.Context // workers; cancelled when Stop gives up
	cancel  context.CancelFunc
	drain   chan struct{} // closed by Stop: workers exit when idle
	workers sync.WaitGroup
	syncer  sync.WaitGroup
}

// Open opens the spool, adopts every session spool no other process holds,
// and starts delivering what they contain.
func Open(opts Options) (*Forwarder, error) {
	if opts.Dir == "" || opts.BackendURL == "" {
		return nil, errors.New("forwarder: Dir and BackendURL are required")
	}
	defaults(&opts)
	if err := os.MkdirAll(filepath.Join(opts.Dir, "sessions"), 0o700); err != nil {
		return nil, fmt.Errorf("spool directory %s: %w", opts.Dir, err)
	}
	f := &Forwarder{opts: opts, log: opts.Logger, sessions: map[string]*sessionSpool{}, drain: make(chan struct{})}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.client = newClient(f)
	if err := f.adopt(); err != nil {
		f.cancel()
		return nil, err
	}
	if opts.SyncInterval > 0 {
		f.syncer.Add(1)
		go f.syncLoop()
	}
	return f, nil
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
		s, err := openSessionDir(root, e.Name(), string(id))
		if errors.Is(err, ErrSessionLocked) {
			continue
		}
		if err != nil {
			f.report(Error{Code: "corrupt_spool", SessionID: string(id), Message: err.Error()})
			continue
		}
		f.attach(s)
	}
	return nil
}

func (f *Forwarder) attach(s *sessionSpool) {
	if s.corrupt > 0 {
		f.report(Error{Code: "corrupt_spool", SessionID: s.id, Message: s.lastCorrup.Error()})
	}
	if f.sessions[s.id] == nil {
		f.sessions[s.id] = s
	} else {
		f.extra = append(f.extra, s) // a sibling spool of the same session
	}
	f.bytes.Add(s.bytes)
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
	s, err := openSessionAny(filepath.Join(f.opts.Dir, "sessions"), id)
	if err != nil {
		return nil, err
	}
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
	f.mu.Lock()
	for _, s := range f.sessions {
		s.close()
	}
	for _, s := range f.extra {
		s.close()
	}
	f.mu.Unlock()
	if left := f.bytes.Load(); left > 0 {
		return fmt.Errorf("%w: %d bytes in %s", ErrUndelivered, left, f.opts.Dir)
	}
	return nil
}

// Stats returns the current figures.
func (f *Forwarder) Stats() Stats {
	f.mu.Lock()
	n := len(f.sessions)
	f.mu.Unlock()
	// Pending goes negative when a restart delivers an older backlog.
	st := Stats{Pending: max(f.pending.Load(), 0), InFlight: f.inFlight.Load(), Delivered: f.delivered.Load(),
		Retried: f.retried.Load(), DeadLettered: f.dl.Load(), SpoolBytes: f.bytes.Load(), Sessions: n}
	if p := f.lastErr.Load(); p != nil {
		st.LastError = *p
	}
	return st
}

func (f *Forwarder) setLastError(s string) { f.lastErr.Store(&s) }

func (f *Forwarder) report(e Error) {
	f.setLastError(e.Message)
	if e.SessionID != "" {
		noteError(filepath.Join(f.opts.Dir, "sessions", escapeID(e.SessionID)), e.Code+": "+e.Message)
		f.mu.Lock()
		if s := f.sessions[e.SessionID]; s != nil {
			s.erred.Store(true)
		}
		f.mu.Unlock()
	}
	f.log.Warn("forwarder", "code", e.Code, "session_id", e.SessionID, "status", e.Status, "msg", e.Message)
	if f.opts.OnError != nil {
		f.opts.OnError(e)
	}
}
