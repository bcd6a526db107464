package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/content"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Errors of requests on live runs.
var (
	ErrNotLive = errors.New("not a keep_alive run")
	ErrEnded   = errors.New("the run is ending")
	// ErrCancelled is a Send that CancelTurns overtook: the turns were
	// cancelled while it was being checked, so it was never queued.
	ErrCancelled = errors.New("the turns were cancelled before this message was queued")
)

// inputs is how many inputs may wait for a live run's executor loop.
const inputs = 64

// live is a keep-alive run's turn bookkeeping. The executor decides when a
// send's turn starts (at once, or when the turns queued before it ended)
// and says so (EventTurnStarted): only then do its message_sent and its
// events go to its interaction, so the record reads in the order things
// happened, and a send dropped before it ran leaves none.
type live struct {
	pending map[string]wire.PromptRecord // by interaction: sends whose turn has not started
	turns   int
	ending  bool
	// cancels counts CancelTurns (under Run.sendMu): a Send that began
	// before one is cancelled with the turns queued then, however long its
	// own checks (the budgets) took.
	cancels int
}

// Message is what Send writes to a live run: a text, content blocks, or
// both (as for Request.Prompt and Request.Content).
type Message struct {
	Prompt  string
	Content []content.Block
	// Record, when set, is what relay.message_sent records of the message
	// in place of what content.Prepare makes of Prompt and Content: the ACP
	// agent describes the blocks its client sent (resource links, embedded
	// resources), which Content carries as plain text and images.
	Record *wire.PromptRecord
}

// Send starts the next turn of a live run, or queues it behind the running
// one. interactionID names the turn's interaction (generated when empty).
func (c *Core) Send(requestID, runID, interactionID string, m Message) error {
	r, err := c.liveRun(runID)
	if err != nil {
		return err
	}
	r.sendMu.Lock()
	gen := r.live.cancels
	r.sendMu.Unlock()
	msg, err := content.Prepare(m.Prompt, m.Content, r.lc.Frame().Cwd, content.Limits{})
	if err != nil {
		return refuse(RefuseBadValue, "%v", err)
	}
	grant, err := c.checkBudget(r.lc.Frame().Cwd)
	if err != nil {
		return err
	}
	rec := msg.Record
	if m.Record != nil {
		rec = *m.Record
	}
	if interactionID == "" {
		interactionID = uuid.NewString()
	}
	// Queued under sendMu, so a CancelTurns is wholly before or after it.
	r.sendMu.Lock()
	defer r.sendMu.Unlock()
	if r.live.cancels != gen {
		return fmt.Errorf("run %q: %w", runID, ErrCancelled)
	}
	r.mu.Lock()
	if r.live.ending {
		r.mu.Unlock()
		return fmt.Errorf("%w: run %q takes no more messages", ErrEnded, runID)
	}
	r.live.pending[interactionID] = rec
	r.mu.Unlock()
	r.postUnchecked(interactionID, grant)
	if err := r.input(requestID, executor.Input{Kind: executor.InputSend, Content: msg.Content, Interaction: interactionID}); err != nil {
		r.mu.Lock()
		delete(r.live.pending, interactionID)
		r.mu.Unlock()
		return err
	}
	return nil
}

// Interrupt stops the running turn of runID, which is reported interrupted
// by by; a live run then waits for the next Send, or runs the one queued.
func (c *Core) Interrupt(requestID, runID string, by wire.By) error {
	r, err := c.run(runID)
	if err != nil {
		return err
	}
	return r.input(requestID, executor.Input{Kind: executor.InputInterrupt, By: by})
}

// CancelTurns stops the running turn of runID and drops the sends queued
// behind it, which never run (ACP session/cancel).
func (c *Core) CancelTurns(runID string, by wire.By) error {
	r, err := c.run(runID)
	if err != nil {
		return err
	}
	r.sendMu.Lock()
	defer r.sendMu.Unlock()
	if r.live != nil {
		r.live.cancels++
	}
	return r.input("", executor.Input{Kind: executor.InputInterrupt, By: by, DropQueued: true})
}

// turnStarted moves a live run's events to the interaction of the send
// whose turn the CLI now runs, opening it with its relay.message_sent.
func (r *Run) turnStarted(inter string) {
	r.mu.Lock()
	rec, ok := r.live.pending[inter]
	delete(r.live.pending, inter)
	r.mu.Unlock()
	r.lc.SetInteraction(inter)
	if ok {
		// The first event of its interaction: the CLI has not answered yet.
		r.spooled(r.lc.Post(inter, wire.TypeMessageSent, wire.MessageSent{RunID: r.id, PromptRecord: rec}))
	}
}

// turnDropped forgets a send dropped before its turn started.
func (r *Run) turnDropped(inter string) {
	r.mu.Lock()
	delete(r.live.pending, inter)
	r.mu.Unlock()
}

// SetMode changes a live run's permission mode; KindModeChanged confirms it.
func (c *Core) SetMode(requestID, runID, mode string) error {
	if err := checkMode(mode); err != nil {
		return err
	}
	r, err := c.liveRun(runID)
	if err != nil {
		return err
	}
	return r.input(requestID, executor.Input{Kind: executor.InputSetMode, Mode: streamjson.PermissionMode(mode)})
}

// SetModel changes a live run's model for its next turns.
func (c *Core) SetModel(requestID, runID, model string) error {
	r, err := c.liveRun(runID)
	if err != nil {
		return err
	}
	return r.input(requestID, executor.Input{Kind: executor.InputSetModel, Model: model})
}

