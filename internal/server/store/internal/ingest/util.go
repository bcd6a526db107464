package ingest

import (
	"math"
	"sync"
	"time"
)

// Limits of Events.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Limit applies Events' paging rule: 0 (or less) means DefaultLimit, and no
// page is larger than MaxLimit.
func Limit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxLimit:
		return MaxLimit
	}
	return n
}

// Nanos is how both backends store a time: Unix nanoseconds in a 64-bit
// integer, exact (PostgreSQL's timestamptz keeps microseconds only) and
// ordered the same way in SQL as in Go. The zero time is stored as 0; times
// outside 1678–2262 are clamped.
func Nanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Before(minTime):
		return math.MinInt64
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// Time is the inverse of Nanos, in UTC.
func Time(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// TimePtr is Time for a nullable column.
func TimePtr(ns *int64) *time.Time {
	if ns == nil {
		return nil
	}
	t := Time(*ns)
	return &t
}

// NanosPtr is Nanos for a nullable column.
func NanosPtr(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	n := Nanos(*t)
	return &n
}

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// Clock hands out receive times that strictly increase within a process, so
// that "newest first" is a total order even when two Appends read the same
// wall-clock nanosecond.
type Clock struct {
	mu   sync.Mutex
	last time.Time
}

// Now returns the current time, or 1ns past the previous value if the clock
// has not moved on (or went backwards).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now().UTC().Round(0)
	if !now.After(c.last) {
		now = c.last.Add(time.Nanosecond)
	}
	c.last = now
	return now
}
