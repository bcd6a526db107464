package terminal

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// MaxHookBody bounds a hook input; the CLI's largest (PostToolUse with a
// tool's whole output) stays well below it.
const MaxHookBody = 8 << 20

// CallbackServer receives hook inputs on loopback. Only POSTs to
// /hook/<secret> from a loopback address with a JSON object body are taken;
// everything else is refused and logged (without the secret).
type CallbackServer struct {
	// OnHook is called once per accepted hook input; what it returns is
	// the answer the CLI reads (a PreToolUse decision), nil for none.
	OnHook func(ctx context.Context, event string, body []byte) any
	Logger *slog.Logger

	secret string
	ln     net.Listener
	srv    *http.Server
	done   chan struct{}
	once   sync.Once
}

// StartCallbackServer listens on 127.0.0.1 on a random port.
func StartCallbackServer(onHook func(context.Context, string, []byte) any, log *slog.Logger) (*CallbackServer, error) {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("callback secret: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("callback server: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &CallbackServer{OnHook: onHook, Logger: log, secret: hex.EncodeToString(raw), ln: ln, done: make(chan struct{})}
	c.srv = &http.Server{Handler: c, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second}
	go func() {
		defer close(c.done)
		if err := c.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("callback server stopped", "err", err)
		}
	}()
	return c, nil
}

// URL is where hooks post; it carries the secret, so it is never logged.
func (c *CallbackServer) URL() string {
	return "http://" + c.ln.Addr().String() + "/hook/" + c.secret
}

// Close stops the server after in-flight hooks are answered (up to ctx).
func (c *CallbackServer) Close(ctx context.Context) {
	c.once.Do(func() {
		if err := c.srv.Shutdown(ctx); err != nil {
			c.srv.Close()
		}
		<-c.done
	})
}

func (c *CallbackServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reject := func(code int, why string) {
		c.Logger.Warn("hook callback rejected", "status", code, "why", why, "remote", r.RemoteAddr)
		http.Error(w, why, code)
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		reject(http.StatusForbidden, "not from loopback")
		return
	}
	got, ok := strings.CutPrefix(r.URL.Path, "/hook/")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(c.secret)) != 1 {
		reject(http.StatusNotFound, "unknown path")
		return
	}
	if r.Method != http.MethodPost {
		reject(http.StatusMethodNotAllowed, "POST only")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxHookBody))
	if err != nil {
		reject(http.StatusRequestEntityTooLarge, "body too large")
		return
	}
	var in struct {
		Event string `json:"hook_event_name"`
	}
	if len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &in) != nil || in.Event == "" {
		reject(http.StatusBadRequest, "not a hook input")
		return
	}
	// Spool first, then answer: the CLI posts its next hook only after this
	// answer, so hook events keep their order. Spooling is one write(2), so
	// the CLI barely waits; only the policy's PreToolUse answer decides.
	answer := c.OnHook(r.Context(), in.Event, body)
	out := []byte("{}")
	if answer != nil {
		if b, err := json.Marshal(answer); err == nil {
			out = b
		} else {
			reject(http.StatusInternalServerError, "cannot encode the answer")
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out) //nolint:errcheck // the CLI gone is its own problem
}
