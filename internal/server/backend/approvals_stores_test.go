package backend

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/server/store/postgres"
	"github.com/claude-relay/claude-relay/internal/server/store/sqlite"
	"github.com/claude-relay/claude-relay/internal/testkit/pgtest"
	relaywire "github.com/claude-relay/claude-relay/internal/wire"
)

// TestDecisionsAcrossServersSQLite: two servers on one SQLite file, the
// helper's poll held by one, the decision made through the other; the
// poll answers with it, and only one server pushes.
//
//   - one store: both servers on the same *sqlite.Store (two listeners of
//     one process), so the store's notification wakes the poll (the
//     recheck is an hour here);
//   - two stores: each server opened the file itself, as serve and an
//     embedded default do. SQLite's Subscribe is in-process only, so the
//     recheck (defaultRecheck) is what finds the decision there.
func TestDecisionsAcrossServersSQLite(t *testing.T) {
	for _, tc := range []struct {
		name      string
		twoStores bool
		recheck   time.Duration
	}{
		{"one store", false, time.Hour},
		{"two stores", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "relay.db")
			open := func() store.Store {
				st, err := sqlite.Open(context.Background(), path)
				if err != nil {
					t.Fatalf("sqlite.Open: %v", err)
				}
				return st
			}
			stA := open()
			stB := stA
			if tc.twoStores {
				stB = open()
			} else {
				stB = unclosed{stA} // closed once, by a's cleanup
			}
			pushA, pushB := newFakePusher(), newFakePusher()
			a := &approvalEnv{env: newEnvWith(t, stA, replicaOptions(pushA, tc.recheck))}
			b := &approvalEnv{env: newEnvWith(t, stB, replicaOptions(pushB, tc.recheck))}
			a.request("a1", string(relaywire.ApprovalTool), "Bash", "ls")

			got := a.startPoll("a1")
			if code, out := b.decide("a1", map[string]any{"decision": "allow"}, bearer(phoneToken)); code != 200 {
				t.Fatalf("decide through b: %d %q", code, errorOf(out))
			}
			out := pollAnswer(t, got, "the poll on a to hear of the decision made through b")
			if len(out.Decisions) != 1 || out.Decisions[0].ApprovalID != "a1" || out.Decisions[0].By != "api:phone" ||
				out.Decisions[0].RunID != "r1" || out.Decisions[0].SessionID != "s1" {
				t.Errorf("poll on a got %+v", out)
			}
			// b stored no request, so only a pushed, once.
			if m := pushA.next(t); !strings.HasSuffix(m.Title, "Bash") {
				t.Errorf("push %+v", m)
			}
			if n := pushB.count(); n != 0 {
				t.Errorf("b pushed %d times", n)
			}
			// A second decision, through a, is a 409 naming the first.
			if code, out := a.decide("a1", map[string]any{"decision": "deny"}, bearer(adminToken)); code != 409 || errorOf(out) != "already decided by api (phone): allow" {
				t.Errorf("second decision: %d %q", code, errorOf(out))
			}
		})
	}
}

// replicaOptions are one of several servers on one store: the scoped
// tokens, nobody an agent, pushes to p, and recheck (0: the default).
func replicaOptions(p *fakePusher, recheck time.Duration) envOption {
	return func(o *Options) {
		o.ServeTokens = scopedTokens
		o.Peer = (&fakePeer{proc: unmarked}).lookup
		o.recheck = recheck
		o.pusher = p
	}
}

// unclosed is a store whose Close does nothing: the second server of one
// store must not close it under the first.
type unclosed struct{ store.Store }

func (unclosed) Close() error { return nil }

// TestDecisionsAcrossReplicasPostgres: two serve replicas on one
// PostgreSQL database; the helper polls replica B, the dashboard decides
// through replica A, and LISTEN/NOTIFY wakes B's poll (the recheck is an
// hour here). The request is pushed once, by the replica that stored it.
func TestDecisionsAcrossReplicasPostgres(t *testing.T) {
	srv, err := pgtest.Start(context.Background())
	if errors.Is(err, pgtest.ErrNoPostgres) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	url := srv.Database(t)
	open := func() store.Store {
		st, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatalf("postgres.Open: %v", err)
		}
		return st
	}
	pushA, pushB := newFakePusher(), newFakePusher()
	a := &approvalEnv{env: newEnvWith(t, open(), replicaOptions(pushA, time.Hour))}
	b := &approvalEnv{env: newEnvWith(t, open(), replicaOptions(pushB, time.Hour))}
	b.request("a1", string(relaywire.ApprovalTool), "Bash", "make deploy")

	got := b.startPoll("a1")
	if code, out := a.decide("a1", map[string]any{"decision": "deny", "reason": "not today"}, bearer(phoneToken)); code != 200 {
		t.Fatalf("decide through a: %d %q", code, errorOf(out))
	}
	out := pollAnswer(t, got, "the poll on replica b to hear of the decision made through replica a")
	if len(out.Decisions) != 1 || out.Decisions[0].Reason != "not today" || out.Decisions[0].RunID != "r1" {
		t.Errorf("poll on b got %+v", out)
	}
	if m := pushB.next(t); m.Body != "Bash" { // the tool, not the command: serve.notify_include_input is off
		t.Errorf("push %+v", m)
	}
	if n := pushA.count(); n != 0 {
		t.Errorf("replica a pushed %d times", n)
	}
}
