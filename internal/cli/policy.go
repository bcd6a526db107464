package cli

import (
	"context"
	"path/filepath"
	"sync/atomic"

	"github.com/claude-relay/claude-relay/internal/policy"
)

// policySource is the executor's central policy. The executor is built
// before the backend is known (the CLI is checked first), so the client is
// set once the backend is: until then, and without a backend, no policy.
type policySource struct {
	c atomic.Pointer[policy.Client]
}

// Current implements executor.PolicySource.
func (p *policySource) Current(ctx context.Context) (*policy.Policy, policy.Source) {
	c := p.c.Load()
	if c == nil {
		return nil, policy.FromNone
	}
	return c.Current(ctx)
}

// prefetch fetches the policy once when the helper starts (the host runs
// it and stops it at close): else a helper whose first tool call came with
// the backend down, and no cache file yet, would enforce nothing. The
// client's own timeout bounds it, and a hook asking meanwhile waits for
// this fetch rather than starting another.
func (p *policySource) prefetch(ctx context.Context) {
	p.Current(ctx) // the client keeps it, and its cache file, for the tool calls
}

// policyClient fetches the backend's policy with the token the helper
// posts with, keeping the last one in the data dir for offline starts.
// Only the helper's own fetch writes that file: nothing a client sends
// reaches it (SECURITY.md says what a same-user agent can still do).
func (a *App) policyClient(backend *backendConn) *policy.Client {
	c := a.loaded.Config
	return policy.NewClient(policy.ClientOptions{URL: backend.URL, Token: a.forwarderOptions(backend).Token,
		CachePath: filepath.Join(c.DataDir, policy.CacheFile), Logger: a.log})
}
