package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/store"
)

// BenchIngest measures Append of 1 KiB events, batch events per call, into
// one session of s, and reports events/s.
func BenchIngest(b *testing.B, s store.Store, batch int) {
	prefix := `{"type":"assistant","session_id":"conv","message":{"text":"`
	suffix := `"}}`
	data := json.RawMessage(prefix + strings.Repeat("x", 1024-len(prefix)-len(suffix)) + suffix)
	ctx := context.Background()
	events := make([]store.Event, batch)
	var seq int64
	b.SetBytes(int64(len(data) * batch))
	b.ResetTimer()
	for b.Loop() {
		for i := range events {
			seq++
			events[i] = store.Event{
				SessionID: "bench", InteractionID: "i1", EventID: fmt.Sprintf("bench-%d", seq), Seq: seq,
				EventType: "assistant", EventData: data, Timestamp: t0.Add(time.Duration(seq)), Source: "agent",
			}
		}
		if _, err := s.Append(ctx, events); err != nil {
			b.Fatalf("Append: %v", err)
		}
	}
	b.ReportMetric(float64(seq)/b.Elapsed().Seconds(), "events/s")
}
