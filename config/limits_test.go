package config

import (
	"errors"
	"strings"
	"testing"
)

// TestServeLimits: the backend's size and stream limits default to 8 MiB
// per event, 32 MiB per batch and 32 streams per token, take sizes with
// units, and refuse what the backend could not work with.
func TestServeLimits(t *testing.T) {
	tests := []struct {
		name             string
		env              map[string]string
		event, batch     int64
		streams          int
		badKey, badAllow string
	}{
		{name: "defaults", event: 8 << 20, batch: 32 << 20, streams: 32},
		{name: "units", env: map[string]string{"CLAUDE_RELAY_SERVE_MAX_EVENT_BYTES": "512KiB",
			"CLAUDE_RELAY_SERVE_MAX_BATCH_BYTES": "2MiB", "CLAUDE_RELAY_SERVE_MAX_STREAMS_PER_TOKEN": "4"},
			event: 512 << 10, batch: 2 << 20, streams: 4},
		{name: "event under 64KiB", env: map[string]string{"CLAUDE_RELAY_SERVE_MAX_EVENT_BYTES": "1KiB"},
			badKey: "serve.max_event_bytes", badAllow: "at least 64KiB"},
		{name: "batch under the event limit", env: map[string]string{"CLAUDE_RELAY_SERVE_MAX_BATCH_BYTES": "4MiB"},
			badKey: "serve.max_batch_bytes", badAllow: "at least serve.max_event_bytes"},
		{name: "no streams", env: map[string]string{"CLAUDE_RELAY_SERVE_MAX_STREAMS_PER_TOKEN": "0"},
			badKey: "serve.max_streams_per_token", badAllow: "positive"},
		{name: "not a size", env: map[string]string{"CLAUDE_RELAY_SERVE_MAX_EVENT_BYTES": "lots"},
			badKey: "serve.max_event_bytes", badAllow: "size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"HOME": t.TempDir()}
			for k, v := range tt.env {
				env[k] = v
			}
			l, err := Load(LoadOptions{LookupEnv: envOf(env), Cwd: "/work"})
			if tt.badKey != "" {
				var ve *ValidationError
				if !errors.As(err, &ve) || ve.Key != tt.badKey || !strings.Contains(ve.Allowed, tt.badAllow) {
					t.Fatalf("Load = %v; want a ValidationError on %s allowing %q", err, tt.badKey, tt.badAllow)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := l.Config.Serve; s.MaxEventBytes != tt.event || s.MaxBatchBytes != tt.batch || s.MaxStreamsPerToken != tt.streams {
				t.Errorf("limits = %d, %d, %d; want %d, %d, %d", s.MaxEventBytes, s.MaxBatchBytes, s.MaxStreamsPerToken,
					tt.event, tt.batch, tt.streams)
			}
		})
	}
}
