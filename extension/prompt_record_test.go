package extension

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/content"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// liveFake plays a keep_alive run: one turn for the prompt, one per send,
// until end.
type liveFake struct{}

func (liveFake) Run(ctx context.Context, req executor.Request, obs executor.Observer, _ executor.Approver) (*executor.Result, error) {
	turn := 0
	done := func() {
		turn++
		obs.Event(executor.Event{Kind: executor.EventTurnCompleted, RunID: req.RunID, Turn: turn,
			TurnResult: &executor.Result{Status: executor.StatusCompleted}})
	}
	if !req.Idle {
		done()
	}
	for {
		select {
		case in := <-req.Inputs:
			if in.Done != nil {
				in.Done <- nil
			}
			switch in.Kind {
			case executor.InputSend:
				// As the executor does when it writes the message.
				obs.Event(executor.Event{Kind: executor.EventTurnStarted, RunID: req.RunID, Interaction: in.Interaction})
				done()
			case executor.InputEnd:
				return &executor.Result{Status: executor.StatusCompleted}, nil
			}
		case <-ctx.Done():
			return &executor.Result{Status: executor.StatusCancelled}, nil
		}
	}
}

// Prompts given as content blocks through the protocol, with prompt and
// with send, are recorded whole: relay.run_started and relay.message_sent
// carry the text (prompt and text blocks joined) and describe every block;
// a message of blocks alone has no text but its blocks; junk in a text is
// replaced, never dropped.
func TestContentBlocksRecorded(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	img := buf.Bytes()
	if err := os.WriteFile(filepath.Join(dir, "shot.png"), img, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("private notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(o *setup, _ *fakeForwarder) { o.Core.Executor = liveFake{} })
	prompt := "look"
	h.cmd(Command{Action: ActionPrompt, RequestID: "p1", RunID: "r1", SessionID: "s1", Prompt: &prompt, Options: PromptOptions{
		RunOptions: executor.RunOptions{
			Cwd:       dir,
			KeepAlive: true,
		},
		Content: []content.Block{
			{Type: "text", Text: "at this"},
			{Type: "image", Data: base64.StdEncoding.EncodeToString(img)},
			{Type: "file", Path: "notes.txt"},
		},
	}})
	h.waitFor("turn 1", func(ev Event) bool { return ev.Event == EventTurnCompleted && ev.Turn == 1 })
	h.cmd(Command{Action: ActionSend, RequestID: "s-img", RunID: "r1", InteractionID: "i2", Content: []content.Block{{Type: "image", Path: "shot.png"}}})
	h.waitFor("turn 2", func(ev Event) bool { return ev.Event == EventTurnCompleted && ev.Turn == 2 })
	// Raw, so the line can hold a byte that is not UTF-8.
	h.send(`{"action":"send","request_id":"s-junk","run_id":"r1","interaction_id":"i3","prompt":"and \u0000 then ` + "\xff" + `"}`)
	h.waitFor("turn 3", func(ev Event) bool { return ev.Event == EventTurnCompleted && ev.Turn == 3 })
	h.cmd(Command{Action: ActionEnd, RequestID: "e", RunID: "r1"})
	h.waitEvent(EventRunCompleted, "r1")

	var started wire.RunStarted
	var sent []wire.MessageSent
	for _, ev := range h.fwd.Events() {
		switch ev.Type {
		case wire.TypeRunStarted:
			if err := json.Unmarshal(ev.Data, &started); err != nil {
				t.Fatal(err)
			}
		case wire.TypeMessageSent:
			var m wire.MessageSent
			if err := json.Unmarshal(ev.Data, &m); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, m)
		}
	}
	want := wire.RecordPrompt("look\n\nat this", []wire.PromptBlock{
		{Type: "text", Size: 7},
		{Type: "image", MediaType: "image/png", Size: int64(len(img)), SHA256: wire.SHA256(img)},
		{Type: "file", Path: "notes.txt", MediaType: "text/plain", Size: 14, SHA256: wire.SHA256([]byte("private notes\n"))},
	})
	if got, w := mustJSON(t, started.PromptRecord), mustJSON(t, want); started.V != wire.VRunStarted || got != w {
		t.Errorf("relay.run_started v%d records\n %s\nwant\n %s", started.V, got, w)
	}
	if strings.Contains(started.Prompt, "private") {
		t.Error("the record's text holds the file's contents")
	}
	if len(sent) != 2 {
		t.Fatalf("%d relay.message_sent, want 2", len(sent))
	}
	wantImg := wire.RecordPrompt("", []wire.PromptBlock{{Type: "image", Path: "shot.png", MediaType: "image/png", Size: int64(len(img)), SHA256: wire.SHA256(img)}})
	if got, w := mustJSON(t, sent[0].PromptRecord), mustJSON(t, wantImg); got != w {
		t.Errorf("image send records %s, want %s", got, w)
	}
	if got := sent[1].Prompt; got != "and \uFFFD then \uFFFD" {
		t.Errorf("junk send records %q, want NUL and the bad byte replaced", got)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
