package tokens

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Scope is one permission a token may carry.
type Scope string

// The scopes, in the order they are listed.
const (
	Ingest Scope = "ingest" // POST events
	// Decisions is the helper's long-poll for dashboard decisions on its
	// own pending approvals (GET /api/approvals/decisions) and nothing
	// else: with ingest, all a helper needs. Read implies it.
	Decisions Scope = "decisions"
	Read      Scope = "read"    // the read API, live streams and dashboard pages
	Approve   Scope = "approve" // POST a decision; implies read
	// Audit reads the audit trail (GET /api/audit) and nothing else: a
	// SIEM's collector needs no sessions, prompts or outputs.
	Audit Scope = "audit"
	Admin Scope = "admin" // everything
)

// All is every scope, in display order.
var All = []Scope{Ingest, Decisions, Read, Approve, Audit, Admin}

// Helper is what a helper (extension, run, acp, terminal) needs: post its
// events and hear the decisions made on its approvals.
var Helper = []Scope{Ingest, Decisions}

// HelperPreset is the name ParseScopes takes for Helper's scopes:
// `token create --scope helper`.
const HelperPreset = "helper"

// Default is what a token without stated scopes carries: a plain
// serve.tokens entry, backend.token and the data dir's generated token.
var Default = []Scope{Ingest, Read}

// ErrUnknownScope is a scope name that is not one of All.
var ErrUnknownScope = errors.New("unknown scope")

// Allowed lists the scope names for messages: "ingest, decisions, read,
// approve, audit, admin, or helper (ingest and decisions)".
func Allowed() string {
	names := make([]string, len(All))
	for i, s := range All {
		names[i] = string(s)
	}
	return strings.Join(names, ", ") + ", or " + HelperPreset + " (ingest and decisions)"
}

// ParseScopes reads scope names. Each item may itself list several,
// separated by commas or '+' ("approve+read"), as a flag or an environment
// variable gives them. The result is deduplicated, in All's order; an
// empty input gives an empty result.
func ParseScopes(items ...string) ([]Scope, error) {
	var out []Scope
	for _, item := range items {
		for _, name := range strings.FieldsFunc(item, func(r rune) bool { return r == ',' || r == '+' || r == ' ' }) {
			if strings.EqualFold(name, HelperPreset) {
				out = append(out, Helper...)
				continue
			}
			s := Scope(strings.ToLower(name))
			if !slices.Contains(All, s) {
				return nil, fmt.Errorf("%w %q (allowed: %s)", ErrUnknownScope, name, Allowed())
			}
			out = append(out, s)
		}
	}
	return normalize(out), nil
}

// normalize dedupes scopes into All's order.
func normalize(in []Scope) []Scope {
	var out []Scope
	for _, s := range All {
		if slices.Contains(in, s) {
			out = append(out, s)
		}
	}
	return out
}

// Set is a token's effective scopes, with what each implies.
type Set uint8

// SetOf is the effective set of scopes: admin brings every scope, approve
// brings read. No scopes at all is Default.
func SetOf(scopes []Scope) Set {
	if len(scopes) == 0 {
		scopes = Default
	}
	var set Set
	for _, s := range scopes {
		switch s {
		case Admin:
			return setBit(Ingest) | setBit(Read) | setBit(Approve) | setBit(Audit) | setBit(Admin)
		case Approve:
			set |= setBit(Approve) | setBit(Read)
		default:
			set |= setBit(s)
		}
	}
	return set
}

func setBit(s Scope) Set {
	if i := slices.Index(All, s); i >= 0 {
		return 1 << i
	}
	return 0
}

// Has reports whether the set grants s: read grants decisions too, which
// List leaves out as it adds nothing to read.
func (set Set) Has(s Scope) bool {
	if s == Decisions && set.has(Read) {
		return true
	}
	return set.has(s)
}

func (set Set) has(s Scope) bool { b := setBit(s); return b != 0 && set&b == b }

// List is the set's scopes in All's order.
func (set Set) List() []Scope {
	out := []Scope{}
	for _, s := range All {
		if set.has(s) {
			out = append(out, s)
		}
	}
	return out
}

// String is the set as "ingest, read".
func (set Set) String() string {
	l := set.List()
	names := make([]string, len(l))
	for i, s := range l {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
