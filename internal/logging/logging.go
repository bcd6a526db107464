// Package logging builds the slog logger every command uses: text or JSON on
// stderr, a level that can change at run time, and a handler that redacts
// secrets from messages and attributes (package redact): every configured
// secret long enough to tell from a word, and every credential-shaped word.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/claude-relay/claude-relay/internal/redact"
)

// Redacted replaces a secret wherever it appears.
const Redacted = redact.Mask

// New returns a logger writing to w in format "text" or "json". secrets is
// called for each record so that a reloaded token is redacted at once.
func New(w io.Writer, format string, level slog.Leveler, secrets func() []string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(NewRedactor(h, secrets))
}

// Redactor is a slog.Handler that rewrites secrets out of a record before
// the wrapped handler sees it.
type Redactor struct {
	next    slog.Handler
	secrets func() []string
}

// NewRedactor wraps next.
func NewRedactor(next slog.Handler, secrets func() []string) *Redactor {
	return &Redactor{next: next, secrets: secrets}
}

// Enabled implements slog.Handler.
func (r *Redactor) Enabled(ctx context.Context, l slog.Level) bool { return r.next.Enabled(ctx, l) }

// Handle implements slog.Handler. Every record is rewritten, with or
// without configured secrets: a credential-shaped word needs none.
func (r *Redactor) Handle(ctx context.Context, rec slog.Record) error {
	secrets := r.current()
	out := slog.NewRecord(rec.Time, rec.Level, Redact(rec.Message, secrets), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a, secrets))
		return true
	})
	return r.next.Handle(ctx, out)
}

// WithAttrs implements slog.Handler; attributes are redacted once, here.
func (r *Redactor) WithAttrs(attrs []slog.Attr) slog.Handler {
	secrets := r.current()
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = redactAttr(a, secrets)
	}
	return &Redactor{next: r.next.WithAttrs(clean), secrets: r.secrets}
}

// WithGroup implements slog.Handler.
func (r *Redactor) WithGroup(name string) slog.Handler {
	return &Redactor{next: r.next.WithGroup(name), secrets: r.secrets}
}

func (r *Redactor) current() []string {
	if r.secrets == nil {
		return nil
	}
	return r.secrets()
}

func redactAttr(a slog.Attr, secrets []string) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Redact(v.String(), secrets))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, x := range g {
			clean[i] = redactAttr(x, secrets)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		// Errors, structs, byte slices: render once and redact the text,
		// since a secret can hide anywhere inside them.
		var s string
		if b, ok := v.Any().([]byte); ok {
			s = string(b) // handlers print byte slices as text
		} else {
			s = fmt.Sprint(v.Any())
		}
		if r := Redact(s, secrets); r != s {
			return slog.String(a.Key, r)
		}
		return slog.Attr{Key: a.Key, Value: v}
	default:
		return slog.Attr{Key: a.Key, Value: v}
	}
}

// Redact replaces in s every secret at least redact.MinSecretLen long (a
// shorter one would mangle ordinary words) and every credential-shaped
// word (redact.Text).
func Redact(s string, secrets []string) string { return redact.Text(s, secrets) }
