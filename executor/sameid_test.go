package executor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/fakecli"
)

// Two helpers (two editor windows, two test binaries) may each run a run of
// the same ID at once: run IDs are the client's. The end of one used to kill
// every process on the machine marked with that ID, the other helper's CLI
// included, whose run then failed with "exited without a result". Each
// executor here plays one helper.
func TestSameRunIDInAnotherHelperIsLeftAlone(t *testing.T) {
	asked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	approver := approverFunc(func(ctx context.Context, _ ApprovalRequest) (Decision, error) {
		once.Do(func() { close(asked) })
		select {
		case <-release:
			return Decision{Allow: true}, nil
		case <-ctx.Done(): // the run ended under us
			return Decision{}, ctx.Err()
		}
	})
	type outcome struct {
		res *Result
		err error
	}
	waiting := make(chan outcome, 1)
	go func() {
		res, _, err := fakeRun(t, context.Background(), fakecli.ModeTool, Request{RunOptions: RunOptions{Approvals: true}, RunID: "same"}, approver)
		waiting <- outcome{res, err}
	}()
	select {
	case <-asked:
	case o := <-waiting:
		t.Fatalf("the first run ended before asking for approval: %+v %v", o.res, o.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the first run never asked for approval")
	}

	// Its CLI waits for the answer while the other helper's run of the same
	// ID starts and ends, cleaning up after itself.
	res, _, err := fakeRun(t, context.Background(), fakecli.ModeNormal, Request{RunID: "same"}, nil)
	if err != nil || res.Status != StatusCompleted {
		t.Fatalf("the other helper's run: %+v %v", res, err)
	}

	close(release)
	o := <-waiting
	if o.err != nil || o.res.Status != StatusCompleted || o.res.Stdout == "" {
		t.Errorf("the run waiting for its approval: %s (%s) %+v %v", o.res.Status, o.res.Reason, o.res, o.err)
	}
}
