package budget

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
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
