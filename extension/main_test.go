package extension

import (
	"os"
	"testing"

	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
)

// TestMain lets this test binary be the fake CLI the approval benchmark
// runs (fakecli): inside the fake, RunIfHelper never returns.
func TestMain(m *testing.M) {
	fakecli.RunIfHelper()
	os.Exit(m.Run())
}
