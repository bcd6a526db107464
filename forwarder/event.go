package forwarder

import (
	"github.com/claude-relay/claude-relay/internal/wire"

	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Event is what a producer hands to Enqueue.
type Event struct {
	SessionID     string
	InteractionID string
	Type          string          // event_type: the CLI line's type, hook.<Name>, transcript.<type>, relay.*
	Data          json.RawMessage // event_data: a JSON object, forwarded unmodified
	Time          time.Time       // zero: now
	Source        string          // agent, terminal or relay
	// Decoded says the caller already parsed Data as a JSON object (a CLI
	// line through streamjson), so Enqueue need not validate it again.
	Decoded bool
}

// Accepted is what Enqueue assigned.
type Accepted struct {
	EventID string
	Seq     int64
}

// Envelope is the wire form (CONTRACT §6), as spooled and as posted.
type Envelope = wire.Envelope

var errBadEvent = errors.New("invalid event")

func validateEvent(ev Event) error {
	switch {
	case ev.SessionID == "":
		return fmt.Errorf("%w: no session_id", errBadEvent)
	case ev.Type == "":
		return fmt.Errorf("%w: no event type", errBadEvent)
	case len(ev.Data) == 0 || ev.Data[0] != '{' || (!ev.Decoded && !json.Valid(ev.Data)):
		return fmt.Errorf("%w: event_data must be a JSON object", errBadEvent)
	case ev.Source != "agent" && ev.Source != "terminal" && ev.Source != "relay":
		return fmt.Errorf("%w: source %q (allowed: agent, terminal, relay)", errBadEvent, ev.Source)
	}
	return nil
}

// encodeEnvelope writes the envelope JSON by hand: event_data is already
// JSON and must pass through byte for byte, and this is the hot path.
func encodeEnvelope(dst []byte, ev Event, id string, seq int64) []byte {
	dst = append(dst, `{"session_id":`...)
	dst = appendString(dst, ev.SessionID)
	dst = append(dst, `,"interaction_id":`...)
	dst = appendString(dst, ev.InteractionID)
	dst = append(dst, `,"event_id":"`...)
	dst = append(dst, id...)
	dst = append(dst, `","seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"event_type":`...)
	dst = appendString(dst, ev.Type)
	dst = append(dst, `,"event_data":`...)
	dst = append(dst, ev.Data...)
	dst = append(dst, `,"timestamp":"`...)
	dst = ev.Time.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","source":`...)
	dst = appendString(dst, ev.Source)
	return append(dst, '}')
}

// appendString appends s as a JSON string (strconv.Quote's escapes are Go's,
// not JSON's). Invalid UTF-8 becomes U+FFFD, as encoding/json does.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		case r == utf8.RuneError:
			dst = append(dst, "\\ufffd"...)
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	return append(dst, '"')
}
