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
}

// migrate brings the schema up to date in one transaction that holds an
// advisory lock, so that when several processes start at once one applies
// the migrations and the others then find them applied.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
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
		for v := current + 1; v <= len(migrations); v++ {
			if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
				return fmt.Errorf("apply migration %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`,
				v, time.Now().UnixNano()); err != nil {
				return fmt.Errorf("record migration %d: %w", v, err)
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
