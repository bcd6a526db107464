package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-cleanhttp"

	"github.com/claude-relay/claude-relay/internal/backoff"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Core is the run core whose approvals a Waiter answers (relay.Core).
type Core interface {
	Pending() ([]relay.PendingApproval, <-chan struct{})
	Answer(runID, approvalID string, rep relay.Reply) error
}

// Options configure a Waiter; zero values mean the defaults.
type Options struct {
	Core Core
	URL  string // the backend's base URL; empty: the Waiter does nothing
	// Token is the backend token, read for every request so that a
	// reloaded one applies at once; nil or "": no Authorization header.
	Token func() string
	Wait  time.Duration // how long the backend may hold one poll (25s)
	// After a failed poll: full jitter over a capped exponential (500ms,
	// 30s), or Retry-After up to MaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// NoAPIBackoff is the pause after a 404, 405 or 501: a backend without
	// the decisions API, which will not grow one soon (5m).
	NoAPIBackoff time.Duration
	// MinInterval spaces polls that did not change anything, so a backend
	// that answers at once instead of holding the poll is not hammered (1s).
	MinInterval time.Duration
	Transport   http.RoundTripper // nil: a pooled cleanhttp transport
	Logger      *slog.Logger
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Wait, 25*time.Second)
	def(&o.MinBackoff, 500*time.Millisecond)
	def(&o.MaxBackoff, 30*time.Second)
	def(&o.NoAPIBackoff, 5*time.Minute)
	def(&o.MinInterval, time.Second)
	if o.Token == nil {
		o.Token = func() string { return "" }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Waiter answers its Core's pending approvals with the decisions made
// through the backend. It owns one goroutine, from Start to Close.
type Waiter struct {
	o      Options
	log    *slog.Logger
	client *http.Client
	url    string // …/api/approvals/decisions

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once

	// The loop's own; nothing else touches them.
	rejected map[string]string // approval ID → the decision the core refused: not asked about again
	said     string            // the problem logged last, so a streak is logged once
	sleep    func(ctx context.Context, d time.Duration, wake <-chan struct{}) bool
}

// Start builds a Waiter and starts its goroutine. With no URL or Core it
// does nothing (until Close).
func Start(o Options) *Waiter { return newWaiter(o).start() }

func newWaiter(o Options) *Waiter {
	o.defaults()
	tr := o.Transport
	if tr == nil {
		tr = cleanhttp.DefaultPooledTransport()
	}
	return &Waiter{o: o, log: o.Logger, done: make(chan struct{}), rejected: map[string]string{}, sleep: sleep,
		// A poll the backend holds past Wait by this much is broken.
		client: &http.Client{Transport: tr, Timeout: o.Wait + 30*time.Second},
		url:    strings.TrimRight(o.URL, "/") + "/api/approvals/decisions"}
}

func (w *Waiter) start() *Waiter {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	if w.o.URL == "" || w.o.Core == nil {
		close(w.done)
		return w
	}
	go w.run(ctx)
	return w
}

// Close stops the Waiter, cancelling a poll in flight, and waits for its
// goroutine. It is idempotent.
func (w *Waiter) Close() error {
	w.closeOnce.Do(func() {
		w.cancel()
		<-w.done
		w.client.CloseIdleConnections()
	})
	return nil
}

// run polls while approvals are pending, until ctx ends.
func (w *Waiter) run(ctx context.Context) {
	defer close(w.done)
	failures := 0
	for {
		pending, changed := w.o.Core.Pending()
		ids := w.askable(pending)
		if len(ids) == 0 {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return
			}
		}
		started := time.Now()
		ds, err := w.poll(ctx, ids, changed)
		if ctx.Err() != nil {
			return
		}
		var wait time.Duration
		var wake <-chan struct{}
		switch {
		case errors.Is(err, errChanged):
			continue // a new set to ask about: at once
		case err != nil:
			failures++
			wait = w.failed(err, failures)
		default:
			failures = 0
			w.recovered()
			w.apply(ds, pending)
			// An applied decision changed the set, which wakes this at
			// once; a reply that changed nothing waits a little.
			wait, wake = w.o.MinInterval-time.Since(started), changed
		}
		if wait > 0 && !w.sleep(ctx, wait, wake) {
			return
		}
	}
}

