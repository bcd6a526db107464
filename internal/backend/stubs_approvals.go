package backend

import "net/http"

// Stubs the approvals API helper replaces (delete this file).
func notYet(w http.ResponseWriter, _ *http.Request) {
	writeError(w, http.StatusNotImplemented, "not implemented yet")
}

func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request)        { notYet(w, r) }
func (s *Server) handleApprovals(w http.ResponseWriter, r *http.Request)     { notYet(w, r) }
func (s *Server) handleDecisionsWait(w http.ResponseWriter, r *http.Request) { notYet(w, r) }
func (s *Server) handleApproval(w http.ResponseWriter, r *http.Request)      { notYet(w, r) }
func (s *Server) handleDecision(w http.ResponseWriter, r *http.Request)      { notYet(w, r) }
