package relay

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Frame names a run: its IDs, working directory and mode. Fill gives what
// is blank the defaults every front end shares.
type Frame struct {
	RunID         string
	SessionID     string
	InteractionID string // the interaction the run starts in
	Cwd           string
	Mode          string // wire.ModeTerminal, wire.ModeACP, or none for a background run
	Host          string // the machine's host name, posted in relay.run_started
}

// Fill gives a blank ID a new UUID and a blank Cwd defaultCwd.
func (f *Frame) Fill(defaultCwd string) {
	for _, id := range []*string{&f.RunID, &f.SessionID, &f.InteractionID} {
		if *id == "" {
			*id = uuid.NewString()
		}
	}
	if f.Cwd == "" {
		f.Cwd = defaultCwd
	}
}

// Lifecycle is the bookkeeping every run shares, whichever front end runs
// it (a background run of the Core, a visible-terminal run): the relay
// events that frame it (run_started, each turn's end, the run's end, with
// wire's statuses), in the interaction each belongs to, and the
// workspace's last conversation once it ends. One copy, so that the
// record of a run reads the same from every surface.
type Lifecycle struct {
	frame Frame
	spool Spool
	state *State // nil: no last conversation is kept
	log   *slog.Logger

	mu    sync.Mutex
	inter string // the interaction events go to now
}

// NewLifecycle frames a run; f must be filled (Frame.Fill). log (nil:
// none) hears what is not worth failing a run for.
func NewLifecycle(spool Spool, state *State, f Frame, log *slog.Logger) *Lifecycle {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Lifecycle{frame: f, spool: spool, state: state, log: log, inter: f.InteractionID}
}

// Frame is the run's frame.
func (l *Lifecycle) Frame() Frame { return l.frame }

// Interaction is the interaction the run's events go to now.
func (l *Lifecycle) Interaction() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inter
}

// SetInteraction moves the run's events to another interaction (a live
// run's next turn).
func (l *Lifecycle) SetInteraction(inter string) {
	l.mu.Lock()
	l.inter = inter
	l.mu.Unlock()
}

// Started posts relay.run_started; its run ID, mode and cwd are the
// frame's.
func (l *Lifecycle) Started(e wire.RunStarted) error {
	e.RunID, e.Mode, e.Cwd, e.Host = l.frame.RunID, l.frame.Mode, l.frame.Cwd, l.frame.Host
	return l.Post(l.Interaction(), wire.TypeRunStarted, e)
}

// TurnEnded posts relay.turn_completed in the turn's own interaction.
func (l *Lifecycle) TurnEnded(inter string, e wire.TurnCompleted) error {
	e.RunID = l.frame.RunID
	if l.frame.Mode == wire.ModeTerminal {
		e.Mode = l.frame.Mode
	}
	return l.Post(inter, wire.TypeTurnCompleted, e)
}

// Ended posts the run's end, of the type its status names
// (relay.run_completed, run_failed or run_cancelled), and remembers its
// conversation as the workspace's last (resume_last_session).
func (l *Lifecycle) Ended(e wire.RunEnded) error {
	e.RunID, e.Mode = l.frame.RunID, l.frame.Mode
	err := l.Post(l.Interaction(), wire.EndType(e.Status), e)
	if e.ConversationID != "" && l.state != nil && l.frame.Cwd != "" {
		if err := l.state.Set(filepath.Clean(l.frame.Cwd), e.ConversationID); err != nil {
			// Only resume_last_session loses it.
			l.log.Warn("cannot remember the last conversation", "err", err)
		}
	}
	return err
}

// Post spools one of the relay's own events in interaction inter.
func (l *Lifecycle) Post(inter, typ string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode %s: %w", typ, err)
	}
	return l.Enqueue(forwarder.Event{SessionID: l.frame.SessionID, InteractionID: inter, Type: typ, Data: b,
		Source: wire.SourceRelay})
}

// Enqueue spools any event of the run (a CLI line, a hook, a transcript
// line) under the run's session.
func (l *Lifecycle) Enqueue(ev forwarder.Event) error {
	ev.SessionID = l.frame.SessionID
	if _, err := l.spool.Enqueue(ev); err != nil {
		return fmt.Errorf("spool %s: %w", ev.Type, err)
	}
	return nil
}
