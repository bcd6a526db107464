package backend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// Reject reasons: the "reason" label of the rejected-events metric.
const (
	reasonBadJSON       = "bad_json"
	reasonBadSessionID  = "bad_session_id"
	reasonSessionID     = "session_mismatch"
	reasonInteraction   = "bad_interaction_id"
	reasonEventID       = "bad_event_id"
	reasonSeq           = "bad_seq"
	reasonEventType     = "bad_event_type"
	reasonEventData     = "bad_event_data"
	reasonTimestamp     = "bad_timestamp"
	reasonSource        = "bad_source"
	reasonIdempotency   = "idempotency_mismatch"
	reasonTooLarge      = "too_large"
	reasonBatch         = "bad_batch"
	reasonBusy          = "busy"      // no room under the cap on bytes in flight
	reasonSlowBody      = "slow_body" // the body missed its read deadline
	reasonStoreFailure  = "store_error"
	maxIDLen            = 256
	maxEventTypeLen     = 256
	maxInteractionIDLen = 256
)

var allReasons = []string{
	reasonBadJSON, reasonBadSessionID, reasonSessionID, reasonInteraction, reasonEventID, reasonSeq, reasonEventType,
	reasonEventData, reasonTimestamp, reasonSource, reasonIdempotency, reasonTooLarge, reasonBatch,
	reasonBusy, reasonSlowBody, reasonStoreFailure,
}

// RejectError is why an event was refused: Reason is a stable code (the
// metric label), the message says what was wrong with which value.
type RejectError struct {
	Reason string
	Msg    string
	// Limit is the byte limit a too_large refusal hit (413 bodies carry it
	// as "limit", so a client can size what it sends); 0 otherwise.
	Limit int64
}

func (e *RejectError) Error() string { return e.Msg }

func reject(reason, format string, args ...any) *RejectError {
	return &RejectError{Reason: reason, Msg: fmt.Sprintf(format, args...)}
}

// tooLarge is a too_large refusal of something over limit bytes.
func tooLarge(limit int64, format string, args ...any) *RejectError {
	e := reject(reasonTooLarge, format, args...)
	e.Limit = limit
	return e
}

// wireEvent is the posted envelope (CONTRACT §6). Seq and Timestamp stay raw
// so a bad value gets a precise message instead of a decoder error naming
// our Go types. Unknown fields are ignored for forward compatibility.
type wireEvent struct {
	SessionID     string          `json:"session_id"`
	InteractionID string          `json:"interaction_id"`
	EventID       string          `json:"event_id"`
	Seq           json.RawMessage `json:"seq"`
	EventType     string          `json:"event_type"`
	EventData     json.RawMessage `json:"event_data"`
	Timestamp     json.RawMessage `json:"timestamp"`
	Source        string          `json:"source"`
}

// checkSessionID validates the {id} path segment.
func checkSessionID(id string) *RejectError {
	if id == "" || len(id) > maxIDLen || !printable(id) {
		return reject(reasonBadSessionID, "session id in the path must be 1-%d printable characters", maxIDLen)
	}
	return nil
}

// parseEvent decodes and validates one envelope posted under pathID. An
// empty session_id takes pathID's.
func parseEvent(raw []byte, pathID string) (store.Event, *RejectError) {
	var w wireEvent
	if err := json.Unmarshal(raw, &w); err != nil {
		return store.Event{}, reject(reasonBadJSON, "body is not a JSON event object: %v", err)
	}
	return checkEvent(&w, pathID)
}

// checkEvent validates a decoded envelope and converts it.
func checkEvent(w *wireEvent, pathID string) (store.Event, *RejectError) {
	ev := store.Event{
		SessionID:     w.SessionID,
		InteractionID: w.InteractionID,
		EventID:       w.EventID,
		EventType:     w.EventType,
		EventData:     w.EventData,
		Source:        w.Source,
	}
	if ev.SessionID == "" {
		ev.SessionID = pathID
	}
	if ev.SessionID != pathID {
		return ev, reject(reasonSessionID, "session_id %q does not match the path's %q", clip(ev.SessionID), clip(pathID))
	}
	if !validEventID(ev.EventID) {
		return ev, reject(reasonEventID, "event_id %q must be 1-%d characters of [A-Za-z0-9._:-] (a UUID)", clip(ev.EventID), maxIDLen)
	}
	if len(ev.InteractionID) > maxInteractionIDLen || !printable(ev.InteractionID) {
		return ev, reject(reasonInteraction, "interaction_id must be at most %d printable characters", maxInteractionIDLen)
	}
	seq, err := strconv.ParseInt(string(w.Seq), 10, 64)
	if err != nil || seq < 1 {
		return ev, reject(reasonSeq, "seq must be an integer >= 1, got %s", clipRaw(w.Seq))
	}
	ev.Seq = seq
	if ev.EventType == "" || len(ev.EventType) > maxEventTypeLen || !printable(ev.EventType) {
		return ev, reject(reasonEventType, "event_type must be 1-%d printable characters", maxEventTypeLen)
	}
	if d := bytes.TrimLeft(ev.EventData, " \t\r\n"); len(d) == 0 || d[0] != '{' {
		return ev, reject(reasonEventData, "event_data must be a JSON object, got %s", clipRaw(ev.EventData))
	}
	ts, rerr := parseTimestamp(w.Timestamp)
	if rerr != nil {
		return ev, rerr
	}
	ev.Timestamp = ts
	switch ev.Source {
	case "agent", "terminal", "relay":
	default:
		return ev, reject(reasonSource, "source %q must be agent, terminal or relay", clip(ev.Source))
	}
	return ev, nil
}

func parseTimestamp(raw json.RawMessage) (time.Time, *RejectError) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || s == "" {
		return time.Time{}, reject(reasonTimestamp, "timestamp must be an RFC 3339 string, got %s", clipRaw(raw))
	}
	// RFC3339Nano parses with or without fractional seconds.
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, reject(reasonTimestamp, "timestamp %q is not RFC 3339 (like 2026-11-21T22:14:26.729Z)", clip(s))
	}
	return t.UTC(), nil
}

// validEventID accepts UUIDs and similar opaque IDs, nothing that could
// confuse a log line or an HTTP header.
func validEventID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// printable reports valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// clip shortens a value echoed in an error message.
func clip(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	for i := n; i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i] + "…"
		}
	}
	return ""
}

func clipRaw(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	return clip(string(b))
}
