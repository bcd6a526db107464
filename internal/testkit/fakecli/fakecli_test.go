package fakecli_test

import (
	"os"
	"testing"

	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
)

// TestMain is the wiring every consumer copies: inside a fake CLI process
// RunIfHelper takes over and never returns.
func TestMain(m *testing.M) {
	fakecli.RunIfHelper()
	os.Exit(m.Run())
}
