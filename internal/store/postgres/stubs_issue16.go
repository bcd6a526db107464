package postgres

import (
	"context"
	"errors"

	"github.com/claude-relay/claude-relay/internal/store"
)

// TODO(store helper): replace these stubs.
var errTODO = errors.New("not implemented yet")

func (s *Store) Usage(context.Context, store.UsageQuery) ([]store.UsageRow, error) {
	return nil, errTODO
}
func (s *Store) Approvals(context.Context, store.ApprovalFilter) ([]store.Approval, error) {
	return nil, errTODO
}
func (s *Store) Approval(context.Context, string) (store.Approval, error) {
	return store.Approval{}, errTODO
}
func (s *Store) Decide(context.Context, store.Decision) (store.Approval, error) {
	return store.Approval{}, errTODO
}
func (s *Store) Decisions(context.Context, []string) ([]store.Decision, error) { return nil, errTODO }
func (s *Store) ClaimNotify(context.Context, string) (bool, error)             { return false, errTODO }
