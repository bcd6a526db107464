package relay

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/claude-relay/claude-relay/internal/fsutil"
)

// State remembers the last conversation ID of each workspace, for
// resume_last_session. It lives in one small JSON file in the data dir.
type State struct {
	path string
	mu   sync.Mutex
}

// NewState keeps state in dir/last_conversations.json.
func NewState(dir string) *State {
	return &State{path: filepath.Join(dir, "last_conversations.json")}
}

// Last returns the last conversation ID of a workspace, or "".
func (s *State) Last(workspace string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read()[filepath.Clean(workspace)]
}

// Set records id as the last conversation of a workspace.
func (s *State) Set(workspace, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.read()
	m[filepath.Clean(workspace)] = id
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	return fsutil.WriteFileAtomic(s.path, b)
}

func (s *State) read() map[string]string {
	m := map[string]string{}
	if b, err := os.ReadFile(s.path); err == nil {
		_ = json.Unmarshal(b, &m) // a damaged file only loses resume_last_session
	}
	return m
}
