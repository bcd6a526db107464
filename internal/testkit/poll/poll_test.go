package poll

import (
	"testing"
	"time"
)

func TestWithin(t *testing.T) {
	n := 0
	if !Within(time.Second, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("Within stopped after %d checks", n)
	}
	if Within(2*Interval, func() bool { return false }) {
		t.Error("Within held for a condition that never held")
	}
}

func TestValue(t *testing.T) {
	n := 0
	got := Value(t, time.Second, "the third check", func() (int, bool) { n++; return n * 10, n == 3 })
	if got != 30 || n != 3 {
		t.Errorf("Value returned %d after %d checks, want 30 after 3", got, n)
	}
}
