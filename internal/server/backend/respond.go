package backend

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"
)

// errorBody is every error response: {"error":"reason"}, and for a 413
// the limit in bytes that the body was over, {"error":…,"limit":8388608}.
type errorBody struct {
	Error string `json:"error"`
	Limit int64  `json:"limit,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store") // unless the handler says this answer may be cached
	}
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	// The status line is out; an encoding error here means the client left.
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}

// statusWriter records the status for the request log. Unwrap lets
// http.ResponseController reach the real writer's Flush and deadlines.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequests logs each request at debug level: method, path, status and
// duration. Never headers or bodies: they carry tokens and user data.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.log.Enabled(r.Context(), slog.LevelDebug) {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		s.log.Debug("backend: request", "method", r.Method, "path", r.URL.Path, "status", sw.status,
			"duration", time.Since(start), "remote", r.RemoteAddr)
	})
}