// askable is the pending approvals to ask about, sorted: all but those whose
// decision the core refused. It forgets refusals of approvals gone.
func (w *Waiter) askable(pending []relay.PendingApproval) []string {
	ids := make([]string, 0, len(pending))
	live := map[string]bool{}
	for _, p := range pending {
		live[p.ApprovalID] = true
		if _, refused := w.rejected[p.ApprovalID]; !refused {
			ids = append(ids, p.ApprovalID)
		}
	}
	for id := range w.rejected {
		if !live[id] {
			delete(w.rejected, id)
		}
	}
	slices.Sort(ids)
	// The backend takes at most maxIDs per poll; beyond that many waiting
	// at once, the rest are asked about as these go.
	return ids[:min(len(ids), maxIDs)]
}

// maxIDs is how many approval IDs one poll may name (the backend's bound).
const maxIDs = 100

// errChanged: the pending set changed while a poll was in flight, which
// was cancelled for a new one.
var errChanged = errors.New("the pending approvals changed")

// pollError is a poll that failed: a transport error, or a status other
// than 200.
type pollError struct {
	status     int // 0: no response
	retryAfter time.Duration
	err        error
}

func (e *pollError) Error() string {
	if e.status != 0 {
		return fmt.Sprintf("HTTP %d: %v", e.status, e.err)
	}
	return e.err.Error()
}

func (e *pollError) Unwrap() error { return e.err }

// poll asks the backend for the decisions of ids, holding the request
// until it answers or changed is closed (errChanged).
func (w *Waiter) poll(ctx context.Context, ids []string, changed <-chan struct{}) ([]wire.RemoteDecision, error) {
	rctx, cancel := context.WithCancel(ctx)
	stop := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		select {
		case <-changed:
			cancel()
		case <-stop:
		}
	})
	defer func() {
		close(stop)
		watch.Wait()
		cancel()
	}()
	moved := func(err error) error {
		select {
		case <-changed:
			return errChanged
		default:
			return err
		}
	}
	q := url.Values{"ids": {strings.Join(ids, ",")}, "wait": {w.o.Wait.String()}}
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, w.url+"?"+q.Encode(), nil)
	if err != nil {
		return nil, &pollError{err: fmt.Errorf("backend URL %q: %w", w.o.URL, err)}
	}
	req.Header.Set("Accept", "application/json")
	if tok := w.o.Token(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return nil, moved(&pollError{err: transportError(err)})
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, moved(&pollError{status: resp.StatusCode, retryAfter: retryAfter(resp),
			err: errors.New(strings.TrimSpace(string(snippet)))})
	}
	var body wire.RemoteDecisions
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&body); err != nil {
		return nil, moved(&pollError{status: resp.StatusCode, err: fmt.Errorf("the answer is not {\"decisions\":[…]}: %w", err)})
	}
	return body.Decisions, nil
}

// transportError drops the URL's query (the IDs) from a client error.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// retryAfter is a 429's or 503's Retry-After, in seconds or as a date;
// 0 when it says none.
func retryAfter(resp *http.Response) time.Duration {
	d, _ := backoff.RetryAfter(resp, time.Now())
	return d
}

