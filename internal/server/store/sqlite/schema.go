package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migrations are applied in order; version i+1 is migrations[i]. Append
// only: a released migration never changes.
//
// Times are Unix nanoseconds (INTEGER), 0 meaning "none"; see ingest.Nanos.
var migrations = []string{
	// 1: events, the derived session state, and what the derivation keeps.
	`
CREATE TABLE sessions (
	id                          TEXT PRIMARY KEY,
	external_conversation_id    TEXT    NOT NULL DEFAULT '',
	conversation_ids            TEXT    NOT NULL DEFAULT '[]', -- JSON []ConversationRef
	status                      TEXT    NOT NULL DEFAULT 'unknown',
	event_count                 INTEGER NOT NULL DEFAULT 0,
	interaction_count           INTEGER NOT NULL DEFAULT 0,
	input_tokens                INTEGER NOT NULL DEFAULT 0,
	output_tokens               INTEGER NOT NULL DEFAULT 0,
	cache_read_input_tokens     INTEGER NOT NULL DEFAULT 0,
	cache_creation_input_tokens INTEGER NOT NULL DEFAULT 0,
	total_cost_usd              REAL    NOT NULL DEFAULT 0,
	created_at                  INTEGER NOT NULL,
	updated_at                  INTEGER NOT NULL,
	started_at                  INTEGER,
	ended_at                    INTEGER,
	last_cursor                 INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_recent ON sessions (updated_at DESC, id);

CREATE TABLE events (
	event_id       TEXT PRIMARY KEY,
	session_id     TEXT    NOT NULL REFERENCES sessions (id),
	cursor         INTEGER NOT NULL,
	interaction_id TEXT    NOT NULL,
	seq            INTEGER NOT NULL,
	event_type     TEXT    NOT NULL,
	event_data     TEXT    NOT NULL, -- as received
	timestamp      INTEGER NOT NULL,
	source         TEXT    NOT NULL,
	received_at    INTEGER NOT NULL,
	UNIQUE (session_id, cursor)
);

-- One aggregate per interaction (store.Interaction), so that an Append
-- updates the derived state without reading the session's events.
CREATE TABLE interactions (
	session_id     TEXT    NOT NULL REFERENCES sessions (id),
	interaction_id TEXT    NOT NULL,
	event_count    INTEGER NOT NULL,
	first_event_at INTEGER NOT NULL,
	conv_id        TEXT    NOT NULL,
	conv_seq       INTEGER NOT NULL,
	conv_at        INTEGER NOT NULL,
	lifecycle_seq  INTEGER NOT NULL,
	status         TEXT    NOT NULL,
	lifecycle_at   INTEGER NOT NULL,
	started_seq    INTEGER NOT NULL,
	started_at     INTEGER NOT NULL,
	PRIMARY KEY (session_id, interaction_id)
) WITHOUT ROWID;
CREATE INDEX interactions_recent ON interactions (session_id, first_event_at, interaction_id);
CREATE INDEX interactions_conv ON interactions (session_id, conv_at, interaction_id)
	WHERE conv_id <> '';

-- The CLI results counted in a session's usage (store.Result.Key).
CREATE TABLE results (
	session_id TEXT NOT NULL REFERENCES sessions (id),
	result_key TEXT NOT NULL,
	event_id   TEXT NOT NULL,
	PRIMARY KEY (session_id, result_key)
) WITHOUT ROWID;
`,
	// 2: what the session list shows and searches (issue 16), usage rows by
	// day and model, approvals and their remote decisions (issue 17). The
	// backfill (backfills[2]) derives them for the sessions stored before.
	`
ALTER TABLE sessions ADD COLUMN title     TEXT    NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN project   TEXT    NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN source    TEXT    NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN model     TEXT    NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN turns     INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN list_keys TEXT    NOT NULL DEFAULT '{}'; -- JSON store.Listing
-- The list pages on (updated_at, id) descending, ties included.
DROP INDEX sessions_recent;
CREATE INDEX sessions_list ON sessions (updated_at DESC, id DESC);

-- store.AddSearch's text, apart from sessions: every Append rewrites its
-- session's row, which should not carry up to 64 KiB of text each time.
CREATE TABLE session_search (
	session_id TEXT PRIMARY KEY REFERENCES sessions (id),
	text       TEXT NOT NULL
);

-- A counted result's usage by model (store.CountedResult.Rows); model ''
-- stands for the session's model, read when aggregating.
CREATE TABLE result_usage (
	session_id                  TEXT    NOT NULL REFERENCES sessions (id),
	result_key                  TEXT    NOT NULL,
	model                       TEXT    NOT NULL,
	day                         TEXT    NOT NULL, -- YYYY-MM-DD, UTC
	at                          INTEGER NOT NULL, -- the result's envelope timestamp
	input_tokens                INTEGER NOT NULL,
	output_tokens               INTEGER NOT NULL,
	cache_read_input_tokens     INTEGER NOT NULL,
	cache_creation_input_tokens INTEGER NOT NULL,
	cost_usd                    REAL    NOT NULL,
	PRIMARY KEY (session_id, result_key, model)
) WITHOUT ROWID;
CREATE INDEX result_usage_at ON result_usage (at);

-- store.ApprovalRecord (columns ingest.ApprovalColumns, written at ingest)
-- and the remote decision (ingest.RemoteColumns, written by Decide).
CREATE TABLE approvals (
	approval_id          TEXT PRIMARY KEY,
	session_id           TEXT    NOT NULL REFERENCES sessions (id),
	run_id               TEXT    NOT NULL,
	tool_name            TEXT    NOT NULL,
	title                TEXT    NOT NULL,
	input                TEXT    NOT NULL, -- JSON as received, '' for none
	kind                 TEXT    NOT NULL,
	options              TEXT    NOT NULL, -- JSON []string
	requested_at         INTEGER NOT NULL,
	state                TEXT    NOT NULL,
	decision             TEXT    NOT NULL,
	resolved_by          TEXT    NOT NULL,
	reason               TEXT    NOT NULL,
	resolved_at          INTEGER,
	requested            INTEGER NOT NULL,
	request_event        TEXT    NOT NULL,
	closure              INTEGER NOT NULL,
	closure_event        TEXT    NOT NULL,
	decision_id          TEXT    NOT NULL DEFAULT '', -- '' until Decide
	remote_decision      TEXT    NOT NULL DEFAULT '',
	remote_reason        TEXT    NOT NULL DEFAULT '',
	remote_updated_input TEXT    NOT NULL DEFAULT '',
	remote_answers       TEXT    NOT NULL DEFAULT '',
	remote_by            TEXT    NOT NULL DEFAULT '',
	decided_at           INTEGER NOT NULL DEFAULT 0,
	notified_at          INTEGER NOT NULL DEFAULT 0 -- ClaimNotify's claim
);
CREATE INDEX approvals_recent ON approvals (requested_at DESC, approval_id DESC);
CREATE INDEX approvals_state ON approvals (state, requested_at DESC, approval_id DESC);
CREATE INDEX approvals_run ON approvals (session_id, run_id);

-- The earliest end of each run, which closes approvals requested after it.
CREATE TABLE run_ends (
	session_id TEXT    NOT NULL REFERENCES sessions (id),
	run_id     TEXT    NOT NULL,
	at         INTEGER NOT NULL,
	event_id   TEXT    NOT NULL,
	PRIMARY KEY (session_id, run_id)
) WITHOUT ROWID;

-- The backfill counts every result again, with its usage rows.
DELETE FROM results;
`,
	// 3: an event_id is unique within its session only (issue 22): one
	// session can no longer make another's event a duplicate by reusing its
	// ID. SQLite cannot change a primary key in place, so the table is
	// rebuilt with the same columns in the same order; every row keeps its
	// values (event IDs were unique across sessions, so they still are
	// within each).
	`
CREATE TABLE events_v3 (
	event_id       TEXT    NOT NULL,
	session_id     TEXT    NOT NULL REFERENCES sessions (id),
	cursor         INTEGER NOT NULL,
	interaction_id TEXT    NOT NULL,
	seq            INTEGER NOT NULL,
	event_type     TEXT    NOT NULL,
	event_data     TEXT    NOT NULL, -- as received
	timestamp      INTEGER NOT NULL,
	source         TEXT    NOT NULL,
	received_at    INTEGER NOT NULL,
	PRIMARY KEY (session_id, event_id),
	UNIQUE (session_id, cursor)
);
INSERT INTO events_v3 (event_id, session_id, cursor, interaction_id, seq, event_type, event_data,
	timestamp, source, received_at)
SELECT event_id, session_id, cursor, interaction_id, seq, event_type, event_data,
	timestamp, source, received_at FROM events;
DROP TABLE events;
ALTER TABLE events_v3 RENAME TO events;
`,
	// 4: session titles by issue 23's rule (prompts recorded in full, a
	// title's rank kept in list_keys): no schema change; the backfill
	// (backfills[4]) derives every session's list fields again.
	`SELECT 1`,
	// 5: a run cancelled after its turn completed was closed while idle
	// (issue 23): interactions keep the seq of their completed turn, and
	// the backfill (backfills[5]) derives every session's status again.
	`ALTER TABLE interactions ADD COLUMN turn_done_seq INTEGER NOT NULL DEFAULT 0`,
	// 6: pushes sent once per key across processes (ClaimNotice): a
	// budget's warning per threshold per period (issue 26).
	`CREATE TABLE notices (
	key        TEXT PRIMARY KEY,
	claimed_at INTEGER NOT NULL
) WITHOUT ROWID`,
	// 7: where each session's runs are billed (issue 26, "billed to": the
	// list shows it, so it is a column); the backfill (backfills[7])
	// derives every session's list fields again, this one with them, from
	// the stored relay.billing_source and system/init events.
	`ALTER TABLE sessions ADD COLUMN billed_to TEXT NOT NULL DEFAULT ''`,
	// 8: the central policy's rule that asked for an approval (issue 26:
	// the dashboard says when only it may decide, and why); the backfill
	// (backfills[8]) folds every session's approvals again from the stored
	// relay.approval_requested events, this time with them.
	`ALTER TABLE approvals ADD COLUMN approver TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN policy_rule TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN policy_reason TEXT NOT NULL DEFAULT '';`,
}

