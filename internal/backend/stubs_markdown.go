package backend

import "net/http"

// Stub the session page helper replaces (delete this file).
func (s *Server) handleMarkdown(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotImplemented, "not implemented yet")
}
