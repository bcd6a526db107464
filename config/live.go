package config

import (
	"log/slog"
	"sync/atomic"
)

// Live holds the values that change without a restart. Readers call its
// methods on every use instead of copying the values once.
type Live struct {
	token   atomic.Pointer[Secret]
	serve   atomic.Pointer[[]ServeToken]
	level   slog.LevelVar
	secrets atomic.Pointer[[]string]
}

// NewLive returns a Live initialised from c.
func NewLive(c *Config) *Live {
	l := &Live{}
	l.Apply(c)
	return l
}

// Apply takes the reloadable values of c: the backend token, the serve
// tokens (through Secrets) and the log level.
func (l *Live) Apply(c *Config) {
	t := c.Backend.Token
	l.token.Store(&t)
	st := append([]ServeToken(nil), c.Serve.Tokens...)
	l.serve.Store(&st)
	l.level.Set(c.Log.Level)
	s := c.Secrets()
	l.secrets.Store(&s)
}

// Token is the current backend token.
func (l *Live) Token() Secret {
	if t := l.token.Load(); t != nil {
		return *t
	}
	return ""
}

// Level is the log level, for slog.HandlerOptions.
func (l *Live) Level() *slog.LevelVar { return &l.level }

// Secrets lists the current secret values, for redaction.
func (l *Live) Secrets() []string {
	if s := l.secrets.Load(); s != nil {
		return *s
	}
	return nil
}

// ServeTokens are the serve.tokens entries `serve` accepts now. The slice
// is shared: do not modify it.
func (l *Live) ServeTokens() []ServeToken {
	if s := l.serve.Load(); s != nil {
		return *s
	}
	return nil
}
