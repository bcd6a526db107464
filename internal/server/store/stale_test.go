package store

import (
	"testing"
	"time"
)

func TestStaleListStatus(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	quiet := now.Add(-StaleAfter - time.Nanosecond)
	tests := []struct {
		name  string
		s     Session
		want  string
		stale bool
	}{
		{"running, news within the threshold", Session{Status: StatusRunning, UpdatedAt: now.Add(-StaleAfter)}, StatusRunning, false},
		{"running, quiet past it", Session{Status: StatusRunning, UpdatedAt: quiet}, StatusStale, true},
		{"failed long ago", Session{Status: StatusFailed, UpdatedAt: quiet}, StatusFailed, false},
		{"unknown long ago", Session{Status: StatusUnknown, UpdatedAt: quiet}, StatusUnknown, false},
	}
	for _, tc := range tests {
		if got := ListStatus(tc.s, now); got != tc.want {
			t.Errorf("%s: ListStatus = %q, want %q", tc.name, got, tc.want)
		}
		s := tc.s
		s.Stale = !tc.stale // MarkStale sets it either way
		MarkStale(now, &s)
		if s.Stale != tc.stale || s.Status != tc.s.Status {
			t.Errorf("%s: MarkStale gave stale %v status %q, want %v %q", tc.name, s.Stale, s.Status, tc.stale, tc.s.Status)
		}
	}
	if got := (ListOptions{Now: now}).StaleBefore(); !got.Equal(now.Add(-StaleAfter)) {
		t.Errorf("StaleBefore = %v", got)
	}
	if got := (ListOptions{}).StaleBefore(); time.Since(got) < StaleAfter {
		t.Errorf("StaleBefore without Now = %v, want the time of the call less StaleAfter", got)
	}
}
