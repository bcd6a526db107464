package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/extension"
	"github.com/claude-relay/claude-relay/internal/content"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// End-to-end tests of live runs (CONTRACT §7, protocol 2): `claude-relay
// extension` as a subprocess, the real CLI against the scripted Messages
// API, and the backend read through its HTTP API.

// liveHelper starts the helper with the real CLI against a scripted API in
// a fresh trusted directory, and waits for ready.
func liveHelper(t *testing.T, script mockapi.Script) (*extProc, *realcli.CLI, *mockapi.Server, string, extension.Event) {
	t.Helper()
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, script)
	cwd := trustedDir(t, cli)
	p := startExtension(t, cwd, helperEnv(t, cli, api))
	ready := p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	if ready.Protocol != 2 {
		t.Fatalf("ready says protocol %d, want 2 (live runs)", ready.Protocol)
	}
	return p, cli, api, cwd, ready
}

// startLive sends a keep_alive prompt whose first turn is the interaction
// inter.
func (p *extProc) startLive(runID, session, inter, prompt string, o extension.PromptOptions) {
	p.t.Helper()
	o.KeepAlive = true
	if o.MaxTurns == 0 {
		o.MaxTurns = 4
	}
	p.send(extension.Command{Action: extension.ActionPrompt, RequestID: "req-" + runID, RunID: runID, SessionID: session,
		InteractionID: inter, Prompt: &prompt, Options: o})
}

// sendTurn sends a follow-up into a live run as the interaction inter.
func (p *extProc) sendTurn(requestID, runID, inter, prompt string, blocks ...content.Block) {
	p.t.Helper()
	p.send(extension.Command{Action: extension.ActionSend, RequestID: requestID, RunID: runID, InteractionID: inter,
		Prompt: &prompt, Content: blocks})
}

// waitTurn returns turn n's turn_completed.
func (p *extProc) waitTurn(runID string, n int) extension.Event {
	p.t.Helper()
	return p.waitFor(fmt.Sprintf("turn_completed %d of %s", n, runID), func(ev extension.Event) bool {
		return ev.Event == extension.EventTurnCompleted && ev.RunID == runID && ev.Turn == n
	})
}

// waitError returns the error event answering requestID.
func (p *extProc) waitError(requestID string) extension.Event {
	p.t.Helper()
	return p.waitFor("an error for "+requestID, func(ev extension.Event) bool {
		return ev.Event == extension.EventError && ev.RequestID == requestID
	})
}

// all returns every event so far that matches.
func (p *extProc) all(match func(extension.Event) bool) []extension.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []extension.Event
	for _, ev := range p.events {
		if match(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// noErrors fails the test for any error event answering one of requestIDs.
func (p *extProc) noErrors(requestIDs ...string) {
	p.t.Helper()
	for _, ev := range p.all(func(ev extension.Event) bool {
		return ev.Event == extension.EventError && slices.Contains(requestIDs, ev.RequestID)
	}) {
		p.t.Errorf("error for a valid request %s: %s: %s", ev.RequestID, ev.Code, ev.Message)
	}
}

// waitStreamAfter waits for a stream event of runID whose payload has type
// typ, printed after the first n events.
func (p *extProc) waitStreamAfter(n int, runID, typ string) extension.Event {
	p.t.Helper()
	i := 0
	return p.waitFor("a "+typ+" line of "+runID, func(ev extension.Event) bool {
		i++
		return i > n && ev.Event == extension.EventStream && ev.RunID == runID && payloadType(ev.Payload) == typ
	})
}

func (p *extProc) eventCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.events)
}

func payloadType(b []byte) string {
	var m struct {
		Type string `json:"type"`
	}
	json.Unmarshal(b, &m) //nolint:errcheck // "" for anything else
	return m.Type
}

// requestText is the text of a request's messages of role, one line each.
func requestText(r mockapi.Request, role string) string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, c := range m.Content {
			if m.Role == role && c.Text != "" {
				b.WriteString(c.Text + "\n")
			}
		}
	}
	return b.String()
}

// lastUserText is the text of a request's last user message. Messages of
// other roles may follow it: after set_model the CLI appends a "system"
// message naming the new model.
func lastUserText(r mockapi.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		switch r.Messages[i].Role {
		case "user":
			var parts []string
			for _, c := range r.Messages[i].Content {
				parts = append(parts, c.Text)
			}
			return strings.Join(parts, "\n")
		case "assistant":
			return ""
		}
	}
	return ""
}

