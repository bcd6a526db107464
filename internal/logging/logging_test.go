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
	secrets := []string{"old-secret-1234"}
	log := New(&buf, "text", slog.LevelInfo, func() []string { return secrets })
	secrets = []string{"new-secret-5678"}
	log.Info("token new-secret-5678")
	if strings.Contains(buf.String(), "new-secret-5678") {
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

// TestShortSecretsAreNotRedacted: a configured secret too short to tell
// from a word (a token "a") leaves the log readable: it once turned every
// "backend" into "b***ckend".
func TestShortSecretsAreNotRedacted(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, "text", slog.LevelInfo, func() []string { return []string{"a", "backend"} })
	log.Info("backend: serving", "addr", "127.0.0.1:8787", "state", "ready")
	if out := buf.String(); strings.Contains(out, Redacted) || !strings.Contains(out, "backend: serving") {
		t.Errorf("short secrets redacted:\n%s", out)
	}
}

// TestCredentialShapesAreRedacted: secrets nobody configured, in messages,
// attributes, errors and groups, are redacted by their shape, and what
// names them stays.
func TestCredentialShapesAreRedacted(t *testing.T) {
	const gh = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	var buf bytes.Buffer
	log := New(&buf, "json", slog.LevelInfo, nil)
	log.Info("running GITHUB_TOKEN="+gh+" mysql -u root -pHunter2 shop",
		"err", errors.New("dial postgres://relay:pa55word@db/relay: refused"),
		slog.Group("req", "header", "Authorization: Bearer abcdefgh12345678"))
	out := buf.String()
	for _, leak := range []string{gh, "Hunter2", "pa55word", "abcdefgh12345678"} {
		if strings.Contains(out, leak) {
			t.Errorf("%q leaked:\n%s", leak, out)
		}
	}
	for _, kept := range []string{"GITHUB_TOKEN=***", "-p***", "relay:***@db", "Bearer ***"} {
		if !strings.Contains(out, kept) {
			t.Errorf("want %q in:\n%s", kept, out)
		}
	}
}
