package backend

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/audit"
	"github.com/claude-relay/claude-relay/internal/server/store"
	auditwire "github.com/claude-relay/claude-relay/internal/wire" // helpers_test.go has a func wire
)

// AuditNextHeader is GET /api/audit's trailer (wire.AuditNextHeader).
const AuditNextHeader = auditwire.AuditNextHeader

// auditDefaultLimit is a page's size when the request names none.
const auditDefaultLimit = 1000

// auditFlushEvery bounds what a slow page holds in the response buffer
// before the client sees it.
const auditFlushEvery = 100

// handleAudit is GET /api/audit?from=&to=&project=&after=&limit= (issue
// 26, docs/audit.md): the audit trail as JSON Lines, streamed from the
// store row by row, in the store's ingest order. from and to bound the
// backend's receive time and read as in /api/usage; project is a
// session's project, exact. The audit scope guards it (requiredScope).
func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request) {
	ar, ok := s.store.(store.AuditReader)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this store cannot list the audit trail")
		return
	}
	q := r.URL.Query()
	from, to, err := timeRange(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	limit := auditDefaultLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxAuditLimit {
			writeError(w, http.StatusBadRequest, "limit "+strconv.Quote(v)+" is not a number from 1 to "+
				strconv.Itoa(store.MaxAuditLimit))
			return
		}
		limit = n
	}
	aq := store.AuditQuery{From: from, To: to, Project: q.Get("project"), After: q.Get("after"), Limit: limit}
	next, n := aq.After, 0
	rc := http.NewResponseController(w)
	start := time.Now()
	err = ar.Audit(r.Context(), aq, func(ev store.AuditEvent) error {
		line, err := audit.FromEvent(ev).Line()
		if err != nil {
			return err
		}
		if n == 0 {
			startAudit(w)
		}
		n++
		if _, err := w.Write(line); err != nil {
			return err
		}
		next = ev.Position
		if n%auditFlushEvery == 0 {
			_ = rc.Flush()
		}
		return nil
	})
	setServerTiming(w, time.Since(start))
	switch {
	case err != nil && n > 0:
		// The status is sent: the client sees a page cut short, and the
		// trailer says where it was cut, so it continues from there.
		s.log.Warn("backend: audit page cut short", "after", aq.After, "records", n, "err", err)
	case errors.Is(err, store.ErrBadAuditCursor):
		writeError(w, http.StatusBadRequest, "after "+strconv.Quote(aq.After)+
			" is not a cursor of this backend's audit trail: pass a record's cursor, or none to start at the beginning")
		return
	case err != nil:
		s.storeError(w, r, err)
		return
	case n == 0:
		startAudit(w)
	}
	w.Header().Set(AuditNextHeader, next)
}

// startAudit sends the trail's headers, announcing the trailer.
func startAudit(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", audit.ContentType)
	h.Set("Cache-Control", "no-store")
	h.Set("Trailer", AuditNextHeader)
	w.WriteHeader(http.StatusOK)
}
