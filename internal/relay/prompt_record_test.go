package relay

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
	"unicode/utf8"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/content"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// captureExec hands over the request it was given and completes at once.
type captureExec struct{ got chan executor.Request }

func (x captureExec) Run(_ context.Context, req executor.Request, _ executor.Observer, _ executor.Approver) (*executor.Result, error) {
	x.got <- req
	return &executor.Result{Status: executor.StatusCompleted}, nil
}

// tinyPNG is a 1x1 PNG.
func tinyPNG(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// runStartedOf decodes the one relay.run_started the spool took.
func runStartedOf(t *testing.T, s *fakeSpool) (wire.RunStarted, map[string]json.RawMessage) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.evs {
		if e.Type != wire.TypeRunStarted {
			continue
		}
		var rs wire.RunStarted
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(e.Data, &rs); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(e.Data, &raw); err != nil {
			t.Fatal(err)
		}
		return rs, raw
	}
	t.Fatal("no relay.run_started spooled")
	return wire.RunStarted{}, nil
}

// relay.run_started records the prompt as given, in full up to the cap,
// with its blocks described, whatever the CLI gets; an idle start records
// none and says it is idle.
func TestRunStartedRecordsPrompt(t *testing.T) {
	cwd := t.TempDir()
	img := tinyPNG(t)
	if err := os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("my notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("0123456789abcdef", 10<<20/16) // 10 MiB
	for _, tc := range []struct {
		name       string
		req        Request
		wantPrompt string
		wantBytes  int
		truncated  bool
		blocks     []wire.PromptBlock
		idle       bool
		cliPrompt  string // what the executor must get as Prompt ("" = not checked)
	}{
		{name: "text", req: Request{Prompt: "fix the flaky test"}, wantPrompt: "fix the flaky test", wantBytes: 18,
			cliPrompt: "fix the flaky test"},
		{name: "10 MiB: capped and marked, whole for the CLI", req: Request{Prompt: huge}, wantPrompt: huge[:wire.MaxPromptBytes],
			wantBytes: len(huge), truncated: true, cliPrompt: huge},
		{name: "binary junk: replaced, not dropped", req: Request{Prompt: "a\x00b\xffc"}, wantPrompt: "a\uFFFDb\uFFFDc", wantBytes: 5,
			cliPrompt: "a\x00b\xffc"},
		{name: "content blocks: text joined, blocks described", req: Request{Prompt: "look", Content: []content.Block{
			{Type: "text", Text: "at this"},
			{Type: "image", Data: base64.StdEncoding.EncodeToString(img)},
			{Type: "file", Path: "notes.txt"},
		}}, wantPrompt: "look\n\nat this", wantBytes: len("look\n\nat this"), blocks: []wire.PromptBlock{
			{Type: "text", Size: 7},
			{Type: "image", MediaType: "image/png", Size: int64(len(img)), SHA256: wire.SHA256(img)},
			{Type: "file", Path: "notes.txt", MediaType: "text/plain", Size: 9, SHA256: wire.SHA256([]byte("my notes\n"))},
		}},
		{name: "idle start", req: Request{RunOptions: executor.RunOptions{KeepAlive: true}, Idle: true}, idle: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spool := &fakeSpool{}
			x := captureExec{got: make(chan executor.Request, 1)}
			c := New(Options{Executor: x, Spool: spool, DefaultCwd: cwd})
			defer c.Close()
			rec := newRecorder(t, spool)
			if _, err := c.Start(tc.req, rec); err != nil {
				t.Fatal(err)
			}
			er := await(t, x.got, "the executor")
			rec.wait(t)
			rs, raw := runStartedOf(t, spool)
			if rs.V != wire.VRunStarted {
				t.Errorf("v = %d, want %d", rs.V, wire.VRunStarted)
			}
			if rs.Prompt != tc.wantPrompt || rs.PromptBytes != tc.wantBytes || rs.PromptTruncated != tc.truncated {
				t.Errorf("prompt %d bytes (truncated %v, prompt_bytes %d); want %d bytes (truncated %v, prompt_bytes %d)",
					len(rs.Prompt), rs.PromptTruncated, rs.PromptBytes, len(tc.wantPrompt), tc.truncated, tc.wantBytes)
			}
			if !utf8.ValidString(rs.Prompt) || len(rs.Prompt) > wire.MaxPromptBytes {
				t.Errorf("recorded prompt: valid UTF-8 %v, %d bytes (cap %d)", utf8.ValidString(rs.Prompt), len(rs.Prompt), wire.MaxPromptBytes)
			}
			if got, want := mustMarshal(t, rs.Blocks), mustMarshal(t, tc.blocks); got != want {
				t.Errorf("blocks %s, want %s", got, want)
			}
			if rs.Idle != tc.idle {
				t.Errorf("idle %v, want %v", rs.Idle, tc.idle)
			}
			if tc.idle {
				if _, ok := raw["prompt"]; ok {
					t.Errorf("an idle start recorded a prompt: %s", raw["prompt"])
				}
			}
			if tc.cliPrompt != "" && er.Prompt != tc.cliPrompt {
				t.Errorf("the executor got a prompt of %d bytes, want the whole %d", len(er.Prompt), len(tc.cliPrompt))
			}
			if len(tc.req.Content) > 0 && !bytes.Contains(er.Content, []byte(base64.StdEncoding.EncodeToString(img))) {
				t.Errorf("the executor's content lacks the image: %.200s", er.Content)
			}
		})
	}
}

