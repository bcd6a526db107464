package backend

import "net/http"

// Stub the list/cost helper replaces (delete this file).
func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotImplemented, "not implemented yet")
}
