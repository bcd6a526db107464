package backend

import (
	"net/http"

	"github.com/claude-relay/claude-relay/internal/policy"
	"github.com/claude-relay/claude-relay/internal/tokens"
)

// policyPath is the central policy's route (issue 26).
const policyPath = "/api/policy"

// handlePolicy is GET /api/policy: serve.policy's rules, in order. A
// helper's own token reads it (ingest or decisions), and so does read:
// every helper must be able to enforce it, and the rules are no secret from
// the people they bind.
func (s *Server) handlePolicy(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r)
	if !p.scopes.Has(tokens.Ingest) && !p.scopes.Has(tokens.Decisions) && !p.scopes.Has(tokens.Read) {
		s.forbidden(w, r, p, tokens.Decisions)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, policy.Document{Rules: s.policyRules()})
}

// policyRules are the rules served; never null, so a client tells "no
// rules" from a broken answer.
func (s *Server) policyRules() []policy.Rule {
	if s.policy == nil {
		return []policy.Rule{}
	}
	return s.policy.Rules()
}
