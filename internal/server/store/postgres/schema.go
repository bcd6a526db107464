package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationLock is the key of the advisory lock that serializes migrations
// across processes ("claude-relay" as a number).
const migrationLock int64 = 0x636c617564652d72

// migrations are applied in order; version i+1 is migrations[i]. Append
// only: a released migration never changes. The columns are those of
// package sqlite, so that one algorithm (package ingest) serves both.
//
// Times are Unix nanoseconds (bigint), 0 meaning "none": exact, where
// timestamptz keeps microseconds. IDs compare with COLLATE "C" (byte order),
// as Go does, so ties break the same way in SQL as in store.MoreRecent
// whatever the database's default collation. event_data is text, stored
// byte for byte as received (json would refuse some escapes Go accepts;
// jsonb would reorder keys); cast it to json to query it.
var migrations = []string{
	// 1: events, the derived session state, and what the derivation keeps.
	`
CREATE TABLE sessions (
	id                          text COLLATE "C" PRIMARY KEY,
	external_conversation_id    text    NOT NULL DEFAULT '',
	conversation_ids            text    NOT NULL DEFAULT '[]', -- JSON []ConversationRef
	status                      text    NOT NULL DEFAULT 'unknown',
	event_count                 bigint  NOT NULL DEFAULT 0,
	interaction_count           bigint  NOT NULL DEFAULT 0,
	input_tokens                bigint  NOT NULL DEFAULT 0,
	output_tokens               bigint  NOT NULL DEFAULT 0,
	cache_read_input_tokens     bigint  NOT NULL DEFAULT 0,
	cache_creation_input_tokens bigint  NOT NULL DEFAULT 0,
	total_cost_usd              double precision NOT NULL DEFAULT 0,
	created_at                  bigint  NOT NULL,
	updated_at                  bigint  NOT NULL,
	started_at                  bigint,
	ended_at                    bigint,
	last_cursor                 bigint  NOT NULL DEFAULT 0
);
CREATE INDEX sessions_recent ON sessions (updated_at DESC, id);

CREATE TABLE events (
	event_id       text PRIMARY KEY,
	session_id     text COLLATE "C" NOT NULL REFERENCES sessions (id),
	cursor         bigint NOT NULL,
	interaction_id text   NOT NULL,
	seq            bigint NOT NULL,
	event_type     text   NOT NULL,
	event_data     text   NOT NULL,
	timestamp      bigint NOT NULL,
	source         text   NOT NULL,
	received_at    bigint NOT NULL,
	UNIQUE (session_id, cursor)
);

CREATE TABLE interactions (
	session_id     text COLLATE "C" NOT NULL REFERENCES sessions (id),
	interaction_id text COLLATE "C" NOT NULL,
	event_count    bigint NOT NULL,
	first_event_at bigint NOT NULL,
	conv_id        text   NOT NULL,
	conv_seq       bigint NOT NULL,
	conv_at        bigint NOT NULL,
	lifecycle_seq  bigint NOT NULL,
	status         text   NOT NULL,
	lifecycle_at   bigint NOT NULL,
	started_seq    bigint NOT NULL,
	started_at     bigint NOT NULL,
	PRIMARY KEY (session_id, interaction_id)
);
CREATE INDEX interactions_recent ON interactions (session_id, first_event_at, interaction_id);
CREATE INDEX interactions_conv ON interactions (session_id, conv_at, interaction_id)
	WHERE conv_id <> '';

CREATE TABLE results (
	session_id text COLLATE "C" NOT NULL REFERENCES sessions (id),
	result_key text NOT NULL,
	event_id   text NOT NULL,
	PRIMARY KEY (session_id, result_key)
);
`,
	// 2: what the session list shows and searches (issue 16), usage rows by
	// day and model, approvals and their remote decisions (issue 17); the
	// columns of package sqlite's migration 2. The backfill (backfills[2])
	// derives them for the sessions stored before.
	`
ALTER TABLE sessions
	ADD COLUMN title     text   NOT NULL DEFAULT '',
	ADD COLUMN project   text   NOT NULL DEFAULT '',
	ADD COLUMN source    text   NOT NULL DEFAULT '',
	ADD COLUMN model     text   NOT NULL DEFAULT '',
	ADD COLUMN turns     bigint NOT NULL DEFAULT 0,
	ADD COLUMN list_keys text   NOT NULL DEFAULT '{}'; -- JSON store.Listing
-- The list pages on (updated_at, id) descending, ties included.
DROP INDEX sessions_recent;
CREATE INDEX sessions_list ON sessions (updated_at DESC, id DESC);

-- store.AddSearch's text, apart from sessions, which every Append updates.
CREATE TABLE session_search (
	session_id text COLLATE "C" PRIMARY KEY REFERENCES sessions (id),
	text       text NOT NULL
);

-- A counted result's usage by model; model '' stands for the session's.
CREATE TABLE result_usage (
	session_id                  text COLLATE "C" NOT NULL REFERENCES sessions (id),
	result_key                  text   NOT NULL,
	model                       text   NOT NULL,
	day                         text   NOT NULL, -- YYYY-MM-DD, UTC
	at                          bigint NOT NULL, -- the result's envelope timestamp
	input_tokens                bigint NOT NULL,
	output_tokens               bigint NOT NULL,
	cache_read_input_tokens     bigint NOT NULL,
	cache_creation_input_tokens bigint NOT NULL,
	cost_usd                    double precision NOT NULL,
	PRIMARY KEY (session_id, result_key, model)
);
CREATE INDEX result_usage_at ON result_usage (at);

-- store.ApprovalRecord (ingest.ApprovalColumns, written at ingest) and the
-- remote decision (ingest.RemoteColumns, written by Decide).
CREATE TABLE approvals (
	approval_id          text COLLATE "C" PRIMARY KEY,
	session_id           text COLLATE "C" NOT NULL REFERENCES sessions (id),
	run_id               text    NOT NULL,
	tool_name            text    NOT NULL,
	title                text    NOT NULL,
	input                text    NOT NULL, -- JSON as received, '' for none
	kind                 text    NOT NULL,
	options              text    NOT NULL, -- JSON []string
	requested_at         bigint  NOT NULL,
	state                text    NOT NULL,
	decision             text    NOT NULL,
	resolved_by          text    NOT NULL,
	reason               text    NOT NULL,
	resolved_at          bigint,
	requested            integer NOT NULL,
	request_event        text    NOT NULL,
	closure              integer NOT NULL,
	closure_event        text    NOT NULL,
	decision_id          text    NOT NULL DEFAULT '', -- '' until Decide
	remote_decision      text    NOT NULL DEFAULT '',
	remote_reason        text    NOT NULL DEFAULT '',
	remote_updated_input text    NOT NULL DEFAULT '',
	remote_answers       text    NOT NULL DEFAULT '',
	remote_by            text    NOT NULL DEFAULT '',
	decided_at           bigint  NOT NULL DEFAULT 0,
	notified_at          bigint  NOT NULL DEFAULT 0 -- ClaimNotify's claim
);
CREATE INDEX approvals_recent ON approvals (requested_at DESC, approval_id DESC);
CREATE INDEX approvals_state ON approvals (state, requested_at DESC, approval_id DESC);
CREATE INDEX approvals_run ON approvals (session_id, run_id);

-- The earliest end of each run, which closes approvals requested after it.
CREATE TABLE run_ends (
	session_id text COLLATE "C" NOT NULL REFERENCES sessions (id),
	run_id     text   NOT NULL,
	at         bigint NOT NULL,
	event_id   text COLLATE "C" NOT NULL,
	PRIMARY KEY (session_id, run_id)
);

-- The backfill counts every result again, with its usage rows.
DELETE FROM results;
`,
	// 3: an event_id is unique within its session only (issue 22), as in
	// package sqlite's migration 3. Existing rows were unique by event_id
	// alone, so they are by (session_id, event_id) too.
	`
ALTER TABLE events DROP CONSTRAINT events_pkey;
ALTER TABLE events ADD PRIMARY KEY (session_id, event_id);
`,
	// 4: session titles by issue 23's rule (prompts recorded in full, a
	// title's rank kept in list_keys): no schema change; the backfill
	// (backfills[4]) derives every session's list fields again.
	`SELECT 1`,
	// 5: a run cancelled after its turn completed was closed while idle
	// (issue 23): interactions keep the seq of their completed turn, and
	// the backfill (backfills[5]) derives every session's status again.
	`ALTER TABLE interactions ADD COLUMN turn_done_seq bigint NOT NULL DEFAULT 0`,
	// 6: pushes sent once per key across replicas (ClaimNotice), as in
	// package sqlite's migration 6.
	`CREATE TABLE notices (
	key        text COLLATE "C" PRIMARY KEY,
	claimed_at bigint NOT NULL
)`,
	// 7: where each session's runs are billed (issue 26, "billed to"), as
	// in package sqlite's migration 7; the backfill (backfills[7]) derives
	// every session's list fields again, this one with them.
	`ALTER TABLE sessions ADD COLUMN billed_to text NOT NULL DEFAULT ''`,
	// 8: the audit trail's order (issue 26, audit.go): the writing
	// transaction's ID and an identity within it. Self-contained: it only
	// adds to events. Rows stored before get this migration's transaction
	// ID and identities in table order.
	auditMigration,
	// 9: the central policy's rule that asked for an approval, as in
	// package sqlite's migration 8; the backfill (backfills[9]) folds every
	// session's approvals again, this time with it.
	`ALTER TABLE approvals ADD COLUMN approver text NOT NULL DEFAULT '',
	ADD COLUMN policy_rule text NOT NULL DEFAULT '',
	ADD COLUMN policy_reason text NOT NULL DEFAULT ''`,
}

