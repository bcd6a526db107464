package storetest

import (
	"context"
	"testing"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// testClaimNotice: of concurrent claimers of one key exactly one wins, a
// later claim loses, and another key is claimed on its own.
func testClaimNotice(t *testing.T, s store.Store) {
	NoticeRace(t, []store.Store{s}, "budget:*:day:2026-03-10:warning", 16)
	if ok, err := s.ClaimNotice(context.Background(), "budget:*:day:2026-03-10:warning"); ok || err != nil {
		t.Errorf("ClaimNotice(claimed) = %v, %v; want false, nil", ok, err)
	}
	if ok, err := s.ClaimNotice(context.Background(), "budget:*:day:2026-03-10:exhausted"); !ok || err != nil {
		t.Errorf("ClaimNotice(other key) = %v, %v; want true, nil", ok, err)
	}
}

// NoticeRace: of n claimers of key per store, exactly one gets true.
func NoticeRace(t *testing.T, stores []store.Store, key string, n int) {
	t.Helper()
	race(t, stores, n, "ClaimNotice("+key+")", func(s store.Store) (bool, error) {
		return s.ClaimNotice(context.Background(), key)
	})
}
