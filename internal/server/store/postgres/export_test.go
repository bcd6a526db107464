package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/claude-relay/claude-relay/internal/server/store/storetest"
)

// CreateOld brings the database at url to the migrations up to version
// only, and runs stmts in it: a database an older release left.
func CreateOld(ctx context.Context, url string, version int, stmts []storetest.Statement) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrateTo(ctx, pool, version); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, st := range stmts {
			if _, err := tx.Exec(ctx, st.SQL, st.Args...); err != nil {
				return err
			}
		}
		return nil
	})
}
