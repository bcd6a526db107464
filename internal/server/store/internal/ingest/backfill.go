package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// Source is what a backfill reads: the stored sessions and their events.
type Source interface {
	SessionIDs(ctx context.Context) ([]string, error)
	// Events returns all of a session's events in cursor order.
	Events(ctx context.Context, sessionID string) ([]store.Event, error)
}

// Backfill derives, for every stored session, what the rules of issues 16
// and 17 keep beside the events (store.DeriveAll): usage, cost and turns by
// the per-model result rule, the list fields, the search text, the usage
// rows, the approvals and the ends of runs. A migration runs it once, in its
// transaction, after emptying the results table (its rows are written again
// with their usage rows); the other tables it fills are new. It reads one
// session's events at a time.
func Backfill(ctx context.Context, tx Tx, src Source) error {
	ids, err := src.SessionIDs(ctx)
	if err != nil {
		return fmt.Errorf("backfill: list sessions: %w", err)
	}
	for _, id := range ids {
		if err := backfillSession(ctx, tx, src, id); err != nil {
			return fmt.Errorf("backfill: session %q: %w", id, err)
		}
	}
	return nil
}

func backfillSession(ctx context.Context, tx Tx, src Source, id string) error {
	events, err := src.Events(ctx, id)
	if err != nil {
		return err
	}
	d := store.DeriveAll(events)
	states, err := tx.LockSessions(ctx, []string{id}, time.Now())
	if err != nil {
		return err
	}
	st := states[id]
	st.Usage, st.CostUSD, st.Turns = d.Session.Usage, d.Session.CostUSD, d.Session.Turns
	st.Listing = d.Listing
	st.Listing.Fill(&st.Session)
	w := Writes{}
	for _, c := range d.Results {
		w.Results = append(w.Results, resultRow(id, c))
	}
	if d.Search != "" {
		w.Search = append(w.Search, SearchRow{SessionID: id, Text: d.Search})
	}
	if err := approvalWrites(ctx, tx, id, d.Approvals, &w); err != nil {
		return err
	}
	for _, run := range sortedKeys(d.RunEnds) {
		w.RunEnds = append(w.RunEnds, RunEndRow{SessionID: id, RunID: run, RunEndRef: d.RunEnds[run]})
	}
	if err := tx.Write(ctx, w); err != nil {
		return err
	}
	return tx.UpdateSession(ctx, st)
}

// approvalWrites adds to w the session's approvals as its events make
// them, but for those whose approval_id another session used first: they
// stay that session's.
func approvalWrites(ctx context.Context, tx Tx, id string, recs map[string]*store.ApprovalRecord, w *Writes) error {
	ids := sortedKeys(recs)
	stored, err := tx.Approvals(ctx, id, ids, nil)
	if err != nil {
		return err
	}
	for _, aid := range ids {
		if r, ok := stored[aid]; ok && r.SessionID != id {
			continue
		}
		w.Approvals = append(w.Approvals, *recs[aid])
	}
	return nil
}

// BackfillApprovals folds, for every stored session, its approvals again
// from its events (the columns events make; a remote decision stays).
// SQLite's migration 8 and PostgreSQL's 9 run it: approvals stored before
// have no approver, policy_rule or policy_reason, which their
// relay.approval_requested events carry.
func BackfillApprovals(ctx context.Context, tx Tx, src Source) error {
	ids, err := src.SessionIDs(ctx)
	if err != nil {
		return fmt.Errorf("backfill approvals: list sessions: %w", err)
	}
	for _, id := range ids {
		events, err := src.Events(ctx, id)
		if err != nil {
			return fmt.Errorf("backfill approvals: session %q: %w", id, err)
		}
		w := Writes{}
		if err := approvalWrites(ctx, tx, id, store.DeriveAll(events).Approvals, &w); err != nil {
			return fmt.Errorf("backfill approvals: session %q: %w", id, err)
		}
		if len(w.Approvals) == 0 {
			continue
		}
		if err := tx.Write(ctx, w); err != nil {
			return fmt.Errorf("backfill approvals: session %q: %w", id, err)
		}
	}
	return nil
}

// BackfillTitles derives again, for every stored session, its list fields
// (store.Listing: title, project, source and model, with the keys they came
// from) by this release's rules. Migration 4 runs it: issue 23 records
// prompts in full and ranks titles (a prompt as given outranks the summary
// an older helper recorded for a prompt with content blocks; an idle start
// has none), and rows stored before have no rank. Nothing else a session
// derives changed, so nothing else is written.
func BackfillTitles(ctx context.Context, tx Tx, src Source) error {
	ids, err := src.SessionIDs(ctx)
	if err != nil {
		return fmt.Errorf("backfill titles: list sessions: %w", err)
	}
	for _, id := range ids {
		events, err := src.Events(ctx, id)
		if err != nil {
			return fmt.Errorf("backfill titles: session %q: %w", id, err)
		}
		l := store.DeriveAll(events).Listing
		states, err := tx.LockSessions(ctx, []string{id}, time.Now())
		if err != nil {
			return fmt.Errorf("backfill titles: session %q: %w", id, err)
		}
		st := states[id]
		st.Listing = l
		st.Listing.Fill(&st.Session)
		if err := tx.UpdateSession(ctx, st); err != nil {
			return fmt.Errorf("backfill titles: session %q: %w", id, err)
		}
	}
	return nil
}

// BackfillStatuses folds, for every stored session, its interactions again
// from its events and derives its status by this release's rules, and
// counts the turns and tokens of terminal runs that a helper before these
// rules left uncounted. Migration 5 runs it (issue 23): a run cancelled
// after its turn completed was closed while idle
// (store.Interaction.Outcome), which the interactions stored before did
// not record; a terminal run's turns and tokens are in its transcript
// (store.TerminalTurns; its cost is not, and stays unknown).
func BackfillStatuses(ctx context.Context, tx Tx, src Source) error {
	ids, err := src.SessionIDs(ctx)
	if err != nil {
		return fmt.Errorf("backfill statuses: list sessions: %w", err)
	}
	for _, id := range ids {
		if err := backfillStatus(ctx, tx, src, id); err != nil {
			return fmt.Errorf("backfill statuses: session %q: %w", id, err)
		}
	}
	return nil
}

func backfillStatus(ctx context.Context, tx Tx, src Source, id string) error {
	events, err := src.Events(ctx, id)
	if err != nil {
		return err
	}
	ins := store.FoldInteractions(events)
	w := Writes{}
	for _, in := range ins {
		w.Interactions = append(w.Interactions, InteractionRow{SessionID: id, Interaction: in})
	}
	states, err := tx.LockSessions(ctx, []string{id}, time.Now())
	if err != nil {
		return err
	}
	st := states[id]
	if in, ok := store.MostRecent(ins); ok {
		st.Status, st.StartedAt, st.EndedAt = in.Outcome()
	}
	turns := store.TerminalTurns(events)
	rows := make([]ResultRow, len(turns))
	byKey := map[string]*store.Result{}
	for i, c := range turns {
		rows[i], byKey[c.Key] = resultRow(id, c), c.Result
	}
	if err := countResults(ctx, tx, st, rows, byKey, &w); err != nil {
		return err
	}
	if err := tx.Write(ctx, w); err != nil {
		return err
	}
	return tx.UpdateSession(ctx, st)
}
