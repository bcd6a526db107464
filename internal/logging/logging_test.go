package logging

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

type wrapped struct{ Token string }

func TestNoSecretReachesTheOutput(t *testing.T) {
	const secret = "tok-3f9a-secret"
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			var lv slog.LevelVar
			lv.Set(slog.LevelDebug)
			log := New(&buf, format, &lv, func() []string { return []string{secret} })
			log.Info("posting with Bearer "+secret, "header", "Bearer "+secret)
			log.Warn("failed", "err", fmt.Errorf("send: %w", errors.New("401 for token "+secret)))
			log.Debug("struct", "v", wrapped{Token: secret}, slog.Group("g", "inner", secret))
			log.With("auth", secret).WithGroup("grp").Error("with attrs", "k", []byte(secret))
			out := buf.String()
			if strings.Contains(out, secret) {
				t.Fatalf("secret leaked:\n%s", out)
			}
			if n := strings.Count(out, Redacted); n < 6 {
				t.Errorf("expected the secret replaced at least 6 times, got %d:\n%s", n, out)
			}
		})
	}
}

func TestSecretsAreReadPerRecord(t *testing.T) {
	var buf bytes.Buffer
	secrets := []string{"old"}
	log := New(&buf, "text", slog.LevelInfo, func() []string { return secrets })
	secrets = []string{"new"}
	log.Info("token new")
	if strings.Contains(buf.String(), "token new") {
		t.Errorf("reloaded secret not redacted: %s", buf.String())
	}
}

func TestLevelVarChangesAtRunTime(t *testing.T) {
	var buf bytes.Buffer
	var lv slog.LevelVar
	log := New(&buf, "json", &lv, nil)
	log.Debug("hidden")
	lv.Set(slog.LevelDebug)
	log.Debug("shown")
	if strings.Contains(buf.String(), "hidden") || !strings.Contains(buf.String(), "shown") {
		t.Errorf("output %q", buf.String())
	}
}