// relay.message_sent describes every block of a message, up to the cap,
// and takes a front end's own record (ACP's) when given one.
func TestMessageSentRecordsBlocks(t *testing.T) {
	img := base64.StdEncoding.EncodeToString(tinyPNG(t))
	images := make([]content.Block, 100)
	for i := range images {
		images[i] = content.Block{Type: "image", Data: img}
	}
	texts := make([]content.Block, 300)
	for i := range texts {
		texts[i] = content.Block{Type: "text", Text: "x"}
	}
	acp := wire.RecordPrompt("see @/w/main.go", []wire.PromptBlock{{Type: "text", Size: 4}, {Type: wire.BlockResourceLink, Name: "main.go", Path: "file:///w/main.go"}})
	for _, tc := range []struct {
		name  string
		m     Message
		check func(t *testing.T, got wire.MessageSent)
	}{
		{name: "100 images: each described", m: Message{Content: images}, check: func(t *testing.T, got wire.MessageSent) {
			if len(got.Blocks) != 100 || got.BlocksTruncated || got.Prompt != "" {
				t.Fatalf("%d blocks (truncated %v), prompt %q; want 100 images and no text", len(got.Blocks), got.BlocksTruncated, got.Prompt)
			}
			for _, b := range got.Blocks {
				if b.Type != "image" || b.MediaType != "image/png" || b.SHA256 == "" || b.Size == 0 {
					t.Fatalf("block %+v, want a described PNG", b)
				}
			}
		}},
		{name: "300 text blocks: the first 256, marked", m: Message{Content: texts}, check: func(t *testing.T, got wire.MessageSent) {
			if len(got.Blocks) != wire.MaxPromptBlocks || !got.BlocksTruncated || got.BlocksTotal != 300 {
				t.Errorf("%d blocks, truncated %v, total %d; want %d, true, 300", len(got.Blocks), got.BlocksTruncated, got.BlocksTotal, wire.MaxPromptBlocks)
			}
			if want := strings.TrimSuffix(strings.Repeat("x\n\n", 300), "\n\n"); got.Prompt != want {
				t.Errorf("prompt %q, want every text block joined", got.Prompt)
			}
		}},
		{name: "a front end's record", m: Message{Content: []content.Block{{Type: "text", Text: "see "}, {Type: "text", Text: "@/w/main.go"}}, Record: &acp},
			check: func(t *testing.T, got wire.MessageSent) {
				if got.PromptRecord.Prompt != acp.Prompt || mustMarshal(t, got.Blocks) != mustMarshal(t, acp.Blocks) {
					t.Errorf("recorded %+v, want the given record %+v", got.PromptRecord, acp)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spool := newSeqSpool(t)
			c := New(Options{Executor: newLiveExec(), Spool: spool, DefaultCwd: t.TempDir()})
			defer c.Close()
			sink := newTurnSink()
			if _, err := c.Start(Request{RunOptions: executor.RunOptions{KeepAlive: true}, RunID: "r", SessionID: "s", Idle: true}, sink); err != nil {
				t.Fatal(err)
			}
			if err := c.Send("", "r", "i2", tc.m); err != nil {
				t.Fatal(err)
			}
			sink.turn(t)
			sent := spool.ofType(wire.TypeMessageSent)
			if len(sent) != 1 {
				t.Fatalf("%d relay.message_sent, want 1", len(sent))
			}
			var got wire.MessageSent
			if err := json.Unmarshal(sent[0].Data, &got); err != nil {
				t.Fatal(err)
			}
			if got.V != wire.VMessageSent {
				t.Errorf("v = %d, want %d", got.V, wire.VMessageSent)
			}
			tc.check(t, got)
		})
	}
}
