package browser

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// WaitJS waits until the JavaScript expression expr is true in the page of
// ctx (a Tab's Ctx), failing tb after d. It evaluates in a loop rather than
// with chromedp.Poll, because a navigation (a form submit) destroys the
// page's context under a running poll; an evaluation that fails meanwhile
// is tried again, and its error is reported if time runs out.
func WaitJS(tb testing.TB, ctx context.Context, expr string, d time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(d)
	var lastErr error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		lastErr = err
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("waiting %v for %s: last error %v", d, expr, lastErr)
}
