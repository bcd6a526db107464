package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/content"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// liveExec plays a keep_alive run as the executor does: one turn for the
// request's prompt (none when Idle), then one per InputSend in order, until
// InputEnd. A turn writes an assistant line naming its prompt, another one
// when it ends, then EventTurnCompleted. A turn whose prompt starts with
// "hold" says so on held after its first line and waits for release, so a
// test can send while it runs.
// It returns as soon as it takes InputEnd, which once raced the run's
// waiters.Wait with Run.input's registration of the input's outcome.
type liveExec struct {
	held    chan string
	release chan struct{}
}

func newLiveExec() *liveExec {
	return &liveExec{held: make(chan string, 1), release: make(chan struct{})}
}

func (x *liveExec) Run(ctx context.Context, req executor.Request, obs executor.Observer, _ executor.Approver) (*executor.Result, error) {
	turn := 0
	play := func(prompt, inter string) {
		turn++
		if inter != "" {
			// As the executor does when it writes a send's message.
			obs.Event(executor.Event{Kind: executor.EventTurnStarted, RunID: req.RunID, Interaction: inter})
		}
		line := func(at string) {
			b, _ := json.Marshal(map[string]any{"type": "assistant", "session_id": "conv-1", "turn": turn, "at": at, "prompt": prompt})
			m, err := streamjson.Decode(b)
			if err != nil {
				panic(err)
			}
			obs.Event(executor.Event{Kind: executor.EventLine, RunID: req.RunID, Line: b, Message: m})
		}
		line("start")
		if strings.HasPrefix(prompt, "hold") {
			x.held <- prompt
			select {
			case <-x.release:
			case <-ctx.Done():
			}
		}
		line("end")
		obs.Event(executor.Event{Kind: executor.EventTurnCompleted, RunID: req.RunID, Turn: turn,
			TurnResult: &executor.Result{Status: executor.StatusCompleted, ConversationID: "conv-1"}})
	}
	if !req.Idle {
		play(req.Prompt, "")
	}
	for {
		select {
		case in := <-req.Inputs:
			if in.Done != nil {
				in.Done <- nil
			}
			switch in.Kind {
			case executor.InputSend:
				var blocks []struct{ Text string }
				if err := json.Unmarshal(in.Content, &blocks); err != nil || len(blocks) == 0 {
					panic("send content: " + string(in.Content))
				}
				play(blocks[0].Text, in.Interaction)
			case executor.InputEnd:
				return &executor.Result{Status: executor.StatusCompleted, ConversationID: "conv-1"}, nil
			}
		case <-ctx.Done():
			return &executor.Result{Status: executor.StatusCancelled}, nil
		}
	}
}

// seqSpool spools into a real forwarder (never started: nothing is posted),
// so the events get the seq the backend gets, and records each with it.
type seqSpool struct {
	f   *forwarder.Forwarder
	mu  sync.Mutex
	evs []spooledEvent
}

type spooledEvent struct {
	forwarder.Event
	Seq int64
}

func newSeqSpool(t *testing.T) *seqSpool {
	f, err := forwarder.Open(forwarder.Options{Dir: t.TempDir(), BackendURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()    // nothing is delivered: stop at once
		f.Stop(ctx) //nolint:errcheck // ErrUndelivered: by design
	})
	return &seqSpool{f: f}
}

func (s *seqSpool) Enqueue(ev forwarder.Event) (forwarder.Accepted, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	acc, err := s.f.Enqueue(ev)
	if err == nil {
		s.evs = append(s.evs, spooledEvent{ev, acc.Seq})
	}
	return acc, err
}

// where returns the events keep accepts, in enqueue order.
func (s *seqSpool) where(keep func(spooledEvent) bool) []spooledEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []spooledEvent
	for _, e := range s.evs {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// of returns the events of interaction inter in seq order.
func (s *seqSpool) of(inter string) []spooledEvent {
	out := s.where(func(e spooledEvent) bool { return e.InteractionID == inter })
	slices.SortFunc(out, func(a, b spooledEvent) int { return int(a.Seq - b.Seq) })
	return out
}

// ofType returns the events of type typ in enqueue order.
func (s *seqSpool) ofType(typ string) []spooledEvent {
	return s.where(func(e spooledEvent) bool { return e.Type == typ })
}

// turnSink hands over turn ends and the run's end.
type turnSink struct {
	turns chan Event
	ended chan Event
}

func newTurnSink() *turnSink {
	return &turnSink{turns: make(chan Event, 8), ended: make(chan Event, 1)}
}

func (s *turnSink) Event(e Event) {
	switch e.Kind {
	case KindTurnCompleted:
		s.turns <- e
	case KindEnded:
		s.ended <- e
	}
}

func (s *turnSink) turn(t *testing.T) Event {
	t.Helper()
	return await(t, s.turns, "a turn to complete")
}

func (s *turnSink) end(t *testing.T) Event {
	t.Helper()
	return await(t, s.ended, "the run to end")
}

// describe names a spooled event for failure messages: its type, and for
// the fake CLI's lines their turn and place.
func describe(e spooledEvent) string {
	if e.Type != "assistant" {
		return e.Type
	}
	var d struct {
		Turn int    `json:"turn"`
		At   string `json:"at"`
	}
	json.Unmarshal(e.Data, &d) //nolint:errcheck
	return fmt.Sprintf("assistant %d %s", d.Turn, d.At)
}

func describeAll(evs []spooledEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = describe(e)
	}
	return out
}

