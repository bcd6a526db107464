package ingest

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

func TestLimit(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{-1, 100}, {0, 100}, {1, 1}, {1000, 1000}, {1001, 1000}} {
		if got := Limit(tc.in); got != tc.want {
			t.Errorf("Limit(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestNanos(t *testing.T) {
	ts := time.Date(2026, 11, 21, 22, 14, 26, 729123456, time.FixedZone("x", -7200))
	cases := []struct {
		in   time.Time
		ns   int64
		back time.Time
	}{
		{ts, ts.UnixNano(), ts.UTC()},
		{time.Time{}, 0, time.Time{}},
		{time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), math.MinInt64, time.Unix(0, math.MinInt64).UTC()},
		{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), math.MaxInt64, time.Unix(0, math.MaxInt64).UTC()},
	}
	for _, tc := range cases {
		if got := Nanos(tc.in); got != tc.ns {
			t.Errorf("Nanos(%v) = %d, want %d", tc.in, got, tc.ns)
		}
		if got := Time(tc.ns); !got.Equal(tc.back) || got.Location() != time.UTC {
			t.Errorf("Time(%d) = %v, want %v in UTC", tc.ns, got, tc.back)
		}
	}
	if TimePtr(nil) != nil || NanosPtr(nil) != nil {
		t.Error("nil pointers must stay nil")
	}
}

func TestClockStrictlyIncreases(t *testing.T) {
	var c Clock
	prev := c.Now()
	for range 10000 {
		now := c.Now()
		if !now.After(prev) {
			t.Fatalf("Now() = %v after %v", now, prev)
		}
		prev = now
	}
}

func TestValidate(t *testing.T) {
	ok := store.Event{SessionID: "s", EventID: "e", EventData: json.RawMessage(`{"a":"\u0000"}`)}
	cases := []struct {
		name string
		edit func(*store.Event)
	}{
		{"empty event_id", func(e *store.Event) { e.EventID = "" }},
		{"empty session_id", func(e *store.Event) { e.SessionID = "" }},
		{"bad JSON", func(e *store.Event) { e.EventData = json.RawMessage(`{`) }},
		{"no event_data", func(e *store.Event) { e.EventData = nil }},
		{"invalid UTF-8 in event_data", func(e *store.Event) { e.EventData = json.RawMessage("{\"a\":\"\xff\"}") }},
		{"NUL in a field", func(e *store.Event) { e.InteractionID = "a\x00b" }},
		{"invalid UTF-8 in a field", func(e *store.Event) { e.Source = "\xff" }},
	}
	if err := Validate([]store.Event{ok}); err != nil {
		t.Fatalf("Validate(valid) = %v", err)
	}
	for _, tc := range cases {
		bad := ok
		tc.edit(&bad)
		if err := Validate([]store.Event{ok, bad}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", tc.name, err)
		}
	}
}
