//go:build unix

package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// fakeUsageCLI is the fake interactive CLI of the usage tests (helper role
// "fakeusage"): one prompt, whose Stop hook arrives before the turn's last
// assistant line is written, then the summary line, and at exit the
// conversation's cost-state, as CLI 2.1.330 does. FAKE_COST is the total
// it writes (the conversation's, a resume's included).
func fakeUsageCLI(args []string) error {
	var settingsPath string
	for _, a := range args {
		if p, ok := strings.CutPrefix(a, "--settings="); ok {
			settingsPath = p
		}
	}
	b, err := os.ReadFile(settingsPath)
	if err != nil {
		return err
	}
	var settings fakeSettings
	if err := json.Unmarshal(b, &settings); err != nil {
		return err
	}
	tpath := os.Getenv(fakeTranscript)
	fire := func(event string, extra map[string]any) error {
		in := map[string]any{"session_id": conv, "transcript_path": tpath, "cwd": "/x", "hook_event_name": event}
		for k, v := range extra {
			in[k] = v
		}
		body, _ := json.Marshal(in)
		h := settings.Hooks[event][0].Hooks[0]
		if h.Type != "http" {
			return fmt.Errorf("%s: hook type %s, want http", event, h.Type)
		}
		resp, err := http.Post(h.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	appendT := func(lines ...string) error {
		f, err := os.OpenFile(tpath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
		return err
	}
	if err := os.MkdirAll(filepath.Dir(tpath), 0o700); err != nil {
		return err
	}
	if err := fire("UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": args[len(args)-1]}); err != nil {
		return err
	}
	if src := os.Getenv("FAKE_FORK_OF"); src != "" {
		// A fork's transcript starts with a copy of the forked one (its
		// cost-state lines left out), uuids kept.
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		var copied []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if !strings.Contains(l, `"cost-state"`) {
				copied = append(copied, strings.ReplaceAll(l, `"promptId":"p0"`, `"promptId":"p1"`))
			}
		}
		if err := appendT(copied...); err != nil {
			return err
		}
	}
	if err := appendT(promptLine("p1", args[len(args)-1]), assistantLine("a1", "msg_1", "req_1", opus, u1),
		assistantLine("a1b", "msg_1", "req_1", opus, u1)); err != nil {
		return err
	}
	// The Stop hook is answered before the turn's last line is on disk.
	if err := fire("Stop", map[string]any{"prompt_id": "p1", "stop_hook_active": false}); err != nil {
		return err
	}
	if err := appendT(assistantLine("a2", "msg_2", "req_2", haiku, u2), stopSummary()); err != nil {
		return err
	}
	var total float64
	fmt.Sscan(os.Getenv("FAKE_COST"), &total) //nolint:errcheck // 0 without
	if err := appendT(costStateLine(conv, 1795774862005, total, map[string]float64{opus: total * 0.75, haiku: total * 0.25})); err != nil {
		return err
	}
	return fire("SessionEnd", map[string]any{"reason": "prompt_input_exit"})
}

// The runner posts the turn once the transcript line that ends it is read,
// with every line before it: the Stop hook that came first posts nothing.
// The end event has the run's tokens and the CLI's cost; a resumed run's
// cost is what the CLI added to the totals it started from, and the lines
// the transcript held before are not counted.
func TestRunPostsTurnsAndCost(t *testing.T) {
	const forked = "c0ffee00-0000-4000-8000-00000000000f" // the conversation a fork copies
	for _, tc := range []struct {
		name               string
		resume, cont, fork bool
		total              float64
		wantCost           float64
	}{
		{"a new conversation", false, false, false, 0.5, 0.5},
		{"a resumed conversation", true, false, false, 0.75, 0.5},
		{"a continued conversation", false, true, false, 0.75, 0.5},
		{"a fork of a resumed conversation", true, false, true, 0.75, 0.5},
		{"a fork of a continued conversation", false, true, true, 0.75, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			transcript := filepath.Join(home, ".claude", "projects", "-x", conv+".jsonl")
			env := []string{"HOME=" + home, fakeTranscript + "=" + transcript, fmt.Sprint("FAKE_COST=", tc.total)}
			earlier := transcript // the transcript that held the conversation before
			if tc.fork {
				earlier = filepath.Join(filepath.Dir(transcript), forked+".jsonl")
				env = append(env, "FAKE_FORK_OF="+earlier)
			}
			o, ev, _ := fakeRun(t, "fakeusage", env...)
			o.Fork, o.Continue = tc.fork, tc.cont
			if tc.resume {
				o.Resume = filepath.Base(strings.TrimSuffix(earlier, ".jsonl"))
			}
			if tc.resume || tc.cont {
				if err := os.MkdirAll(filepath.Dir(transcript), 0o700); err != nil {
					t.Fatal(err)
				}
				session := filepath.Base(strings.TrimSuffix(earlier, ".jsonl"))
				before := strings.Join([]string{promptLine("p0", "earlier"), assistantLine("a0", "msg_0", "req_0", opus, u3),
					stopSummary(), costStateLine(session, 1795774862005, 0.25, map[string]float64{opus: 0.1875, haiku: 0.0625})}, "\n") + "\n"
				if err := os.WriteFile(earlier, []byte(before), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			evs := ev.all()
			var turnAt, lastLineAt int
			var turns []wire.TurnCompleted
			var end wire.RunEnded
			for i, e := range evs {
				switch {
				case e.Type == wire.TypeTurnCompleted:
					var tc wire.TurnCompleted
					if err := json.Unmarshal(e.Data, &tc); err != nil {
						t.Fatal(err)
					}
					turns, turnAt = append(turns, tc), i
				case e.Type == "transcript.assistant" && strings.Contains(string(e.Data), `"uuid":"a2"`):
					lastLineAt = i
				case e.Type == wire.TypeRunCompleted:
					if err := json.Unmarshal(e.Data, &end); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := wire.TurnCompleted{RunID: o.RunID, Turn: 1, Mode: wire.ModeTerminal, Status: wire.StatusCompleted, ConversationID: conv}
			if len(turns) != 1 || turnAt < lastLineAt {
				t.Fatalf("turns %+v at event %d, the turn's last line at %d: want one turn, after it", turns, turnAt, lastLineAt)
			}
			got := turns[0]
			if got.RunID != want.RunID || got.Turn != 1 || got.Mode != want.Mode || got.Status != want.Status ||
				got.ConversationID != conv || got.Usage == nil || *got.Usage != u1.Add(u2) ||
				!modelsEqual(got.Models, map[string]wire.Usage{opus: u1, haiku: u2}) {
				t.Errorf("turn %+v (usage %+v, models %+v); want one completed turn of %+v, opus %+v, haiku %+v",
					got, got.Usage, got.Models, u1.Add(u2), u1, u2)
			}
			if end.Usage == nil || *end.Usage != u1.Add(u2) || end.TotalCostUSD == nil || !near(*end.TotalCostUSD, tc.wantCost) ||
				end.Models[opus].CostUSD == nil || !near(*end.Models[opus].CostUSD, tc.wantCost*0.75) ||
				end.Models[haiku].CostUSD == nil || !near(*end.Models[haiku].CostUSD, tc.wantCost*0.25) {
				t.Errorf("end %+v (usage %+v, cost %v, models %+v); want usage %+v and $%v, three quarters opus",
					end, end.Usage, end.TotalCostUSD, end.Models, u1.Add(u2), tc.wantCost)
			}
			if i := slices.IndexFunc(evs, func(e forwarder.Event) bool { return strings.Contains(string(e.Data), `"uuid":"a0"`) }); i >= 0 && !tc.fork {
				t.Errorf("the line from before the run was forwarded again: %s", evs[i].Data)
			}
		})
	}
}

func modelsEqual(got map[string]wire.ModelUsage, want map[string]wire.Usage) bool {
	if len(got) != len(want) {
		return false
	}
	for m, u := range want {
		if got[m].Usage != u || got[m].CostUSD != nil {
			return false
		}
	}
	return true
}
