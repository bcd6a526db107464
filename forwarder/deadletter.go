package forwarder

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// deadLetter keeps an event the backend refused for good, or found to be
// poison, and moves on. It reports false when the dead letter could not be
// written: the event stays.
// refusals is how many refusals in a row made it poison; 0: refused for good.
func (f *Forwarder) deadLetter(s *sessionSpool, r record, status int, reason string, refusals int) bool {
	line, _ := json.Marshal(struct {
		DeadAt   time.Time       `json:"dead_at"`
		Status   int             `json:"status"`
		Reason   string          `json:"reason"`
		Poison   bool            `json:"poison,omitempty"`
		Backend  string          `json:"backend"` // the destination it was refused by
		Envelope json.RawMessage `json:"envelope"`
	}{time.Now().UTC(), status, truncate(reason, 2048), refusals > 0, f.policy.dest, r.payload})
	if err := appendLine(filepath.Join(f.opts.Dir, "dead", escapeID(s.id)+".jsonl"), line); err != nil {
		f.report(s, Error{Code: CodeDelivery, SessionID: s.id, Message: "cannot write dead letter: " + err.Error()})
		return false
	}
	if err := s.acknowledge(r.end, r.size); err != nil {
		f.report(s, Error{Code: CodeDelivery, SessionID: s.id, Message: err.Error()})
	}
	f.bytes.Add(-r.size)
	f.pending.Add(-1)
	f.deadLettered.Add(1)
	msg := fmt.Sprintf("the backend refused event %s (HTTP %d: %s); kept in the dead-letter file", r.eventID, status, truncate(reason, 200))
	if refusals > 0 {
		msg = fmt.Sprintf("the backend refused event %s with HTTP %d %d times in a row (%s) while it stored other events; "+
			"it is kept in the dead-letter file so that the session's later events go on: fix the backend, then "+
			"`claude-relay spool flush --dead-letters` sends it again", r.eventID, status, refusals, snippet([]byte(reason), 200))
	}
	f.report(s, Error{Code: CodeDeadLetter, SessionID: s.id, Status: status, Message: msg})
	return true
}

func appendLine(path string, line []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = fh.Write(append(line, '\n'))
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}
