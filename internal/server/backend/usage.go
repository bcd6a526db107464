package backend

import (
	"net/http"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// usageResponse is GET /api/usage's answer: the store's rows and their sum.
type usageResponse struct {
	Rows   []store.UsageRow `json:"rows"`
	Totals usageTotals      `json:"totals"`
}

// usageTotals sums every row. Distinct sessions cannot be summed from
// per-day rows (a session spans days and models), so there is no session
// count here.
type usageTotals struct {
	Usage   store.Usage `json:"usage"`
	CostUSD float64     `json:"total_cost_usd"`
	Results int64       `json:"results"`
}

// handleUsage is GET /api/usage?from=&to=&project=: spend and tokens per
// (day, model, project), aggregated by the store in SQL, with totals. from
// and to read as in the session list (RFC 3339 or a UTC date; a date in to
// includes that day); both empty means all time.
func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, to, err := timeRange(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	start := time.Now()
	rows, err := s.store.Usage(r.Context(), store.UsageQuery{From: from, To: to, Project: q.Get("project")})
	setServerTiming(w, time.Since(start))
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	if rows == nil {
		rows = []store.UsageRow{}
	}
	writeJSON(w, http.StatusOK, usageResponse{Rows: rows, Totals: sumUsage(rows)})
}

func sumUsage(rows []store.UsageRow) usageTotals {
	var t usageTotals
	for _, r := range rows {
		t.Usage = t.Usage.Add(r.Usage)
		t.CostUSD += r.CostUSD
		t.Results += r.Results
	}
	return t
}