// failed logs a failed poll (once per streak) and says how long to wait
// before the next one.
func (w *Waiter) failed(err error, failures int) time.Duration {
	var pe *pollError
	if !errors.As(err, &pe) {
		pe = &pollError{err: err}
	}
	args := []any{"url", w.url, "err", err}
	switch s := pe.status; {
	case s == http.StatusNotFound || s == http.StatusMethodNotAllowed || s == http.StatusNotImplemented:
		w.once("no-api", slog.LevelInfo, fmt.Sprintf("the backend has no decisions API (HTTP %d): approvals made in its dashboard do not reach "+
			"this helper, answer them in the editor or terminal (a newer `claude-relay serve` has it); asking again in %s", s, w.o.NoAPIBackoff), args...)
		return w.o.NoAPIBackoff
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		w.once("auth", slog.LevelWarn, fmt.Sprintf("the backend refused this helper's token for dashboard decisions (HTTP %d): "+
			"set backend.token to a token the backend accepts for reading (serve.tokens); until then approvals are answered "+
			"in the editor or terminal only", s), args...)
		return w.o.MaxBackoff
	case s == 0 || s == http.StatusRequestTimeout || s == http.StatusTooEarly || s == http.StatusTooManyRequests || s >= 500:
		w.log.Debug("decisions poll failed; retrying", append(args, "failures", failures)...)
		w.once("transient", slog.LevelWarn, "cannot ask the backend for decisions made in its dashboard; retrying with backoff "+
			"(approvals can still be answered in the editor or terminal)", args...)
		return pollBackoff(w.o.MinBackoff, w.o.MaxBackoff, failures, pe.retryAfter)
	case s == http.StatusOK:
		w.once("bad-answer", slog.LevelWarn, fmt.Sprintf("the backend's answer to the decisions poll makes no sense; "+
			"check that backend.url points at a claude-relay serve; asking again in %s", w.o.MaxBackoff), args...)
		return w.o.MaxBackoff
	default:
		w.once(fmt.Sprintf("refused-%d", s), slog.LevelWarn, fmt.Sprintf("the backend refused the decisions poll (HTTP %d); "+
			"check that backend.url points at a claude-relay serve; retrying in %s", s, w.o.MaxBackoff), args...)
		return w.o.MaxBackoff
	}
}

// once logs msg at level unless the same problem was the last one logged.
func (w *Waiter) once(problem string, level slog.Level, msg string, args ...any) {
	if w.said == problem {
		return
	}
	w.said = problem
	w.log.Log(context.Background(), level, msg, args...)
}

// recovered notes a poll that worked after logged failures.
func (w *Waiter) recovered() {
	if w.said != "" {
		w.log.Info("the backend answers the decisions poll again", "url", w.url)
		w.said = ""
	}
}

// pollBackoff is the server's Retry-After up to hi, or full jitter over a
// capped exponential (failures from 1).
func pollBackoff(lo, hi time.Duration, failures int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, hi)
	}
	return backoff.Jitter(lo, hi, failures-1)
}

// sleep waits d, or until wake is closed (true), or ctx ends (false).
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-wake:
		return true
	case <-ctx.Done():
		return false
	}
}

// apply answers the core with each decision about an approval still
// pending. The core settles races: a decision that comes after another
// side answered is an ErrUnknownApproval, and nothing to worry about.
func (w *Waiter) apply(ds []wire.RemoteDecision, pending []relay.PendingApproval) {
	runOf := make(map[string]string, len(pending))
	for _, p := range pending {
		runOf[p.ApprovalID] = p.RunID
	}
	for _, d := range ds {
		run, ours := runOf[d.ApprovalID]
		if _, refused := w.rejected[d.ApprovalID]; !ours || refused {
			continue
		}
		err := w.o.Core.Answer(run, d.ApprovalID, relay.Reply{Decision: d.Decision, Reason: d.Reason,
			UpdatedInput: d.UpdatedInput, Answers: d.Answers, By: wire.ByDashboard, ByDetail: d.By, DecisionID: d.DecisionID,
			InputSHA256: d.InputSHA256})
		args := []any{"approval", d.ApprovalID, "run", run, "decision", d.Decision, "by", d.By, "decision_id", d.DecisionID}
		switch {
		case err == nil:
			// Debug: the front end says it (the view of `run` shares the
			// terminal with this log), and the backend records it.
			w.log.Debug("approval decided in the dashboard", args...)
		case errors.Is(err, relay.ErrBadReply):
			w.rejected[d.ApprovalID] = d.DecisionID
			w.log.Warn("refused a decision made in the dashboard: "+err.Error()+"; answer the approval in the editor or terminal", args...)
		case errors.Is(err, relay.ErrUnknownApproval):
			w.log.Debug("a decision made in the dashboard came after another answer", append(args, "err", err)...)
		default:
			w.log.Warn("cannot apply a decision made in the dashboard", append(args, "err", err)...)
		}
	}
}
