package forwarder

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// Only the backend's word acknowledges an event: a 201, or a 200 whose
// JSON says {"duplicate":true} (and, when it names one, that event's
// event_id); in a batch, a per-event result with that event's event_id
// and status 201, or 200 with duplicate. Whatever else answers (a proxy's
// or web server's 200 page, a redirect, a 404 for the event endpoint) is
// no acknowledgement: the event stays in the spool, the error handler
// hears of it (CodeNotBackend) and delivery tries again, backing off, for
// ever. A wrong backend.url therefore loses nothing.

// response is what post read of an answer.
type response struct {
	status   int
	body     []byte // its first MiB
	ctype    string
	location string
	refusals int // a poison verdict's refusals in a row
}

// verdict is what an answer to one posted event means for it.
type verdict int

const (
	verdictStored   verdict = iota // acknowledged: 201, or 200 {"duplicate":true} for this event
	verdictAuth                    // 401, 403: the token is refused; the event waits
	verdictTooLarge                // 413: the event alone is over the backend's limit
	verdictRefused                 // another 4xx: the backend refused this event for good
	verdictRetry                   // 408, 425, 429, 5xx
	verdictForeign                 // anything else: not a claude-relay backend's answer; the event waits
)

// judge says what resp, the answer to posting the event eventID alone,
// means for that event.
func judge(resp response, eventID string) verdict {
	switch c := resp.status; {
	case c == http.StatusCreated:
		if id, ok := answeredID(resp.body); ok && id != eventID {
			return verdictForeign // stored, but not this event: not our backend
		}
		return verdictStored
	case c == http.StatusOK:
		var v struct {
			Duplicate bool    `json:"duplicate"`
			EventID   *string `json:"event_id"`
		}
		if json.Unmarshal(resp.body, &v) == nil && v.Duplicate && (v.EventID == nil || *v.EventID == eventID) {
			return verdictStored
		}
		return verdictForeign
	case c == http.StatusUnauthorized || c == http.StatusForbidden:
		return verdictAuth
	case c == http.StatusRequestEntityTooLarge:
		return verdictTooLarge
	case c == http.StatusNotFound || c == http.StatusMethodNotAllowed:
		// A claude-relay backend takes events for every session ID at
		// this path: whatever answers this has no event endpoint.
		return verdictForeign
	case retryable(c):
		return verdictRetry
	case c >= 400 && c < 500:
		return verdictRefused
	}
	return verdictForeign
}

// retryable reports whether status is one delivery retries.
func retryable(status int) bool {
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly, status == http.StatusTooManyRequests, status >= 500:
		return true
	}
	return false
}

// answeredID returns the event_id a JSON answer names, if any.
func answeredID(body []byte) (string, bool) {
	var v struct {
		EventID string `json:"event_id"`
	}
	if json.Unmarshal(body, &v) != nil || v.EventID == "" {
		return "", false
	}
	return v.EventID, true
}

// storedResult reports whether a batch's per-event result acknowledges the
// event eventID.
func storedResult(res wire.BatchResult, eventID string) bool {
	return eventID != "" && res.EventID == eventID &&
		(res.Status == http.StatusCreated || (res.Status == http.StatusOK && res.Duplicate))
}

// notBackendMessage says that what answered at u is not a claude-relay
// backend, what it answered, and what to do.
func notBackendMessage(method, u string, resp response) string {
	return fmt.Sprintf("%s answers like a web server, not a claude-relay backend: %s %s got %s; "+
		"events stay in the spool until it answers as one: check backend.url (`claude-relay doctor` tests it)",
		baseOf(u), method, cleanURL(u), describe(resp.status, resp.ctype, resp.location, resp.body))
}

// describe renders an answer for a message: its status, and its content
// type and first bytes, or where it redirects.
func describe(status int, ctype, location string, body []byte) string {
	out := fmt.Sprintf("HTTP %d", status)
	if status >= 300 && status < 400 && location != "" {
		return out + " redirecting to " + cleanURL(location)
	}
	if ctype == "" {
		ctype = "no content type"
	} else if mt, _, ok := strings.Cut(ctype, ";"); ok {
		ctype = mt
	}
	if snip := snippet(body, 80); snip != "" {
		return fmt.Sprintf("%s (%s: %q)", out, ctype, snip)
	}
	return fmt.Sprintf("%s (%s, empty body)", out, ctype)
}

// cleanURL drops a URL's user information and query, where secrets hide.
func cleanURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return u.String()
}

// baseOf is the backend's base URL in u, an endpoint's URL.
func baseOf(u string) string {
	if i := strings.Index(u, "/api/"); i >= 0 {
		u = u[:i]
	}
	return cleanURL(u)
}
