package executor

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
)

func TestMain(m *testing.M) {
	fakecli.RunIfHelper()
	if os.Getenv(hostEnv) != "" {
		runHost() // a process that runs the executor and gets SIGKILLed
		return
	}
	goleak.VerifyTestMain(m)
}