// A follow-up is on the backend as relay.message_sent: the first event
// (seq 1) of the interaction it starts, before anything the CLI says in
// that turn, and with what was sent. Also when it waited behind a running
// turn: the rest of that turn stays in its own interaction.
func TestSendPostsMessageSentFirst(t *testing.T) {
	for _, tc := range []struct {
		name    string
		first   string // the run's prompt; "" starts it Idle
		inter   string // the send's interaction; "" lets the Core make one
		prompt  string
		blocks  []content.Block
		inFirst []string // interaction "i1", in seq order
		inNext  []string // the send's interaction, in seq order
	}{
		{name: "after a turn", first: "one", inter: "i2", prompt: "and then two",
			inFirst: []string{wire.TypeRunStarted, "assistant 1 start", "assistant 1 end", wire.TypeTurnCompleted},
			inNext:  []string{wire.TypeMessageSent, "assistant 2 start", "assistant 2 end", wire.TypeTurnCompleted, wire.TypeRunCompleted}},
		{name: "queued behind a running turn", first: "hold one", prompt: "queued two",
			blocks:  []content.Block{{Type: content.TypeFile, Path: "notes.txt"}},
			inFirst: []string{wire.TypeRunStarted, "assistant 1 start", "assistant 1 end", wire.TypeTurnCompleted},
			inNext:  []string{wire.TypeMessageSent, "assistant 2 start", "assistant 2 end", wire.TypeTurnCompleted, wire.TypeRunCompleted}},
		{name: "first turn of an idle run", inter: "i2", prompt: "wake up",
			inFirst: []string{wire.TypeRunStarted},
			inNext:  []string{wire.TypeMessageSent, "assistant 1 start", "assistant 1 end", wire.TypeTurnCompleted, wire.TypeRunCompleted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cwd := t.TempDir()
			if err := os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("notes"), 0o600); err != nil {
				t.Fatal(err)
			}
			spool := newSeqSpool(t)
			x := newLiveExec()
			c := New(Options{Executor: x, Spool: spool, DefaultCwd: cwd})
			defer c.Close()
			sink := newTurnSink()
			if _, err := c.Start(Request{
				RunOptions: executor.RunOptions{
					KeepAlive: true,
				},
				RunID:         "r",
				SessionID:     "s",
				InteractionID: "i1",
				Prompt:        tc.first,
				Idle:          tc.first == "",
			}, sink); err != nil {
				t.Fatal(err)
			}
			hold := strings.HasPrefix(tc.first, "hold")
			switch {
			case hold: // send while it runs
				await(t, x.held, "the first turn to start")
			case tc.first != "": // send once it ended
				if e := sink.turn(t); e.InteractionID != "i1" {
					t.Fatalf("turn 1 ended in interaction %q, want i1", e.InteractionID)
				}
			}
			if err := c.Send("req-1", "r", tc.inter, Message{Prompt: tc.prompt, Content: tc.blocks}); err != nil {
				t.Fatal(err)
			}
			if err := c.End("req-2", "r"); err != nil {
				t.Fatal(err)
			}
			if hold {
				close(x.release)
			}
			sink.end(t)

			sent := spool.ofType(wire.TypeMessageSent)
			if len(sent) != 1 {
				t.Fatalf("%d relay.message_sent events, want 1", len(sent))
			}
			inter := sent[0].InteractionID
			if tc.inter != "" && inter != tc.inter {
				t.Errorf("relay.message_sent in interaction %q, want the send's %q", inter, tc.inter)
			}
			if inter == "" || inter == "i1" {
				t.Fatalf("relay.message_sent in interaction %q, want a new one", inter)
			}
			if sent[0].Seq != 1 || sent[0].Source != wire.SourceRelay || sent[0].SessionID != "s" {
				t.Errorf("relay.message_sent: seq %d, source %q, session %q; want seq 1 (the interaction's first), relay, s",
					sent[0].Seq, sent[0].Source, sent[0].SessionID)
			}
			var got map[string]any
			if err := json.Unmarshal(sent[0].Data, &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"v": float64(wire.VMessageSent), "run_id": "r", "prompt": tc.prompt, "prompt_bytes": float64(len(tc.prompt))}
			if len(tc.blocks) > 0 {
				// notes.txt holds "notes".
				want["blocks"] = []any{map[string]any{"type": "file", "path": "notes.txt", "media_type": "text/plain", "size": float64(5),
					"sha256": wire.SHA256([]byte("notes"))}}
			}
			if gb, _ := json.Marshal(got); string(gb) != mustMarshal(t, want) {
				t.Errorf("relay.message_sent data %s, want %s", sent[0].Data, mustMarshal(t, want))
			}
			if got := describeAll(spool.of("i1")); !slices.Equal(got, tc.inFirst) {
				t.Errorf("interaction i1 holds %q, want %q", got, tc.inFirst)
			}
			evs := spool.of(inter)
			if got := describeAll(evs); !slices.Equal(got, tc.inNext) {
				t.Errorf("the follow-up's interaction holds %q, want %q", got, tc.inNext)
			}
			for i, e := range evs {
				if e.Seq != int64(i+1) {
					t.Errorf("the follow-up's interaction: %s has seq %d, want %d", describe(e), e.Seq, i+1)
				}
			}
			// The front end hears of the follow-up's turn under the same
			// interaction.
			if hold {
				if e := sink.turn(t); e.InteractionID != "i1" {
					t.Errorf("turn 1 ended in interaction %q, want i1", e.InteractionID)
				}
			}
			if e := sink.turn(t); e.InteractionID != inter {
				t.Errorf("the follow-up's turn ended in interaction %q, want %q", e.InteractionID, inter)
			}
		})
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
