package budget

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestClientCheck(t *testing.T) {
	now := time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)
	answer := Response{Now: now, Budgets: []Status{
		StatusOf(Rule{Project: "*", Period: Day, USD: 5, WarnAt: 0.8}, 1, now),
		StatusOf(Rule{Project: "app", Period: Day, USD: 1, WarnAt: 0.8}, 1.2, now),
	}}
	var gotAuth string
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		if r.URL.Path != "/api/budgets" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(answer) //nolint:errcheck // the test reads what arrives
	}))
	defer srv.Close()
	c := NewClient(ClientOptions{URL: srv.URL + "/", Token: func() string { return "tok" }})

	g, err := c.Check(context.Background(), "/w/other")
	if err != nil || !g.Limited || g.RemainingUSD != 4 || gotAuth != "Bearer tok" {
		t.Errorf("other project: %+v, %v (auth %q)", g, err, gotAuth)
	}
	if _, err := c.Check(context.Background(), "/w/app"); !errors.Is(err, ErrExhausted) {
		t.Errorf("app: %v, want exhausted", err)
	}

	status = http.StatusServiceUnavailable
	if g, err := c.Check(context.Background(), "/w/app"); err != nil || g.Unchecked == nil || g.Limited {
		t.Errorf("offline, allow: %+v, %v", g, err)
	}
	deny := NewClient(ClientOptions{URL: srv.URL, Offline: OfflineDeny})
	if _, err := deny.Check(context.Background(), "/w/app"); !errors.Is(err, ErrUnchecked) {
		t.Errorf("offline, deny: %v", err)
	}
	status = http.StatusNotFound // a backend without budgets
	if g, err := deny.Check(context.Background(), "/w/app"); err != nil || g.Limited || g.Unchecked != nil {
		t.Errorf("404: %+v, %v", g, err)
	}
	if g, err := NewClient(ClientOptions{}).Check(context.Background(), "/w/app"); err != nil || g.Limited {
		t.Errorf("no URL: %+v, %v", g, err)
	}
}

// A backend out of reach says nothing about a project no budget covered
// when it was last asked; a covered one falls to budgets.offline.
func TestClientOfflineCache(t *testing.T) {
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(w).Encode(Response{Budgets: []Status{{Project: "paid", Period: Day, CapUSD: 5, RemainingUSD: 5, State: OK}}}) //nolint:errcheck
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "budgets.json")
	c := NewClient(ClientOptions{URL: srv.URL, CacheFile: file, Offline: OfflineDeny})
	if g, err := c.Check(context.Background(), "/w/free"); err != nil || g.Limited {
		t.Fatalf("online: %+v, %v", g, err)
	}
	down.Store(true)
	if g, err := c.Check(context.Background(), "/w/free"); err != nil || g.Unchecked != nil {
		t.Errorf("offline, no budget covered it: %+v, %v; want a plain grant", g, err)
	}
	if _, err := c.Check(context.Background(), "/w/paid"); !errors.Is(err, ErrUnchecked) {
		t.Errorf("offline, a budget covers it: %v; want budgets.offline's refusal", err)
	}
	other := NewClient(ClientOptions{URL: "http://127.0.0.1:1", CacheFile: file, Offline: OfflineDeny})
	if _, err := other.Check(context.Background(), "/w/free"); !errors.Is(err, ErrUnchecked) {
		t.Errorf("another backend's cache was trusted: %v", err)
	}
}
