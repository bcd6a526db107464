// Package audit is the audit trail's record (issue 26, docs/audit.md): one
// JSON line per audit event, as GET /api/audit serves it and
// `claude-relay audit export` writes it. One encoder, so the two are the
// same bytes.
//
// A record names the event (type, session, interaction, seq), where and
// when it happened (project, machine, the backend's receive time and the
// event's own), and lifts the fields a security team filters on (who
// decided an approval and how, the input's digest, the mode, the run's
// end) to the top. data keeps the rest of the event, without what is
// bulky or may hold secrets the digests stand for: tool inputs, answers,
// a run's output.
package audit

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// Version is the record's schema version, its "v".
const Version = 1

// ContentType is the trail's media type: JSON Lines.
const ContentType = "application/x-ndjson"

// Record is one line of the audit trail.
type Record struct {
	V int `json:"v"`
	// Cursor is the record's position: after=Cursor continues after it.
	Cursor        string    `json:"cursor"`
	Type          string    `json:"type"` // the event type, relay.*
	SessionID     string    `json:"session_id"`
	InteractionID string    `json:"interaction_id"`
	EventID       string    `json:"event_id"`
	Seq           int64     `json:"seq"`
	RunID         string    `json:"run_id,omitempty"`
	Project       string    `json:"project"` // the session's project (its first run's cwd)
	Machine       string    `json:"machine"` // the host name the run's helper posted; "" unknown
	ReceivedAt    time.Time `json:"received_at"`
	Timestamp     time.Time `json:"timestamp"` // the event's own, as the helper stamped it

	// Approvals: requested and resolved.
	ApprovalID  string `json:"approval_id,omitempty"`
	Kind        string `json:"kind,omitempty"`
	ToolName    string `json:"tool_name,omitempty"`
	Title       string `json:"title,omitempty"`
	InputSHA256 string `json:"input_sha256,omitempty"`
	Decision    string `json:"decision,omitempty"`
	By          string `json:"by,omitempty"`         // how: extension, tty, acp, dashboard, timeout, …
	DecidedBy   string `json:"decided_by,omitempty"` // who, with by dashboard: the token's name
	DecisionID  string `json:"decision_id,omitempty"`
	Interrupt   bool   `json:"interrupt,omitempty"`
	// UpdatedInputSHA256 is the digest of the input the decider replaced
	// the tool's with.
	UpdatedInputSHA256 string `json:"updated_input_sha256,omitempty"`

	PermissionMode string `json:"permission_mode,omitempty"` // relay.mode_changed

	// Run endings.
	Status       string   `json:"status,omitempty"`
	Reason       string   `json:"reason,omitempty"`
	ExitCode     *int     `json:"exit_code,omitempty"`
	TotalCostUSD *float64 `json:"total_cost_usd,omitempty"`

	// Data is the event's data without the members dropped (see the
	// package doc).
	Data json.RawMessage `json:"data"`
}

// dropped are the event_data members a record leaves out: a digest or a
// lifted field stands for some, the others are output or noise to an
// auditor.
var dropped = []string{"input", "updated_input", "answers", "suggestions", "result", "usage", "model_usage",
	"prompt", "blocks"}

// fields are what a record lifts from event_data.
type fields struct {
	RunID          string          `json:"run_id"`
	ApprovalID     string          `json:"approval_id"`
	Kind           string          `json:"kind"`
	ToolName       string          `json:"tool_name"`
	Title          string          `json:"title"`
	Input          json.RawMessage `json:"input"`
	Decision       string          `json:"decision"`
	By             string          `json:"by"`
	DecidedBy      string          `json:"decided_by"`
	DecisionID     string          `json:"decision_id"`
	Interrupt      bool            `json:"interrupt"`
	UpdatedInput   json.RawMessage `json:"updated_input"`
	PermissionMode string          `json:"permission_mode"`
	Status         string          `json:"status"`
	Reason         string          `json:"reason"`
	TotalCostUSD   *float64        `json:"total_cost_usd"`
	ExitCode       *int            `json:"exit_code"`
	Result         *struct {
		ExitCode *int `json:"exitCode"`
	} `json:"result"`
}

// FromEvent is ev's record.
func FromEvent(ev store.AuditEvent) Record {
	r := Record{V: Version, Cursor: ev.Position, Type: ev.EventType, SessionID: ev.SessionID,
		InteractionID: ev.InteractionID, EventID: ev.EventID, Seq: ev.Seq, Project: ev.Project, Machine: ev.Machine,
		ReceivedAt: ev.ReceivedAt.UTC(), Timestamp: ev.Timestamp.UTC()}
	var f fields
	// A field of an unexpected type leaves the lifted fields empty; data
	// still has the event.
	_ = json.Unmarshal(ev.EventData, &f)
	r.RunID, r.ApprovalID, r.Kind, r.ToolName, r.Title = f.RunID, f.ApprovalID, f.Kind, f.ToolName, f.Title
	r.Decision, r.By, r.DecidedBy, r.DecisionID, r.Interrupt = f.Decision, f.By, f.DecidedBy, f.DecisionID, f.Interrupt
	r.PermissionMode, r.Status, r.Reason, r.TotalCostUSD = f.PermissionMode, f.Status, f.Reason, f.TotalCostUSD
	switch ev.EventType {
	case wire.TypeApprovalRequested:
		r.InputSHA256 = wire.InputDigest(f.Input)
	case wire.TypeApprovalResolved:
		if wire.Present(ev.ApprovalInput) {
			r.InputSHA256 = wire.InputDigest(ev.ApprovalInput)
		}
		if wire.Present(f.UpdatedInput) {
			r.UpdatedInputSHA256 = wire.InputDigest(f.UpdatedInput)
		}
	}
	r.ExitCode = f.ExitCode
	if r.ExitCode == nil && f.Result != nil {
		r.ExitCode = f.Result.ExitCode
	}
	r.Data = trim(ev.EventData)
	return r
}

// trim is data without the dropped members; data that is not an object is
// kept as it is.
func trim(data json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || m == nil {
		if !json.Valid(data) {
			return json.RawMessage("null")
		}
		return data
	}
	for _, k := range dropped {
		delete(m, k)
	}
	// Sorted keys: the same data gives the same bytes.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(m) != nil {
		return json.RawMessage("null")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Line is r as one line of JSON Lines, newline included. HTML is not
// escaped: a SIEM reads the record, no browser does.
func (r Record) Line() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
