package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/claude-relay/claude-relay/internal/tokens"
)

// MinTokenLen is the shortest token serve.tokens takes and the dashboard
// login accepts: shorter ones can be guessed (a login once took "a").
const MinTokenLen = 16

// serveTokensAllowed is what serve.tokens takes, for its validation errors.
const serveTokensAllowed = "allowed: a list whose entries are a token (scopes ingest and read) or " +
	"{token, name, scopes} with scopes from " + "ingest, read, approve, audit, admin" +
	"; in the environment, comma-separated tokens or a JSON array of the same entries"

// serveTokens reads serve.tokens (the package doc shows the forms): a YAML
// list of tokens and {token, name, scopes} mappings, a comma-separated
// string of plain tokens, or a string holding a JSON array of either (how
// the environment gives scopes). Errors never quote a token.
func serveTokens(raw any) ([]ServeToken, error) {
	var items []any
	switch v := raw.(type) {
	case nil:
		return nil, nil
	case []any:
		items = v
	case []string:
		for _, s := range v {
			items = append(items, s)
		}
	case map[string]any:
		return nil, errors.New(serveTokensAllowed + " (got a single mapping: make it a list item)")
	default:
		s, err := str(raw)
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(s, "[") {
			if err := json.Unmarshal([]byte(s), &items); err != nil {
				return nil, fmt.Errorf("%s (a value starting with '[' must be a JSON array: %s)", serveTokensAllowed, jsonProblem(err))
			}
			break
		}
		for _, t := range strings.Split(s, ",") {
			items = append(items, t)
		}
	}
	var out []ServeToken
	for i, it := range items {
		t, err := serveToken(it)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w; %s", i+1, err, serveTokensAllowed)
		}
		if t.Token == "" {
			continue // "a,,b" and trailing commas
		}
		if n := len(t.Token); n < MinTokenLen {
			return nil, shortTokenError(i+1, t.Name, n)
		}
		if t.Name != "" && slices.ContainsFunc(out, func(o ServeToken) bool { return o.Name == t.Name }) {
			return nil, fmt.Errorf("entry %d: name %q is used twice (names say who decided an approval, so each must be unique); %s", i+1, t.Name, serveTokensAllowed)
		}
		out = append(out, t)
	}
	return out, nil
}

// shortTokenError says that entry (1-based, named name or "") is too
// short, and how to make a good token, without quoting it.
func shortTokenError(entry int, name string, n int) error {
	which := fmt.Sprintf("entry %d", entry)
	if name != "" {
		which += fmt.Sprintf(" (%q)", name)
	}
	return fmt.Errorf("%s: the token is %d characters long; a token needs at least %d, random, so it cannot be guessed: "+
		"make one with `openssl rand -hex 32`, or leave serve.tokens out and use `claude-relay token create --scope read` (or approve)", which, n, MinTokenLen)
}

// jsonProblem describes a JSON error without the offending text, which may
// be a token.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("invalid JSON at byte %d", syn.Offset)
	}
	return "not an array of strings and objects"
}

// serveToken reads one entry: a string, or a mapping.
func serveToken(item any) (ServeToken, error) {
	switch v := item.(type) {
	case string:
		return ServeToken{Token: Secret(strings.TrimSpace(v))}, nil
	case map[string]any:
		return serveTokenMap(v)
	case map[any]any: // older YAML decoders
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = x
		}
		return serveTokenMap(m)
	}
	return ServeToken{}, fmt.Errorf("a %T, not a token or a mapping", item)
}

func serveTokenMap(m map[string]any) (ServeToken, error) {
	var t ServeToken
	for k, v := range m {
		switch strings.ToLower(k) {
		case "token":
			s, ok := v.(string)
			if !ok || strings.TrimSpace(s) == "" {
				return t, errors.New("token must be a non-empty string")
			}
			t.Token = Secret(strings.TrimSpace(s))
		case "name":
			s, ok := v.(string)
			if !ok {
				return t, errors.New("name must be a string")
			}
			if err := tokens.CheckName(s); err != nil {
				return t, err
			}
			t.Name = s
		case "scopes":
			scopes, err := scopeList(v)
			if err != nil {
				return t, err
			}
			t.Scopes = scopes
		default:
			return t, fmt.Errorf("unknown key %q (allowed: token, name, scopes)", k)
		}
	}
	if t.Token == "" {
		return t, errors.New("a mapping needs its token")
	}
	return t, nil
}

// scopeList reads scopes: a list of names, or one string of names
// separated by commas or '+'. Stated scopes may not be empty: leave the key
// out for the default (ingest, read).
func scopeList(v any) ([]tokens.Scope, error) {
	var names []string
	switch x := v.(type) {
	case string:
		names = []string{x}
	case []any:
		for _, n := range x {
			s, ok := n.(string)
			if !ok {
				return nil, fmt.Errorf("scopes must be names, got a %T", n)
			}
			names = append(names, s)
		}
	case []string:
		names = x
	default:
		return nil, fmt.Errorf("scopes must be a list of names, got a %T", v)
	}
	scopes, err := tokens.ParseScopes(names...)
	if err != nil {
		return nil, err
	}
	if len(scopes) == 0 {
		return nil, errors.New("scopes is empty (leave it out for ingest and read)")
	}
	return scopes, nil
}