// mainRequestWith waits for the first main-conversation request whose last
// user message holds text.
func mainRequestWith(t *testing.T, api *mockapi.Server, text string) mockapi.Request {
	t.Helper()
	var found mockapi.Request
	if !poll.Within(extTimeout, func() bool {
		for _, r := range api.MainRequests() {
			if strings.Contains(lastUserText(r), text) {
				found = r
				return true
			}
		}
		return false
	}) {
		var last []string
		if r, ok := api.LastMainRequest(); ok {
			for _, m := range r.Messages[max(len(r.Messages)-2, 0):] {
				b, _ := json.Marshal(m.Content)
				last = append(last, fmt.Sprintf("%s: %.300s", m.Role, b))
			}
		}
		t.Fatalf("no request to the scripted API ends with %q; the last one ends with:\n%s", text, strings.Join(last, "\n"))
	}
	return found
}

// checkLiveAtBackend checks a live run against the backend: every stream
// payload the helper printed is there exactly once and in order; each turn
// is its own interaction (inters[i] holds turn i+1) numbered from seq 1
// without gaps; run_started opens the first, each interaction holds its
// turn's relay.turn_completed, and the run's end comes last; partial
// messages never got there. It returns the backend's events in arrival
// order.
func checkLiveAtBackend(t *testing.T, be backendAPI, p *extProc, runID, session string, end extension.Event, inters []string) []store.Event {
	t.Helper()
	evs := be.waitForEnd(t, session)
	streams := p.streams(runID)
	ids := map[string]bool{}
	for _, e := range evs {
		if ids[e.EventID] {
			t.Errorf("event_id %s stored twice", e.EventID)
		}
		ids[e.EventID] = true
	}
	slices.SortFunc(evs, func(a, b store.Event) int { return int(a.Cursor - b.Cursor) })
	seqs := map[string]int64{}
	var agent []store.Event
	for _, e := range evs {
		if !slices.Contains(inters, e.InteractionID) {
			t.Fatalf("%s event in interaction %q, not one of the turns' %q", e.EventType, e.InteractionID, inters)
		}
		seqs[e.InteractionID]++
		if e.Seq != seqs[e.InteractionID] {
			t.Fatalf("interaction %s: seq %d arrived as number %d (gaps, duplicates or disorder)", e.InteractionID, e.Seq, seqs[e.InteractionID])
		}
		if e.EventType == "stream_event" {
			t.Errorf("a partial message reached the backend: %.200s", e.EventData)
		}
		if e.Source == "agent" {
			agent = append(agent, e)
		}
	}
	if len(seqs) != len(inters) {
		t.Errorf("the backend has %d interactions, want one per turn (%d)", len(seqs), len(inters))
	}
	if len(agent) != len(streams) {
		t.Fatalf("%d CLI events at the backend, the helper printed %d stream events", len(agent), len(streams))
	}
	for i := range agent {
		if !jsonEqual(agent[i].EventData, streams[i]) {
			t.Fatalf("event %d differs:\nbackend %.300s\nhelper  %.300s", i, agent[i].EventData, streams[i])
		}
	}
	first, last := evs[0], evs[len(evs)-1]
	if first.EventType != "relay.run_started" || first.InteractionID != inters[0] {
		t.Errorf("first event %s in %s, want relay.run_started in %s", first.EventType, first.InteractionID, inters[0])
	}
	if last.EventType != "relay."+end.Event || last.InteractionID != inters[len(inters)-1] {
		t.Errorf("last event %s in %s, want relay.%s in %s", last.EventType, last.InteractionID, end.Event, inters[len(inters)-1])
	}
	for i, inter := range inters {
		var turns []int
		for _, e := range evs {
			if e.InteractionID == inter && e.EventType == "relay.turn_completed" {
				var tc struct {
					Turn int `json:"turn"`
				}
				json.Unmarshal(e.EventData, &tc) //nolint:errcheck // checked below
				turns = append(turns, tc.Turn)
			}
		}
		if !slices.Equal(turns, []int{i + 1}) {
			t.Errorf("interaction %s holds turn_completed for turns %v, want [%d]", inter, turns, i+1)
		}
	}
	var sess store.Session
	if code := be.get(t, "/api/sessions/"+session, &sess); code != http.StatusOK {
		t.Fatalf("GET session %s: HTTP %d", session, code)
	}
	if sess.EventCount != int64(len(evs)) || sess.InteractionCount != int64(len(inters)) {
		t.Errorf("session counts %d events, %d interactions; want %d, %d", sess.EventCount, sess.InteractionCount, len(evs), len(inters))
	}
	if end.ConversationID == "" || sess.ExternalConversationID != end.ConversationID {
		t.Errorf("conversation: backend %q, run end %q", sess.ExternalConversationID, end.ConversationID)
	}
	t.Logf("%s: %d events at the backend, %d of them CLI lines, in %d interactions", session, len(evs), len(agent), len(seqs))
	return evs
}

