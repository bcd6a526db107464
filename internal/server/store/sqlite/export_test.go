package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/claude-relay/claude-relay/internal/server/store/storetest"
)

// CreateOld creates a database at path with the migrations up to version
// only, and runs stmts in it: a database an older release left.
func CreateOld(ctx context.Context, path string, version int, stmts []storetest.Statement) (err error) {
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	if err := migrateTo(ctx, db, version); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st.SQL, st.Args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}