// SetModeWait is SetMode for a front end that answers only once the CLI
// took the change (ACP): it returns the CLI's refusal, if any, instead of
// reporting it as a KindError. KindModeChanged still follows a change.
func (c *Core) SetModeWait(ctx context.Context, runID, mode string) error {
	if err := checkMode(mode); err != nil {
		return err
	}
	r, err := c.liveRun(runID)
	if err != nil {
		return err
	}
	return r.inputWait(ctx, executor.Input{Kind: executor.InputSetMode, Mode: streamjson.PermissionMode(mode)})
}

// SetModelWait is SetModel, answered once the CLI took the change.
func (c *Core) SetModelWait(ctx context.Context, runID, model string) error {
	r, err := c.liveRun(runID)
	if err != nil {
		return err
	}
	return r.inputWait(ctx, executor.Input{Kind: executor.InputSetModel, Model: model})
}

// End closes a live run after its running turn and the queued sends; its
// KindEnded aggregates every turn.
func (c *Core) End(requestID, runID string) error {
	r, err := c.liveRun(runID)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.live.ending = true
	r.mu.Unlock()
	return r.input(requestID, executor.Input{Kind: executor.InputEnd})
}

func (c *Core) run(runID string) (*Run, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.runs[runID]
	if !ok {
		return nil, fmt.Errorf("%w %q (it ended, or never started)", ErrUnknownRun, runID)
	}
	return r, nil
}

func (c *Core) liveRun(runID string) (*Run, error) {
	r, err := c.run(runID)
	if err != nil {
		return nil, err
	}
	if r.live == nil {
		return nil, fmt.Errorf("run %q: %w (start it with keep_alive to send follow-ups or change it mid-run)", runID, ErrNotLive)
	}
	return r, nil
}

// input hands in to the run's executor loop. Its outcome comes back as a
// KindError event when the CLI refuses it; the wait for that is owned by
// the run.
func (r *Run) input(requestID string, in executor.Input) error {
	if r.live == nil {
		// A one-shot run takes only an interrupt, through the executor's
		// own channel.
		if in.Kind != executor.InputInterrupt {
			return fmt.Errorf("run %q: %w", r.id, ErrNotLive)
		}
	}
	// Counted before the hand-over: an executor that answers and returns at
	// once must not let the run's end Wait before this Add.
	r.mu.Lock()
	if r.inputsClosed {
		r.mu.Unlock()
		return fmt.Errorf("%w %q", ErrUnknownRun, r.id)
	}
	r.waiters.Add(1)
	r.mu.Unlock()
	done := make(chan error, 1)
	in.Done = done
	select {
	case r.inputs() <- in:
	case <-r.ctx.Done():
		r.waiters.Done()
		return fmt.Errorf("%w %q", ErrUnknownRun, r.id)
	default:
		r.waiters.Done()
		return fmt.Errorf("run %q has %d inputs waiting; try again when its turn ends", r.id, inputs)
	}
	go func() {
		defer r.waiters.Done()
		select {
		case err := <-done:
			if err != nil {
				r.event(Event{Kind: KindError, RequestID: requestID, Err: err})
			}
		case <-r.ctx.Done():
		}
	}()
	return nil
}

// inputWait hands in to the run's executor loop and waits for its outcome.
func (r *Run) inputWait(ctx context.Context, in executor.Input) error {
	done := make(chan error, 1)
	in.Done = done
	select {
	case r.inputs() <- in:
	case <-r.ctx.Done():
		return fmt.Errorf("%w %q", ErrUnknownRun, r.id)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-r.ctx.Done():
		return fmt.Errorf("%w %q (it ended before the CLI answered)", ErrUnknownRun, r.id)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// turnCompleted spools a live run's turn end, moves to the next queued
// turn's interaction, and tells the sink.
func (r *Run) turnCompleted(e executor.Event) {
	end := endOf(e.TurnResult, nil)
	r.mu.Lock()
	r.live.turns = e.Turn
	r.mu.Unlock()
	// The next send's turn starts (EventTurnStarted) only after this one's
	// end is reported, so this is still the turn's interaction.
	inter := r.lc.Interaction()
	// The turn's own interaction: the next turn's events go to the next one.
	r.spooled(r.lc.TurnEnded(inter, wire.TurnCompleted{Turn: e.Turn, Status: end.Status,
		By: end.StoppedBy, Reason: end.Reason,
		Result: end.Result, ConversationID: end.ConversationID, Usage: end.Usage, TotalCostUSD: end.TotalCostUSD}))
	r.sink.Event(Event{Kind: KindTurnCompleted, RunID: r.id, SessionID: r.session, InteractionID: inter, Turn: e.Turn, End: end})
}

// endOf turns an executor result into an End.
func endOf(res *executor.Result, err error) *End {
	end := &End{Status: res.Status, ConversationID: res.ConversationID,
		Result: res.CommandResult, StoppedBy: res.StoppedBy, Cause: res.Cause}
	if res.HasUsage {
		u := wire.Usage(res.Usage)
		cost := res.TotalCostUSD
		end.Usage, end.TotalCostUSD = &u, &cost
	}
	switch res.Status {
	case executor.StatusCompleted:
	case executor.StatusCancelled, executor.StatusInterrupted:
		end.Reason = res.Reason // who stopped it and how
	default:
		end.Reason = res.Reason
		if end.Reason == "" && err != nil {
			end.Reason = err.Error()
		}
	}
	return end
}

// idleTimeout is a live run's default idle_timeout (CONTRACT §7).
const idleTimeout = 30 * time.Minute
