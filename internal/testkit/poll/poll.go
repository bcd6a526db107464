// Package poll waits in tests for a condition that something else makes
// true: a process to appear, a file to be written, a backend to hold an
// event. One helper, so every wait is bounded and says what it waited for.
//
// A wait for something not to happen needs a positive barrier first: an
// event that proves the system got past the point where the unwanted thing
// would have happened. Polling for a while and seeing nothing proves only
// that the machine was slow.
package poll

import (
	"testing"
	"time"
)

// Interval is how often Until checks.
const Interval = 50 * time.Millisecond

// Until checks ok every Interval until it holds, and fails the test with
// what once timeout has passed. ok runs on the test's goroutine, so it may
// itself fail the test (say, when the process it waits on has exited).
func Until(t testing.TB, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	if !Within(timeout, ok) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Value calls get every Interval until it reports ok, and returns the value
// it reported then; it fails the test with what once timeout has passed.
func Value[T any](t testing.TB, timeout time.Duration, what string, get func() (T, bool)) T {
	t.Helper()
	var v T
	Until(t, timeout, what, func() bool {
		var ok bool
		v, ok = get()
		return ok
	})
	return v
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
