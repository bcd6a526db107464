package acp_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/backend"
	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// TestACPPromptsStored drives `claude-relay acp` with the official ACP
// client through the prompts an editor sends (text around a resource link
// and an embedded resource, an image alone, a follow-up) and reads what a
// real backend stored (issue 23): each prompt's text in relay.message_sent,
// every block described, the session titled by the first prompt, and the
// idle start at session/new with no prompt of its own.
func TestACPPromptsStored(t *testing.T) {
	se := newScenarioEnv(t, func(string) mockapi.Script {
		return mockapi.Script{mockapi.TextTurn("It races."), mockapi.TextTurn("A gradient."), mockapi.TextTurn("Done.")}
	})
	agent := relayAgent(t, testRace())
	st := memstore.New()
	const token = "prompts-e2e-token-0123456789"
	be := backend.New(backend.Options{Store: st, Tokens: func() []config.Secret { return []config.Secret{token} }})
	srv := httptest.NewServer(be.Handler())
	t.Cleanup(func() {
		srv.Close()
		be.Shutdown(context.Background()) //nolint:errcheck // test teardown
		st.Close()
	})
	base := agent.env
	agent.env = func(cli *realcli.CLI) []string {
		return append(base(cli), "CLAUDE_RELAY_BACKEND_URL="+srv.URL, "CLAUDE_RELAY_BACKEND_TOKEN="+token)
	}
	if err := os.WriteFile(filepath.Join(se.cwd, "parser_test.go"), []byte("package parser\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	png := writePNG(t, filepath.Join(se.cwd, "shot.png"))
	tr := runClient(t, agent, "prompts", se, "--image", png, "--followup-prompt", "now add a regression test")
	if tr.err != nil {
		t.Fatalf("%v\nstderr (last 6 KB):\n%s\ntranscript:\n%s", tr.err, tail(tr.stderr, 6<<10), tr.tail(30))
	}
	var res struct {
		SessionID   string   `json:"session_id"`
		StopReasons []string `json:"stop_reasons"`
	}
	for _, ev := range tr.all("result") {
		_ = json.Unmarshal(ev.Raw, &res)
	}
	if res.SessionID == "" || strings.Join(res.StopReasons, ",") != "end_turn,end_turn,end_turn" {
		t.Fatalf("result %+v, want a session and three end_turn answers", res)
	}
	ctx := context.Background()
	var events []store.Event
	poll.Until(t, 20*time.Second, "the session's run end at the backend", func() bool {
		events, _ = st.Events(ctx, res.SessionID, 0, 1000)
		for _, e := range events {
			if store.LifecycleStatus(e.EventType) != "" && e.EventType != store.EventRunStarted {
				return true
			}
		}
		return false
	})

	first := "Explain why the parser test is flaky in @" + filepath.Join(se.cwd, "parser_test.go") + " and fix it\n\n@" +
		filepath.Join(se.cwd, "notes.md")
	var started []wire.RunStarted
	var sent []wire.MessageSent
	for _, e := range events {
		switch e.EventType {
		case wire.TypeRunStarted:
			var rs wire.RunStarted
			if err := json.Unmarshal(e.EventData, &rs); err != nil {
				t.Fatal(err)
			}
			started = append(started, rs)
		case wire.TypeMessageSent:
			var m wire.MessageSent
			if err := json.Unmarshal(e.EventData, &m); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, m)
		}
	}
	if len(started) != 1 || !started[0].Idle || !started[0].PromptRecord.Empty() || started[0].Mode != wire.ModeACP || started[0].V != wire.VRunStarted {
		t.Errorf("relay.run_started %+v, want one idle ACP start (v%d) without a prompt", started, wire.VRunStarted)
	}
	if len(sent) != 3 {
		t.Fatalf("%d relay.message_sent, want 3: %+v", len(sent), sent)
	}
	if sent[0].Prompt != first || len(sent[0].Blocks) != 4 || sent[0].Blocks[1].Type != wire.BlockResourceLink ||
		sent[0].Blocks[3].Type != wire.BlockResource || sent[0].Blocks[3].SHA256 != wire.SHA256([]byte("the flake shows under -race")) {
		t.Errorf("first prompt recorded as %q with %+v;\nwant %q, text, resource_link, text, resource with its digest", sent[0].Prompt, sent[0].Blocks, first)
	}
	img, err := os.ReadFile(png)
	if err != nil {
		t.Fatal(err)
	}
	if b := sent[1].Blocks; sent[1].Prompt != "" || len(b) != 1 || b[0].Type != wire.BlockImage || b[0].SHA256 != wire.SHA256(img) ||
		b[0].Size != int64(len(img)) || b[0].MediaType != "image/png" {
		t.Errorf("image prompt recorded as %q with %+v; want no text and the PNG described", sent[1].Prompt, sent[1].Blocks)
	}
	if sent[2].Prompt != "now add a regression test" {
		t.Errorf("follow-up recorded as %q", sent[2].Prompt)
	}
	sess, err := st.Session(ctx, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if want := store.TitleOf(first); sess.Title != want || sess.Source != store.SourceACP {
		t.Errorf("session title %q, source %q; want %q, acp", sess.Title, sess.Source, want)
	}
	list, err := st.Sessions(ctx, store.ListOptions{Query: "regression test"})
	if err != nil || len(list) != 1 || list[0].ID != res.SessionID {
		t.Errorf("search for the follow-up's words: %+v, %v; want the session", list, err)
	}
}
