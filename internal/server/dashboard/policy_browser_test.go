package dashboard_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/internal/testkit/browser"
)

// TestPolicyApprovalInBrowser: an approval the central policy's
// dashboard-only rule asked for says so, with the rule and its reason, on
// the approvals page's card and the session page's; the rule and reason
// stay text (no markup from them); an approval no rule asked for says
// nothing of a policy.
func TestPolicyApprovalInBrowser(t *testing.T) {
	s := newApprovalsSite(t)
	const (
		rule   = "Bash(git push *)"
		reason = `pushes need a <img src=x onerror="window.__pwned=1">second pair of eyes`
		want   = "dashboard only Only the dashboard may decide: the team's central policy (rule " + rule + ": " + reason + ")"
	)
	asks := apAsks("run-1", "ap-push", "tool", "Bash", "git push origin main", map[string]any{"command": "git push origin main"}, "allow", "deny")
	d := asks.data.(map[string]any)
	d["approver"], d["policy_rule"], d["policy_reason"] = "dashboard", rule, reason
	s.post("s-push", apRunStarted("run-1", "push the fix"), asks,
		apAsks("run-1", "ap-ls", "tool", "Bash", "ls", map[string]any{"command": "ls"}, "allow", "deny"))

	tab := browser.New(t, browser.Options{})
	ctx := tab.Ctx
	apRecord(t, ctx)
	apLogin(t, ctx, s.url, apPhoneToken)
	browser.WaitJS(t, ctx, `!!document.querySelector(`+jsString(apCard("ap-push"))+`) && !!document.querySelector(`+jsString(apCard("ap-ls"))+`)`, 10*time.Second)

	check := func(where, css string) {
		t.Helper()
		got := browser.Eval[string](t, ctx, `(() => { const p = document.querySelector(`+jsString(css+" .a-policy")+`); return p ? p.textContent : '(none)'; })()`)
		if got != want {
			t.Errorf("%s: policy note %q\n\twant %q", where, got, want)
		}
		if n := browser.Eval[int](t, ctx, `document.querySelectorAll(`+jsString(css+" .a-policy img, "+css+" .a-policy b")+`).length`); n != 0 {
			t.Errorf("%s: %d elements from the reason's markup", where, n)
		}
		if r := browser.Eval[string](t, ctx, `document.querySelector(`+jsString(css+" .a-policy code.a-policy-rule")+`).textContent`); r != rule {
			t.Errorf("%s: rule %q", where, r)
		}
	}
	check("approvals page", apCard("ap-push"))
	if n := browser.Eval[int](t, ctx, `document.querySelectorAll(`+jsString(apCard("ap-ls")+" .a-policy")+`).length`); n != 0 {
		t.Errorf("approvals page: an approval no rule asked for has %d policy notes", n)
	}
	screenshot(t, tab, "approval-policy.png", 900, 600)

	must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/s-push#approval-ap-push")))
	card := `.approval-card[data-approval-id="ap-push"]`
	browser.WaitJS(t, ctx, `!!document.querySelector(`+jsString(card+" .a-policy")+`)`, 10*time.Second)
	check("session page", card)
	if n := browser.Eval[int](t, ctx, `document.querySelectorAll('.approval-card[data-approval-id="ap-ls"] .a-policy').length`); n != 0 {
		t.Errorf("session page: an approval no rule asked for has %d policy notes", n)
	}
	if browser.Eval[bool](t, ctx, `!!window.__pwned`) {
		t.Error("the reason's markup ran")
	}
	screenshot(t, tab, "approval-policy-session.png", 900, 600)
	noScriptErrors(t, tab)
}
