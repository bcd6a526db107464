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
