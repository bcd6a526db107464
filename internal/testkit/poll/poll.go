// Package poll waits in tests for a condition that something else makes
// true: a process to appear, a file to be written, a backend to hold an
// event. One helper, so every wait is bounded and says what it waited for.
package poll

import (
	"testing"
	"time"
)

// Interval is how often Until checks.
const Interval = 50 * time.Millisecond

// Until checks ok every Interval until it holds, and fails the test with
// what (and anything ok's last call noted) once timeout has passed.
func Until(t testing.TB, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	if !Within(timeout, ok) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Within reports whether ok held within timeout, checking every Interval.
func Within(timeout time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if ok() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(Interval)
	}
}