// backfills derive, in Go, what a migration's new columns and tables hold
// for the data stored before it. They run after every migration's SQL (they
// use this build's statements, written for the newest schema), in version
// order, in the migration transaction.
var backfills = map[int]func(ctx context.Context, tx *sql.Tx) error{
	2: backfill,
	4: backfillTitles,
	5: backfillStatuses,
	7: backfillTitles,
	8: backfillApprovals,
}

// migrate brings the schema up to date. The transaction begins IMMEDIATE
// (see dsn), which takes SQLite's write lock first, so two processes opening
// one file at once apply each migration once.
func migrate(ctx context.Context, db *sql.DB) error {
	return migrateTo(ctx, db, len(migrations))
}

// migrateTo brings the schema up to version target (tests build old
// databases with it).
func migrateTo(ctx context.Context, db *sql.DB, target int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > len(migrations) {
		return fmt.Errorf("database schema version %d is newer than this build supports (%d): use a newer claude-relay", current, len(migrations))
	}
	for v := current + 1; v <= target; v++ {
		if _, err := tx.ExecContext(ctx, migrations[v-1]); err != nil {
			return fmt.Errorf("apply migration %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
			v, time.Now().UnixNano()); err != nil {
			return fmt.Errorf("record migration %d: %w", v, err)
		}
	}
	// A new database (current 0) has nothing to backfill.
	for v := current + 1; current > 0 && v <= target; v++ {
		if fill := backfills[v]; fill != nil {
			if err := fill(ctx, tx); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit migrations: %w", err)
	}
	return nil
}

// SchemaVersions lists the applied migrations, for diagnostics and tests.
func (s *Store) SchemaVersions(ctx context.Context) ([]int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: schema versions: %w", err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("sqlite: schema versions: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: schema versions: %w", err)
	}
	return out, nil
}
