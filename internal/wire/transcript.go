package wire

import (
	"encoding/json"
	"strings"
)

// TranscriptAssistant is what usage accounting reads of an assistant line
// of the CLI's transcript: a terminal run counts its turns' tokens from
// them as they are written (terminal), and a backend from the lines it
// stored (store.TerminalTurns). One reading, so the two cannot disagree.
type TranscriptAssistant struct {
	Type             string `json:"type"`
	UUID             string `json:"uuid"`
	SessionID        string `json:"sessionId"`
	RequestSessionID string `json:"requestSessionId"`
	RequestID        string `json:"requestId"`
	IsAPIError       bool   `json:"isApiErrorMessage"`
	Message          struct {
		ID      string          `json:"id"`
		Model   string          `json:"model"`
		Usage   Usage           `json:"usage"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

// Counted says whether the line's usage counts: an API call (not one of
// the CLI's "<synthetic>" messages) made in this conversation (not a line
// a fork copied from the conversation it started from).
func (l TranscriptAssistant) Counted() bool {
	if strings.HasPrefix(l.Message.Model, "<") {
		return false
	}
	return l.RequestSessionID == "" || l.SessionID == "" || l.RequestSessionID == l.SessionID
}

// Key identifies the API response the line belongs to: the CLI writes one
// line per content block, each repeating the whole message's usage, and a
// retried request has its own request ID.
func (l TranscriptAssistant) Key() string {
	if l.Message.ID == "" && l.RequestID == "" {
		return "uuid:" + l.UUID
	}
	return l.Message.ID + "\x00" + l.RequestID
}
