package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/server/store"
)

// BenchmarkIngestHTTP posts 1 KiB events over loopback HTTP, one per request
// or 100 per batch request, into the in-memory fake and into SQLite. It
// reports events/s and the p99 latency of one request.
func BenchmarkIngestHTTP(b *testing.B) {
	stores := []struct {
		name string
		open func(testing.TB) store.Store
	}{
		{"memory", func(testing.TB) store.Store { return memstore.New() }},
		{"sqlite", openSQLite},
	}
	for _, st := range stores {
		for _, batch := range []int{1, 100} {
			name := st.name + "/single"
			if batch > 1 {
				name = fmt.Sprintf("%s/batch%d", st.name, batch)
			}
			b.Run(name, func(b *testing.B) { benchIngest(b, st.open(b), batch) })
		}
	}
}

// benchServer serves st over loopback HTTP, accepting testToken, until the
// benchmark's run ends; it shuts down before st's own cleanups run.
func benchServer(b *testing.B, st store.Store) (baseURL string, client *http.Client) {
	srv := New(Options{
		Store:    st,
		Tokens:   func() []config.Secret { return []config.Secret{testToken} },
		Registry: prometheus.NewRegistry(),
	})
	ts := httptest.NewServer(srv.Handler())
	b.Cleanup(func() {
		ts.Client().CloseIdleConnections()
		ts.Close()
		_ = srv.Shutdown(context.Background())
	})
	return ts.URL, ts.Client()
}

func benchIngest(b *testing.B, st store.Store, batch int) {
	b.Cleanup(func() { _ = st.Close() })
	baseURL, client := benchServer(b, st)

	// An envelope of 1 KiB with a realistic event_data object.
	pad := strings.Repeat("x", 1024-300)
	session := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	var seq int64
	// The client's work stays small next to the server's: everything but
	// the IDs is formatted once.
	head := fmt.Sprintf(`{"session_id":%q,"interaction_id":"i1","event_id":"%s-`, session, session)
	tail := fmt.Sprintf(`,"event_type":"assistant","event_data":{"type":"assistant","session_id":"conv",`+
		`"message":{"role":"assistant","content":[{"type":"text","text":%q}]}},`+
		`"timestamp":"2026-11-21T22:14:26.729123Z","source":"agent"}`, pad)
	envelopeJSON := func(dst []byte) []byte {
		seq++
		dst = append(dst, head...)
		dst = strconv.AppendInt(dst, seq, 10)
		dst = append(dst, `","seq":`...)
		dst = strconv.AppendInt(dst, seq, 10)
		return append(dst, tail...)
	}
	url := baseURL + "/api/sessions/" + session + "/events"
	if batch > 1 {
		url += "/batch"
	}
	var body []byte
	var lat []time.Duration
	events := 0
	b.ReportAllocs()
	b.ResetTimer()
	for events < b.N {
		n := min(batch, b.N-events)
		body = body[:0]
		if batch > 1 {
			body = append(body, `{"events":[`...)
			for i := range n {
				if i > 0 {
					body = append(body, ',')
				}
				body = envelopeJSON(body)
			}
			body = append(body, "]}"...)
		} else {
			body = envelopeJSON(body)
		}
		start := time.Now()
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		if want := map[bool]int{true: 200, false: 201}[batch > 1]; resp.StatusCode != want {
			b.Fatalf("status %d: %s", resp.StatusCode, out)
		}
		if batch > 1 {
			var r batchResponse
			if err := json.Unmarshal(out, &r); err != nil || len(r.Results) != n || r.Results[n-1].Status != 201 {
				b.Fatalf("batch answer %s", out)
			}
		}
		events += n
	}
	b.StopTimer()
	slices.Sort(lat)
	p99 := lat[min(len(lat)-1, len(lat)*99/100)]
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	b.SetBytes(1024)
}