// assistantTexts are the texts of the assistant messages among evs.
func assistantTexts(evs []store.Event, inter string) []string {
	var out []string
	for _, e := range evs {
		if e.EventType != "assistant" || (inter != "" && e.InteractionID != inter) {
			continue
		}
		var m struct {
			Message struct {
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"message"`
		}
		json.Unmarshal(e.EventData, &m) //nolint:errcheck // not an assistant message then
		for _, c := range m.Message.Content {
			if c.Type == "text" {
				out = append(out, c.Text)
			}
		}
	}
	return out
}

// A live run takes follow-ups: each runs as the next turn of the same
// conversation with the whole history, one queued behind a running turn
// runs after it, in order, and end closes the run with every turn summed.
func TestLiveKeepAlive(t *testing.T) {
	t.Parallel()
	slow := strings.TrimSpace(strings.Repeat("two, slowly streamed; ", 5))
	turnUsage := []mockapi.Usage{{InputTokens: 11, OutputTokens: 3}, {InputTokens: 13, OutputTokens: 7}, {InputTokens: 17, OutputTokens: 9}}
	p, cli, api, cwd, ready := liveHelper(t, mockapi.Script{
		{Blocks: []mockapi.Block{mockapi.Text("one")}, Usage: turnUsage[0]},
		// Slow enough that the third message arrives while it runs.
		{Blocks: []mockapi.Block{mockapi.Text(slow)}, Usage: turnUsage[1], DeltaDelay: 300 * time.Millisecond},
		{Blocks: []mockapi.Block{mockapi.Text("three")}, Usage: turnUsage[2]},
	})
	runID, session := "keep-"+uuid.NewString(), "sess-keep"
	inters := []string{"inter-first", "inter-second", "inter-third"}
	p.startLive(runID, session, inters[0], "first prompt alpha", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd}})
	first := p.waitTurn(runID, 1)
	if first.Result == nil || first.Result.Stdout != "one" || first.InteractionID != inters[0] {
		t.Fatalf("turn 1: %+v in %s", first.Result, first.InteractionID)
	}
	// The run waits for the next message, still live.
	p.send(extension.Command{Action: extension.ActionStatus, RequestID: "between"})
	st := p.waitFor("status", func(ev extension.Event) bool { return ev.Event == extension.EventStatus && ev.RequestID == "between" })
	if len(st.Runs) != 1 || st.Runs[0].RunID != runID {
		t.Fatalf("between turns, live runs %+v", st.Runs)
	}

	p.sendTurn("second", runID, inters[1], "second prompt beta")
	// Turn 2 runs at the CLI now: the third message waits behind it.
	second := mainRequestWith(t, api, "second prompt beta")
	p.sendTurn("third", runID, inters[2], "third prompt gamma")
	p.send(extension.Command{Action: extension.ActionEnd, RequestID: "end", RunID: runID})
	end := p.waitEnd(runID)
	if end.Event != extension.EventRunCompleted || end.Result.ExitCode != 0 {
		t.Fatalf("run end: %s %+v", end.Event, end.Result)
	}
	p.noErrors("req-"+runID, "second", "third", "end")

	turns := p.all(func(ev extension.Event) bool { return ev.Event == extension.EventTurnCompleted && ev.RunID == runID })
	if len(turns) != 3 {
		t.Fatalf("%d turn_completed events, want 3", len(turns))
	}
	var usage extension.Usage
	var cost float64
	for i, want := range []string{"one", slow, "three"} {
		tc := turns[i]
		if tc.Turn != i+1 || tc.InteractionID != inters[i] || tc.Result.Stdout != want || tc.Result.ExitCode != 0 ||
			tc.ConversationID != end.ConversationID || tc.Usage == nil || tc.TotalCostUSD == nil || *tc.TotalCostUSD <= 0 {
			t.Fatalf("turn_completed %d: turn %d in %s, %+v, conversation %q, usage %+v", i+1, tc.Turn, tc.InteractionID, tc.Result, tc.ConversationID, tc.Usage)
		}
		if tc.Usage.InputTokens != int64(turnUsage[i].InputTokens) || tc.Usage.OutputTokens != int64(turnUsage[i].OutputTokens) {
			t.Errorf("turn %d usage %+v, the API reported %+v", i+1, *tc.Usage, turnUsage[i])
		}
		usage = usage.Add(*tc.Usage)
		cost += *tc.TotalCostUSD
	}
	if end.Usage == nil || *end.Usage != usage {
		t.Errorf("run_completed usage %+v, the turns sum to %+v", end.Usage, usage)
	}
	if end.TotalCostUSD == nil || math.Abs(*end.TotalCostUSD-cost) > 1e-9 {
		t.Errorf("run_completed total_cost_usd %v, the turns sum to %v", end.TotalCostUSD, cost)
	}
	if want := "one\n" + slow + "\nthree"; end.Result.Stdout != want {
		t.Errorf("run_completed stdout %q, want %q", end.Result.Stdout, want)
	}

	// Each turn reached the API with the whole history, in order; the
	// queued message waited for the turn before it.
	if u, a := requestText(second, "user"), requestText(second, "assistant"); !strings.Contains(u, "first prompt alpha") ||
		!strings.Contains(a, "one") || strings.Contains(u, "third prompt gamma") {
		t.Errorf("turn 2's request: user %q, assistant %q; want the first exchange and not the queued message", u, a)
	}
	third := mainRequestWith(t, api, "third prompt gamma")
	if u, a := requestText(third, "user"), requestText(third, "assistant"); !strings.Contains(u, "second prompt beta") || !strings.Contains(a, slow) {
		t.Errorf("turn 3's request: user %q, assistant %q; want turn 2 whole before it", u, a)
	}

	evs := checkLiveAtBackend(t, dataDirBackend(t, cli.Home, ready.Backend), p, runID, session, end, inters)
	for i, want := range []string{"one", slow, "three"} {
		if got := assistantTexts(evs, inters[i]); !slices.Equal(got, []string{want}) {
			t.Errorf("interaction %s: assistant texts %q, want [%q]", inters[i], got, want)
		}
	}
	p.shutdownOK()
}

// interrupt stops the running turn (and its tool) and keeps the run for the
// next send; cancel still stops the whole run, tools and all.
func TestLiveInterrupt(t *testing.T) {
	t.Parallel()
	p, cli, _, cwd, ready := liveHelper(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 3181", "description": "Wait a long time"}),
		mockapi.TextTurn("after the interrupt"),
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo again && sleep 3182", "description": "Wait again"}),
		mockapi.TextTurn("never"),
	})
	runID, session := "interrupt-"+uuid.NewString(), "sess-interrupt"
	p.startLive(runID, session, "i1", "wait", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd}})
	waitSleeping(t, p, runID, "3181")
	p.send(extension.Command{Action: extension.ActionInterrupt, RequestID: "stop-turn", RunID: runID})
	first := p.waitTurn(runID, 1)
	t.Logf("interrupted turn: %+v", first.Result)
	var left []string
	if !poll.Within(extTimeout, func() bool {
		left = runProcesses(runID)
		return !slices.ContainsFunc(left, func(c string) bool { return strings.Contains(c, "sleep 3181") })
	}) {
		t.Fatalf("the interrupted tool still runs: %q", left)
	}
	if len(left) == 0 {
		t.Fatal("the interrupt ended the whole run: no CLI left")
	}
	if n := p.count(func(ev extension.Event) bool {
		return ev.RunID == runID && (ev.Event == extension.EventRunCompleted || ev.Event == extension.EventRunFailed || ev.Event == extension.EventRunCancelled)
	}); n != 0 {
		t.Fatalf("the interrupt ended the run")
	}

	p.sendTurn("go-on", runID, "i2", "go on")
	if second := p.waitTurn(runID, 2); second.Result.Stdout != "after the interrupt" || second.Result.ExitCode != 0 {
		t.Errorf("turn after the interrupt: %+v", second.Result)
	}
	p.sendTurn("again", runID, "i3", "wait again")
	waitSleeping(t, p, runID, "3182")
	cancelled := time.Now()
	p.send(extension.Command{Action: extension.ActionCancel, RequestID: "cancel", RunID: runID})
	end := p.waitEnd(runID)
	if end.Event != extension.EventRunCancelled || end.Result.ExitCode != 130 {
		t.Errorf("cancelled live run: %s %+v", end.Event, end.Result)
	}
	waitGone(t, runID, cancelled)
	p.noErrors("req-"+runID, "stop-turn", "go-on", "again", "cancel")
	checkLiveAtBackend(t, dataDirBackend(t, cli.Home, ready.Backend), p, runID, session, end, []string{"i1", "i2", "i3"})
	p.shutdownOK()
}

// set_mode plan stops the next turn's writes; set_model changes the model
// of the next request.
func TestLiveSetModeAndModel(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	out := filepath.Join(cwd, "planned.txt")
	api := mockapi.New(t, mockapi.Script{
		mockapi.TextTurn("ready"),
		mockapi.ToolTurn("Write", map[string]any{"file_path": out, "content": "planned\n"}),
		mockapi.TextTurn("planned only"),
		mockapi.TextTurn("on another model"),
	})
	p := startExtension(t, cwd, helperEnv(t, cli, api))
	ready := p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	runID, session := "modes-"+uuid.NewString(), "sess-modes"
	p.startLive(runID, session, "m1", "hello", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd}})
	p.waitTurn(runID, 1)

	p.send(extension.Command{Action: extension.ActionSetMode, RequestID: "plan", RunID: runID, PermissionMode: "plan"})
	changed := p.waitEvent(extension.EventModeChanged, runID)
	if changed.PermissionMode != "plan" {
		t.Fatalf("mode_changed %q, want plan", changed.PermissionMode)
	}
	p.sendTurn("write", runID, "m2", "write the file")
	if second := p.waitTurn(runID, 2); second.Result.Stdout != "planned only" {
		t.Errorf("turn 2 in plan mode: %+v", second.Result)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("plan mode let the Write through: %v", err)
	}
	var denied bool
	for _, tr := range api.ToolResults() {
		denied = denied || (tr.IsError && strings.Contains(tr.Content, "Plan mode"))
	}
	if !denied {
		t.Errorf("the model was not told why it could not write: %+v", api.ToolResults())
	}

	before, _ := api.LastMainRequest()
	model := "x-model"
	n := p.eventCount()
	p.send(extension.Command{Action: extension.ActionSetModel, RequestID: "model", RunID: runID, Model: &model})
	// Nothing else talks to the idle CLI: the next control_response is the
	// answer to set_model.
	p.waitStreamAfter(n, runID, "control_response")
	p.sendTurn("third", runID, "m3", "which model?")
	if third := p.waitTurn(runID, 3); third.Result.Stdout != "on another model" {
		t.Errorf("turn 3: %+v", third.Result)
	}
	after := mainRequestWith(t, api, "which model?")
	if before.Model == model || after.Model != model {
		t.Errorf("model before set_model %q, after %q; want %q only after", before.Model, after.Model, model)
	}
	p.send(extension.Command{Action: extension.ActionEnd, RequestID: "end", RunID: runID})
	end := p.waitEnd(runID)
	if end.Event != extension.EventRunCompleted {
		t.Errorf("run end %s %+v", end.Event, end.Result)
	}
	p.noErrors("req-"+runID, "plan", "write", "model", "third", "end")
	evs := checkLiveAtBackend(t, dataDirBackend(t, cli.Home, ready.Backend), p, runID, session, end, []string{"m1", "m2", "m3"})
	var modes []string
	for _, e := range evs {
		if e.EventType == "relay.mode_changed" {
			var mc struct {
				PermissionMode string `json:"permission_mode"`
			}
			json.Unmarshal(e.EventData, &mc) //nolint:errcheck // an empty mode fails below
			modes = append(modes, mc.PermissionMode)
		}
	}
	if !slices.Equal(modes, []string{"plan"}) {
		t.Errorf("mode changes at the backend %q, want [plan]", modes)
	}
	p.shutdownOK()
}

// Every run, live or not, tells its CLI's commands and models once.
func TestLiveSessionInfo(t *testing.T) {
	t.Parallel()
	p, _, _, cwd, _ := liveHelper(t, mockapi.Script{mockapi.TextTurn("a"), mockapi.TextTurn("b")})
	live, once := "info-live-"+uuid.NewString(), "info-once-"+uuid.NewString()
	p.startLive(live, "sess-info-live", "", "hello", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd}})
	p.prompt(once, "sess-info-once", "hello", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, MaxTurns: 2}})
	p.waitTurn(live, 1)
	p.sendTurn("more", live, "", "more")
	p.waitTurn(live, 2)
	p.send(extension.Command{Action: extension.ActionEnd, RequestID: "end", RunID: live})
	for _, id := range []string{live, once} {
		if end := p.waitEnd(id); end.Event != extension.EventRunCompleted {
			t.Errorf("%s: %s %+v", id, end.Event, end.Result)
		}
		infos := p.all(func(ev extension.Event) bool { return ev.Event == extension.EventSessionInfo && ev.RunID == id })
		if len(infos) != 1 {
			t.Errorf("%s: %d session_info events, want 1", id, len(infos))
			continue
		}
		var commands, models []json.RawMessage
		if json.Unmarshal(infos[0].Commands, &commands) != nil || len(commands) == 0 ||
			json.Unmarshal(infos[0].Models, &models) != nil || len(models) == 0 {
			t.Errorf("%s: session_info commands %.200s, models %.200s; want both non-empty lists", id, infos[0].Commands, infos[0].Models)
		}
		if infos[0].SessionID == "" {
			t.Errorf("%s: session_info without the session", id)
		}
	}
	p.noErrors("req-"+live, "req-"+once, "more", "end")
	p.shutdownOK()
}

// Partial messages are live only: the helper prints them, the backend never
// sees them, and the complete message reaches it once.
func TestLivePartialMessages(t *testing.T) {
	t.Parallel()
	answer := "a partial answer, long enough to arrive in several pieces"
	p, cli, _, cwd, ready := liveHelper(t, mockapi.Script{mockapi.TextTurn(answer)})
	runID, session := "partial-"+uuid.NewString(), "sess-partial"
	p.prompt(runID, session, "stream it", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd, MaxTurns: 2, PartialMessages: true}})
	end := p.waitEnd(runID)
	if end.Event != extension.EventRunCompleted || end.Result.Stdout != answer {
		t.Fatalf("run end: %s %+v", end.Event, end.Result)
	}
	partials := p.all(func(ev extension.Event) bool { return ev.Event == extension.EventPartial && ev.RunID == runID })
	var text strings.Builder
	for _, ev := range partials {
		var se struct {
			Type  string `json:"type"`
			Event struct {
				Type  string `json:"type"`
				Delta struct {
					Type, Text string
				} `json:"delta"`
			} `json:"event"`
		}
		if err := json.Unmarshal(ev.Payload, &se); err != nil || se.Type != "stream_event" {
			t.Errorf("partial payload is not a stream_event line: %.200s", ev.Payload)
		}
		if se.Event.Type == "content_block_delta" && se.Event.Delta.Type == "text_delta" {
			text.WriteString(se.Event.Delta.Text)
		}
	}
	if text.String() != answer {
		t.Errorf("%d partial events, their text deltas make %q, want %q", len(partials), text.String(), answer)
	}
	for _, s := range p.streams(runID) {
		if payloadType(s) == "stream_event" {
			t.Errorf("a partial message came as a stream event: %.200s", s)
		}
	}
	be := dataDirBackend(t, cli.Home, ready.Backend)
	checkAtBackend(t, be, p, runID, session, end)
	evs := be.events(t, session)
	for _, e := range evs {
		if e.EventType == "stream_event" {
			t.Errorf("a partial message reached the backend: %.200s", e.EventData)
		}
	}
	if got := assistantTexts(evs, ""); !slices.Equal(got, []string{answer}) {
		t.Errorf("assistant texts at the backend %q, want the answer once", got)
	}
	p.shutdownOK()
}

// pngOf encodes a small w×h PNG in one colour.
func pngOf(t *testing.T, w, h int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Images, inline in the prompt and by path in a follow-up, reach the API as
// image blocks with exactly their bytes.
func TestLiveContentImages(t *testing.T) {
	t.Parallel()
	p, _, api, cwd, _ := liveHelper(t, mockapi.Script{mockapi.TextTurn("a red square"), mockapi.TextTurn("a blue one")})
	inline := pngOf(t, 4, 3, color.RGBA{R: 255, A: 255})
	byPath := pngOf(t, 5, 2, color.RGBA{B: 255, A: 255})
	path := filepath.Join(t.TempDir(), "blue.png")
	if err := os.WriteFile(path, byPath, 0o600); err != nil {
		t.Fatal(err)
	}
	runID := "images-" + uuid.NewString()
	p.startLive(runID, "sess-images", "", "what is this?", extension.PromptOptions{
		RunOptions: executor.RunOptions{
			Cwd: cwd,
		},
		Content: []content.Block{{Type: "image", MediaType: "image/png", Data: base64.StdEncoding.EncodeToString(inline)}},
	})
	p.waitTurn(runID, 1)
	p.sendTurn("look", runID, "", "and this?", content.Block{Type: "image", Path: path})
	p.waitTurn(runID, 2)
	p.send(extension.Command{Action: extension.ActionEnd, RequestID: "end", RunID: runID})
	if end := p.waitEnd(runID); end.Event != extension.EventRunCompleted {
		t.Errorf("run end %s %+v", end.Event, end.Result)
	}
	p.noErrors("req-"+runID, "look", "end")

	req := mainRequestWith(t, api, "and this?")
	imgs, err := req.Images()
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 2 {
		t.Fatalf("the API got %d images, want 2: %+v", len(imgs), imgs)
	}
	for i, want := range [][]byte{inline, byPath} {
		if im := imgs[i]; im.Role != "user" || im.SourceType != "base64" || im.MediaType != "image/png" || !bytes.Equal(im.Data, want) {
			t.Errorf("image %d: %s %s %s, %d bytes; want the %d bytes sent, as image/png", i, im.Role, im.SourceType, im.MediaType, len(im.Data), len(want))
		}
	}
	if imgs[0].Message >= imgs[1].Message {
		t.Errorf("the images are in messages %d and %d: the follow-up's should come later", imgs[0].Message, imgs[1].Message)
	}
	p.shutdownOK()
}

// A live run nobody writes to ends on its idle_timeout as a completion.
func TestLiveIdleTimeout(t *testing.T) {
	t.Parallel()
	p, _, _, cwd, _ := liveHelper(t, mockapi.Script{mockapi.TextTurn("and then silence")})
	runID := "idle-" + uuid.NewString()
	p.startLive(runID, "sess-idle", "", "hello", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd}, IdleTimeout: "2s"})
	p.waitTurn(runID, 1)
	end := p.waitEnd(runID)
	if end.Event != extension.EventRunCompleted || end.Result.ExitCode != 0 || end.Result.Stdout != "and then silence" {
		t.Errorf("idle run end: %s %+v", end.Event, end.Result)
	}
	waitGone(t, runID, time.Now())
	p.noErrors("req-" + runID)
	p.shutdownOK()
}

// Bad commands each get an error event naming their request, and neither
// the helper nor a live run minds.
func TestLiveBadInput(t *testing.T) {
	t.Parallel()
	cli := realcli.RealCLI(t)
	cwd := trustedDir(t, cli)
	api := mockapi.New(t, mockapi.Script{
		mockapi.TextTurn("first"),
		mockapi.TextTurn("still here"),
		// Slow: end and another send arrive while it runs.
		{Blocks: []mockapi.Block{mockapi.Text(strings.Repeat("slow last words; ", 6))}, DeltaDelay: 500 * time.Millisecond},
	})
	oneShotAPI := mockapi.New(t, mockapi.Script{
		mockapi.ToolTurn("Bash", map[string]any{"command": "echo start && sleep 3183", "description": "Wait a long time"}),
		mockapi.TextTurn("never"),
	})
	p := startExtension(t, cwd, helperEnv(t, cli, api))
	ready := p.waitFor("ready", func(ev extension.Event) bool { return ev.Event == extension.EventReady })
	live, oneShot, ended := "bad-live-"+uuid.NewString(), "bad-once-"+uuid.NewString(), "bad-ended-"+uuid.NewString()
	p.startLive(live, "sess-bad-live", "", "hello", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd}})
	p.prompt(oneShot, "sess-bad-once", "wait", extension.PromptOptions{
		RunOptions: executor.RunOptions{
			Cwd:      cwd,
			MaxTurns: 4,
			Env:      map[string]string{"ANTHROPIC_BASE_URL": oneShotAPI.URL()},
		},
	})
	p.startLive(ended, "sess-bad-ended", "", "hello", extension.PromptOptions{RunOptions: executor.RunOptions{Cwd: cwd}})
	p.waitTurn(live, 1)
	p.waitTurn(ended, 1)
	p.send(extension.Command{Action: extension.ActionEnd, RequestID: "end-ended", RunID: ended})
	p.waitEnd(ended)
	waitSleeping(t, p, oneShot, "3183")

	notImage := base64.StdEncoding.EncodeToString([]byte("hello, not a picture"))
	huge := filepath.Join(t.TempDir(), "huge.png")
	if err := os.WriteFile(huge, []byte("\x89PNG\r\n\x1a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 50<<20); err != nil { // sparse: 50 MiB on paper
		t.Fatal(err)
	}
	prompt := "look"
	cases := []struct {
		name string
		cmd  extension.Command
		code string
		says []string // what the message must name
	}{
		{"send to an unknown run", extension.Command{Action: extension.ActionSend, RunID: "no-such-run", Prompt: &prompt},
			extension.CodeUnknownRun, []string{"no-such-run"}},
		{"send to a run without keep_alive", extension.Command{Action: extension.ActionSend, RunID: oneShot, Prompt: &prompt},
			extension.CodeNotLive, []string{oneShot, "keep_alive"}},
		{"send to an ended run", extension.Command{Action: extension.ActionSend, RunID: ended, Prompt: &prompt},
			extension.CodeUnknownRun, []string{ended}},
		{"set_mode yolo", extension.Command{Action: extension.ActionSetMode, RunID: live, PermissionMode: "yolo"},
			extension.CodeBadValue, []string{`"yolo"`, "acceptEdits", "plan"}},
		{"send an image that is not one", extension.Command{Action: extension.ActionSend, RunID: live, Prompt: &prompt,
			Content: []content.Block{{Type: "image", Data: notImage}}},
			extension.CodeBadValue, []string{"content[0]", "not a PNG, JPEG, GIF or WebP"}},
		{"prompt with an image that is not one", extension.Command{Action: extension.ActionPrompt, RunID: "bad-image-run",
			SessionID: "sess-bad-image", Prompt: &prompt, Options: extension.PromptOptions{
				RunOptions: executor.RunOptions{
					Cwd: cwd,
				},
				Content: []content.Block{{Type: "image", Data: notImage}},
			}},
			extension.CodeBadValue, []string{"content[0]", "not a PNG, JPEG, GIF or WebP"}},
		{"prompt with a 50 MB image", extension.Command{Action: extension.ActionPrompt, RunID: "huge-image-run",
			SessionID: "sess-huge-image", Prompt: &prompt, Options: extension.PromptOptions{
				RunOptions: executor.RunOptions{
					Cwd: cwd,
				},
				Content: []content.Block{{Type: "image", Path: huge}},
			}},
			extension.CodeBadValue, []string{"content[0]", "50.0 MiB", "5 MiB limit"}},
		{"send without run_id", extension.Command{Action: extension.ActionSend, Prompt: &prompt},
			extension.CodeMissingField, []string{"run_id"}},
	}
	for i, c := range cases {
		c.cmd.RequestID = fmt.Sprintf("bad-%d", i)
		p.send(c.cmd)
		ev := p.waitError(c.cmd.RequestID)
		if ev.Code != c.code {
			t.Errorf("%s: code %q, want %q (%s)", c.name, ev.Code, c.code, ev.Message)
		}
		for _, s := range c.says {
			if !strings.Contains(ev.Message, s) {
				t.Errorf("%s: message %q does not say %q", c.name, ev.Message, s)
			}
		}
		t.Logf("%s: %s: %s", c.name, ev.Code, ev.Message)
	}
	be := dataDirBackend(t, cli.Home, ready.Backend)
	for _, id := range []string{"bad-image-run", "huge-image-run"} {
		if n := p.count(func(ev extension.Event) bool { return ev.RunID == id }); n != 0 {
			t.Errorf("run %s was refused, yet %d events name it", id, n)
		}
	}
	for _, session := range []string{"sess-bad-image", "sess-huge-image"} {
		var sess store.Session
		if code := be.get(t, "/api/sessions/"+session, &sess); code != http.StatusNotFound {
			t.Errorf("refused prompt: GET session %s: HTTP %d, want 404 (nothing spooled)", session, code)
		}
	}

	// The live run takes the next message. Ended while its last turn
	// runs, it takes no more: not_live, until it is gone.
	p.sendTurn("good", live, "", "are you there?")
	if second := p.waitTurn(live, 2); second.Result.Stdout != "still here" {
		t.Errorf("the live run after the bad commands: %+v", second.Result)
	}
	p.sendTurn("last", live, "", "say something slowly")
	mainRequestWith(t, api, "say something slowly")
	p.send(extension.Command{Action: extension.ActionEnd, RequestID: "end-live", RunID: live})
	p.sendTurn("too-late", live, "", "one more")
	if ev := p.waitError("too-late"); ev.Code != extension.CodeNotLive || !strings.Contains(ev.Message, live) {
		t.Errorf("send after end: %s %q, want not_live naming the run", ev.Code, ev.Message)
	}
	if end := p.waitEnd(live); end.Event != extension.EventRunCompleted {
		t.Errorf("live run end %s %+v", end.Event, end.Result)
	}
	if n := len(mainRequestsWith(api, "one more")); n != 0 {
		t.Errorf("the send after end reached the API")
	}
	p.send(extension.Command{Action: extension.ActionCancel, RequestID: "cancel-once", RunID: oneShot})
	if end := p.waitEnd(oneShot); end.Event != extension.EventRunCancelled {
		t.Errorf("one-shot run end %s", end.Event)
	}
	p.noErrors("req-"+live, "req-"+oneShot, "req-"+ended, "end-ended", "good", "last", "end-live", "cancel-once")
	p.shutdownOK()
}

// mainRequestsWith returns the main-conversation requests whose last user
// message holds text.
func mainRequestsWith(api *mockapi.Server, text string) []mockapi.Request {
	var out []mockapi.Request
	for _, r := range api.MainRequests() {
		if strings.Contains(lastUserText(r), text) {
			out = append(out, r)
		}
	}
	return out
}
