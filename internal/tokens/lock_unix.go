//go:build unix

package tokens

import "github.com/claude-relay/claude-relay/internal/fsutil"

// lockFile takes an exclusive flock(2) on path (created 0600), so two
// `token create` runs never lose one another's token.
func lockFile(path string) (unlock func(), err error) { return fsutil.Lock(path, true) }