// backfills derive, in Go, what a migration's new columns and tables hold
// for the data stored before it. They run after every migration's SQL (they
// use this build's statements, written for the newest schema), in version
// order, in the migration transaction.
var backfills = map[int]func(ctx context.Context, tx pgx.Tx) error{
	2: backfill,
	4: backfillTitles,
	5: backfillStatuses,
	7: backfillTitles,
	9: backfillApprovals,
}

// migrate brings the schema up to date in one transaction that holds an
// advisory lock, so that when several processes start at once one applies
// the migrations and the others then find them applied.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return migrateTo(ctx, pool, len(migrations))
}

// migrateTo brings the schema up to version target (tests build old
// databases with it).
func migrateTo(ctx context.Context, pool *pgxpool.Pool, target int) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("lock migrations: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			applied_at bigint  NOT NULL
		)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if current > len(migrations) {
			return fmt.Errorf("database schema version %d is newer than this build supports (%d): use a newer claude-relay", current, len(migrations))
		}
		for v := current + 1; v <= target; v++ {
			if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
				return fmt.Errorf("apply migration %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`,
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
		return nil
	})
}

// SchemaVersions lists the applied migrations, for diagnostics and tests.
func (s *Store) SchemaVersions(ctx context.Context) ([]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("postgres: schema versions: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("postgres: schema versions: %w", err)
	}
	return out, nil
}
