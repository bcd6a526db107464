package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// testStale: a running session with no event for store.StaleAfter is listed
// under StatusStale and no longer under StatusRunning; ended sessions never
// are, and a new event makes a stale session running again. The cutoff is
// exact (nanoseconds), judged at ListOptions.Now, with the other filters.
func testStale(t *testing.T, s store.Store) {
	mustAppend(t, s, ev("st-run", "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"prompt": "wait", "cwd": "/one"})))
	mustAppend(t, s, ev("st-done", "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"prompt": "done", "cwd": "/one"})),
		ev("st-done", "i1", 2, store.EventRunCompleted, 1, `{}`))
	mustAppend(t, s, ev("st-other", "i1", 1, store.EventRunStarted, 0, runStarted(map[string]any{"prompt": "other", "cwd": "/two"})))
	last := mustSession(t, s, "st-run").UpdatedAt
	// Every session was last updated by now: listed at this instant, all
	// three are stale or ended.
	later := mustSession(t, s, "st-other").UpdatedAt.Add(store.StaleAfter + time.Nanosecond)
	cases := []struct {
		name string
		opts store.ListOptions
		want []string
	}{
		{"fresh: running", store.ListOptions{Status: store.StatusRunning, Now: last}, []string{"st-other", "st-run"}},
		{"fresh: none stale", store.ListOptions{Status: store.StatusStale, Now: last}, []string{}},
		{"at the cutoff: still running", store.ListOptions{Status: store.StatusRunning, Now: last.Add(store.StaleAfter)}, []string{"st-other", "st-run"}},
		{"past the cutoff: stale", store.ListOptions{Status: store.StatusStale, Now: last.Add(store.StaleAfter + time.Nanosecond)}, []string{"st-run"}},
		{"later: all stale", store.ListOptions{Status: store.StatusStale, Now: later}, []string{"st-other", "st-run"}},
		{"later: none running", store.ListOptions{Status: store.StatusRunning, Now: later}, []string{}},
		{"later: ended stays ended", store.ListOptions{Status: store.StatusCompleted, Now: later}, []string{"st-done"}},
		{"later: with project", store.ListOptions{Status: store.StatusStale, Project: "/one", Now: later}, []string{"st-run"}},
		{"later: with query", store.ListOptions{Status: store.StatusStale, Query: "other", Now: later}, []string{"st-other"}},
		{"later: no filter lists all", store.ListOptions{Now: later}, []string{"st-other", "st-done", "st-run"}},
	}
	for _, tc := range cases {
		if got := listIDs(t, s, tc.opts); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Sessions = %q, want %q", tc.name, got, tc.want)
		}
	}

	// News: the stale run is running again (and ends up first).
	mustAppend(t, s, ev("st-run", "i1", 2, "assistant", 2, `{"type":"assistant"}`))
	now := mustSession(t, s, "st-run").UpdatedAt
	if got := listIDs(t, s, store.ListOptions{Status: store.StatusRunning, Now: now.Add(store.StaleAfter)}); !slices.Equal(got, []string{"st-run"}) {
		t.Errorf("after news: running = %q, want [st-run]", got)
	}
	if got := listIDs(t, s, store.ListOptions{Status: store.StatusStale, Now: now.Add(store.StaleAfter)}); !slices.Equal(got, []string{"st-other"}) {
		t.Errorf("after news: stale = %q, want [st-other]", got)
	}
	// The list's order and its statuses are as stored: staleness is the
	// API's to show (store.MarkStale).
	list, err := s.Sessions(context.Background(), store.ListOptions{Status: store.StatusStale, Now: later.Add(time.Hour)})
	if err != nil || len(list) != 2 {
		t.Fatalf("Sessions(stale) = %d sessions, %v; want 2", len(list), err)
	}
	for _, sess := range list {
		if sess.Status != store.StatusRunning || sess.Stale {
			t.Errorf("stale session %s listed with status %q, stale %v; want running, unmarked", sess.ID, sess.Status, sess.Stale)
		}
	}
}
