package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/backend"
	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
	"github.com/claude-relay/claude-relay/internal/server/dashboard"
	"github.com/claude-relay/claude-relay/internal/server/peer"
	"github.com/claude-relay/claude-relay/internal/testkit/browser"
	"github.com/claude-relay/claude-relay/internal/tokens"
)

// Tokens of the approvals site, besides the ingest token the events are
// posted with: two that may approve and one that may only read.
const (
	apPhoneToken  = "approve-token-phone-4c1f9a"
	apLaptopToken = "approve-token-laptop-8d2e0b"
	apViewerToken = "read-token-viewer-1a7c3e"
)

// newApprovalsSite is newSite with scoped tokens: phone and laptop may
// approve, viewer may only read. opts change the server's options.
func newApprovalsSite(t *testing.T, opts ...func(*backend.Options)) *site {
	t.Helper()
	o := backend.Options{
		Store:  memstore.New(),
		Tokens: func() []config.Secret { return []config.Secret{token} },
		ServeTokens: func() []config.ServeToken {
			return []config.ServeToken{
				{Name: "phone", Token: apPhoneToken, Scopes: []tokens.Scope{tokens.Approve}},
				{Name: "laptop", Token: apLaptopToken, Scopes: []tokens.Scope{tokens.Approve}},
				{Name: "viewer", Token: apViewerToken, Scopes: []tokens.Scope{tokens.Read}},
			}
		},
	}
	for _, f := range opts {
		f(&o)
	}
	return &site{t: t, url: serve(t, o), seq: map[string]int64{}}
}

// call sends one API request with a Bearer token and decodes a JSON answer
// into out (when not nil); it returns the status.
func (s *site) apCall(method, path, bearer string, body, out any) int {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && json.Unmarshal(b, out) != nil {
		s.t.Fatalf("%s %s: HTTP %d, not JSON: %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// approval is what GET /api/approvals/{id} says, as far as these tests
// look.
type apApproval struct {
	InputSHA256 string `json:"input_sha256"`
	State       string `json:"state"`
	Decision    string `json:"decision"`
	By          string `json:"by"`
	Reason      string `json:"reason"`
	Remote      *struct {
		Decision     string            `json:"decision"`
		By           string            `json:"by"`
		Reason       string            `json:"reason"`
		UpdatedInput map[string]any    `json:"updated_input"`
		Answers      map[string]string `json:"answers"`
	} `json:"remote_decision"`
}

func (s *site) apGet(id string) apApproval {
	s.t.Helper()
	var a apApproval
	if code := s.apCall("GET", "/api/approvals/"+id, token, nil, &a); code != http.StatusOK {
		s.t.Fatalf("GET approval %s: HTTP %d", id, code)
	}
	return a
}

// The relay's events of a run that asks for approvals.
func apRunStarted(run, prompt string) ev {
	return ev{"relay.run_started", "relay", map[string]any{"run_id": run, "prompt": prompt, "cwd": "/work/project"}}
}

func apAsks(run, id, kind, tool, title string, input map[string]any, options ...string) ev {
	return ev{"relay.approval_requested", "relay", map[string]any{"run_id": run, "approval_id": id, "kind": kind,
		"tool_name": tool, "title": title, "input": input, "options": options}}
}

func apResolved(run, id, decision, by string) ev {
	return ev{"relay.approval_resolved", "relay", map[string]any{"run_id": run, "approval_id": id, "decision": decision, "by": by}}
}

// apRecorder runs before the page's scripts: it records every
// `new Notification(...)` (and every permission request) instead of
// showing one, and the body of every POST the page sends.
const apRecorder = `(() => {
  const Real = window.Notification;
  window.__notes = [];
  window.__permissionAsks = 0;
  window.__posts = [];
  class Recorded {
    constructor(title, opts) {
      (window.__noteObjs = window.__noteObjs || []).push(this);
      this.title = title;
      this.body = opts && opts.body;
      window.__notes.push({ title: String(title), body: String(opts && opts.body), tag: String(opts && opts.tag) });
    }
    close() {}
    static get permission() { return window.__permission || (Real ? Real.permission : 'denied'); }
    static requestPermission() { window.__permissionAsks++; return Promise.resolve(Recorded.permission); }
  }
  window.Notification = Recorded;
  const realFetch = window.fetch;
  window.__polls = [];
  window.fetch = function (url, opts) {
    if (opts && opts.method === 'POST') window.__posts.push({ url: String(url), body: String(opts.body) });
    if (String(url) === '/api/approvals?state=pending') window.__polls.push(performance.now());
    return realFetch.apply(this, arguments);
  };
})();`

// recordPage installs apRecorder for every page the tab loads.
func apRecord(t *testing.T, ctx context.Context) {
	t.Helper()
	_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: apRecorder})
	must(t, err)
}

// loginAs logs the tab in with tok and lands on /approvals once its list
// has loaded.
func apLogin(t *testing.T, ctx context.Context, base, tok string) {
	t.Helper()
	loginAs(t, ctx, base+"/login?next=/approvals", tok,
		`location.pathname === "/approvals" && document.body.dataset.pendingApprovals !== undefined && document.body.dataset.pendingApprovals !== ""`)
}

// apOpenOne posts one pending approval, ap-1 (Bash: make clean), and opens
// /approvals in a new tab logged in with tok, once its card is shown.
func apOpenOne(t *testing.T, s *site, tok string) (*browser.Tab, context.Context) {
	t.Helper()
	s.post("s1", apRunStarted("run-1", "clean up"),
		apAsks("run-1", "ap-1", "tool", "Bash", "make clean", map[string]any{"command": "make clean"}, "allow", "allow_always", "deny"))
	tab := browser.New(t, browser.Options{})
	apLogin(t, tab.Ctx, s.url, tok)
	browser.WaitJS(t, tab.Ctx, `!!document.querySelector(`+jsString(apCard("ap-1"))+`)`, 10*time.Second)
	return tab, tab.Ctx
}

func apCard(id string) string { return `.approval[data-approval-id="` + id + `"]` }

func apClick(t *testing.T, ctx context.Context, css string) {
	t.Helper()
	must(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(css))))
}

// waitStatus waits for a card's status line to contain want.
func apWaitStatus(t *testing.T, ctx context.Context, id, want string) {
	t.Helper()
	browser.WaitJS(t, ctx, `((document.querySelector(`+jsString(apCard(id)+` .a-status`)+`) || {}).textContent || '').includes(`+jsString(want)+`)`, 10*time.Second)
}

// TestApprovalsInBrowser drives /approvals in headless Chromium against
// the real backend on memstore: pending approvals appear live with what
// they would do in full, each button posts the decision it names, a lost
// race says who won, resolved approvals move to their own list, the tab
// title and a notification tell about new ones, and nothing from an
// approval is ever markup.
func TestApprovalsInBrowser(t *testing.T) {
	s := newApprovalsSite(t)
	s.post("s-bash", apRunStarted("run-b", "tidy the logs"))
	s.post("s-q", apRunStarted("run-q", "pick a color"))

	tab := browser.New(t, browser.Options{Width: 1280, Height: 900})
	ctx := tab.Ctx
	_, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: cdpbrowser.PermissionSettingGranted, Origin: s.url})
	must(t, err)
	apRecord(t, ctx)
	apLogin(t, ctx, s.url, apPhoneToken)

	command := "for f in *.log; do\n  gzip -9 \"$f\"\ndone && echo compressed " + strings.Repeat("--verbose ", 30)
	t.Run("a new approval: card, title and notification", func(t *testing.T) {
		who := browser.Eval[string](t, ctx, `document.getElementById('who').textContent`)
		if !strings.Contains(who, "phone") || !strings.Contains(who, "approve") {
			t.Errorf("who %q: want the login's name and its approve scope", who)
		}
		if hidden := browser.Eval[string](t, ctx, `String(document.getElementById('readonly').hidden)`); hidden != "true" {
			t.Errorf("the read-only note shows for an approve login")
		}
		if n := browser.Eval[string](t, ctx, `document.body.dataset.pendingApprovals`); n != "0" {
			t.Fatalf("pending at first: %s", n)
		}
		s.post("s-bash", apAsks("run-b", "ap-bash", "tool", "Bash", command, map[string]any{"command": command, "description": "Compress the logs"}, "allow", "allow_always", "deny"))
		browser.WaitJS(t, ctx, `!!document.querySelector(`+jsString(apCard("ap-bash"))+`)`, 10*time.Second)
		if got := browser.Eval[string](t, ctx, `document.querySelector(`+jsString(apCard("ap-bash")+` .a-cmd`)+`).textContent`); got != command {
			t.Errorf("command shown %q, want it in full: %q", got, command)
		}
		// Monospace and wrapped, not cut off.
		style := browser.Eval[string](t, ctx, `(() => { const s = getComputedStyle(document.querySelector(`+jsString(apCard("ap-bash")+` .a-cmd`)+`)); return s.whiteSpace + ' ' + s.fontFamily; })()`)
		if !strings.HasPrefix(style, "pre-wrap") || !strings.Contains(style, "monospace") {
			t.Errorf("command style %q", style)
		}
		buttons := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll(`+jsString(apCard("ap-bash")+` .a-actions button`)+`)).map(b => b.textContent)`)
		if strings.Join(buttons, ",") != "Allow,Always,Edit,Deny" {
			t.Errorf("buttons %q", buttons)
		}
		session := browser.Eval[string](t, ctx, `(() => { const a = document.querySelector(`+jsString(apCard("ap-bash")+` a.a-session`)+`); return a.textContent + ' ' + a.getAttribute('href'); })()`)
		if session != "tidy the logs /sessions/s-bash#approval-ap-bash" {
			t.Errorf("session link %q", session)
		}
		browser.WaitJS(t, ctx, `document.title === "(1) claude-relay: approvals"`, 10*time.Second)
		browser.WaitJS(t, ctx, `window.__notes.length === 1`, 10*time.Second)
		bodyWant := string([]rune(strings.Join(strings.Fields(command), " "))[:119]) + "…"
		var note struct{ Title, Body, Tag string }
		must(t, json.Unmarshal([]byte(browser.Eval[string](t, ctx, `JSON.stringify(window.__notes[0])`)), &note))
		if note.Title != "Claude wants to run Bash" || note.Body != bodyWant || note.Tag != "ap-bash" {
			t.Errorf("notification %+v, want the title, body %q and tag ap-bash", note, bodyWant)
		}
		if n := browser.Eval[string](t, ctx, `String(window.__permissionAsks)`); n != "0" {
			t.Errorf("the page asked for the notification permission %s times on its own", n)
		}
		// A click on it shows the approval.
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.__noteObjs[0].onclick()`)))
		browser.WaitJS(t, ctx, `location.hash === "#ap-bash" && !!document.querySelector(`+jsString(apCard("ap-bash")+`.target`)+`)`, 10*time.Second)
	})

	t.Run("edits, questions and plans in full", func(t *testing.T) {
		s.post("s-q",
			apAsks("run-q", "ap-edit", "tool", "Edit", "/work/project/main.go", map[string]any{"file_path": "/work/project/main.go",
				"old_string": "one\ntwo\nthree\nfour", "new_string": "one\n2\nthree\nfour\nfive"}, "allow", "allow_always", "deny"),
			apAsks("run-q", "ap-q", "question", "AskUserQuestion", "Which color?", map[string]any{"questions": []any{
				map[string]any{"question": "Which color?", "header": "Color", "options": []any{
					map[string]any{"label": "Red", "description": "warm"}, map[string]any{"label": "Blue"}}},
				map[string]any{"question": "Which sizes?", "multiSelect": true, "options": []any{
					map[string]any{"label": "S"}, map[string]any{"label": "M"}, map[string]any{"label": "L"}}},
			}}, "allow", "deny"),
			apAsks("run-q", "ap-plan", "plan", "ExitPlanMode", "Plan", map[string]any{"plan": "1. read the code\n2. <b>fix</b> it"}, "accept_edits", "default", "keep_planning"),
		)
		browser.WaitJS(t, ctx, `document.querySelectorAll('.approval').length === 4`, 10*time.Second)
		order := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.approval')).map(c => c.dataset.approvalId)`)
		if strings.Join(order, ",") != "ap-plan,ap-q,ap-edit,ap-bash" {
			t.Errorf("cards in order %q, want newest first", order)
		}
		diff := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll(`+jsString(apCard("ap-edit")+` .a-diff .dl`)+`)).map(l => l.className + '|' + l.textContent)`)
		wantDiff := []string{"dl ctx|  one", "dl del|- two", "dl add|+ 2", "dl ctx|  three", "dl ctx|  four", "dl add|+ five"}
		if strings.Join(diff, "\n") != strings.Join(wantDiff, "\n") {
			t.Errorf("diff:\n%s\nwant:\n%s", strings.Join(diff, "\n"), strings.Join(wantDiff, "\n"))
		}
		if p := browser.Eval[string](t, ctx, `document.querySelector(`+jsString(apCard("ap-edit")+` .a-path`)+`).textContent`); p != "/work/project/main.go" {
			t.Errorf("edit path %q", p)
		}
		qs := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll(`+jsString(apCard("ap-q")+` fieldset`)+`)).map(f =>
			f.querySelector('legend').textContent + ': ' + Array.from(f.querySelectorAll('label')).map(l => l.querySelector('input').type + ' ' + l.textContent).join(', '))`)
		wantQs := []string{"ColorWhich color?: radio Redwarm, radio Blue", "Which sizes?: checkbox S, checkbox M, checkbox L"}
		if strings.Join(qs, "\n") != strings.Join(wantQs, "\n") {
			t.Errorf("questions:\n%s\nwant:\n%s", strings.Join(qs, "\n"), strings.Join(wantQs, "\n"))
		}
		if plan := browser.Eval[string](t, ctx, `document.querySelector(`+jsString(apCard("ap-plan")+` .a-plan`)+`).textContent`); plan != "1. read the code\n2. <b>fix</b> it" {
			t.Errorf("plan %q", plan)
		}
		buttons := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll(`+jsString(apCard("ap-plan")+` .a-actions button`)+`)).map(b => b.dataset.decision)`)
		if strings.Join(buttons, ",") != "accept_edits,default,keep_planning" {
			t.Errorf("plan buttons %q", buttons)
		}
		browser.WaitJS(t, ctx, `document.title === "(4) claude-relay: approvals"`, 10*time.Second)
		// Three new ones in one list: one notification each.
		browser.WaitJS(t, ctx, `window.__notes.length === 4`, 10*time.Second)
		titles := browser.Eval[[]string](t, ctx, `window.__notes.slice(1).map(n => n.title)`)
		want := "Claude wants to run Edit,Claude has a question for you,Claude wants to leave plan mode"
		if strings.Join(titles, ",") != want {
			t.Errorf("notifications %q, want %s", titles, want)
		}
	})

	t.Run("Allow posts the decision", func(t *testing.T) {
		apClick(t, ctx, apCard("ap-bash")+` button[data-decision="allow"]`)
		apWaitStatus(t, ctx, "ap-bash", "Allowed by you")
		a := s.apGet("ap-bash")
		// The decision names the input the card showed, by its digest.
		want := `{"url":"/api/approvals/ap-bash/decision","body":"{\"decision\":\"allow\",\"input_sha256\":\"` + a.InputSHA256 + `\"}"}`
		if post := browser.Eval[string](t, ctx, `JSON.stringify(window.__posts.pop())`); a.InputSHA256 == "" || post != want {
			t.Errorf("posted %s, want %s", post, want)
		}
		if a.Remote == nil || a.Remote.Decision != "allow" || a.Remote.By != "dashboard:phone" {
			t.Errorf("stored decision %+v", a.Remote)
		}
		if hidden := browser.Eval[string](t, ctx, `String(document.querySelector(`+jsString(apCard("ap-bash")+` .a-actions`)+`).hidden)`); hidden != "true" {
			t.Errorf("the buttons still show after the decision")
		}
	})

	t.Run("answers and a plan sent back with a reason", func(t *testing.T) {
		apClick(t, ctx, apCard("ap-q")+` button[data-decision="allow"]`)
		apWaitStatus(t, ctx, "ap-q", "Answer every question first")
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(() => {
			const c = document.querySelector(`+jsString(apCard("ap-q"))+`);
			const fs = c.querySelectorAll('fieldset');
			fs[0].querySelectorAll('input')[1].click();             // Blue
			fs[1].querySelectorAll('input[type=checkbox]')[0].click(); // S
			fs[1].querySelectorAll('input[type=checkbox]')[2].click(); // L
			const other = fs[1].querySelector('input[type=text]');
			other.value = 'XL';
			other.dispatchEvent(new Event('input'));
		})()`)))
		apClick(t, ctx, apCard("ap-q")+` button[data-decision="allow"]`)
		apWaitStatus(t, ctx, "ap-q", "Answered by you")
		a := s.apGet("ap-q")
		if a.Remote == nil || a.Remote.Decision != "allow" || a.Remote.Answers["Which color?"] != "Blue" || a.Remote.Answers["Which sizes?"] != "S, L, XL" {
			t.Errorf("stored answers %+v", a.Remote)
		}

		must(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(apCard("ap-plan")+` input.reason`), "smaller steps")))
		apClick(t, ctx, apCard("ap-plan")+` button[data-decision="keep_planning"]`)
		apWaitStatus(t, ctx, "ap-plan", "Sent back to planning by you")
		a = s.apGet("ap-plan")
		if a.Remote == nil || a.Remote.Decision != "keep_planning" || a.Remote.Reason != "smaller steps" {
			t.Errorf("stored plan decision %+v", a.Remote)
		}
	})

	t.Run("Edit sends the edited command", func(t *testing.T) {
		s.post("s-bash", apAsks("run-b", "ap-bash2", "tool", "Bash", "rm -rf build", map[string]any{"command": "rm -rf build", "description": "Clean"}, "allow", "allow_always", "deny"))
		browser.WaitJS(t, ctx, `!!document.querySelector(`+jsString(apCard("ap-bash2"))+`)`, 10*time.Second)
		apClick(t, ctx, apCard("ap-bash2")+` button.edit`)
		ta := apCard("ap-bash2") + ` textarea`
		if v := browser.Eval[string](t, ctx, `document.querySelector(`+jsString(ta)+`).value`); v != "rm -rf build" {
			t.Errorf("the editor starts with %q", v)
		}
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector(`+jsString(ta)+`).value = 'rm -rf build/tmp'`)))
		apClick(t, ctx, apCard("ap-bash2")+` .a-edit button.allow`)
		apWaitStatus(t, ctx, "ap-bash2", "Allowed by you")
		a := s.apGet("ap-bash2")
		if a.Remote == nil || a.Remote.Decision != "allow" || a.Remote.UpdatedInput["command"] != "rm -rf build/tmp" || a.Remote.UpdatedInput["description"] != "Clean" {
			t.Errorf("stored edit %+v", a.Remote)
		}
	})

	t.Run("decided elsewhere first: 409 says who", func(t *testing.T) {
		var out map[string]any
		if code := s.apCall("POST", "/api/approvals/ap-edit/decision", apLaptopToken, map[string]any{"decision": "deny", "reason": "not now"}, &out); code != http.StatusOK {
			t.Fatalf("the laptop's decision: HTTP %d %v", code, out)
		}
		apClick(t, ctx, apCard("ap-edit")+` button[data-decision="allow"]`)
		apWaitStatus(t, ctx, "ap-edit", "Already decided by api:laptop: deny")
		// A new copy of the list (the laptop's decision is in it) must not
		// hide who won. Listeners run in order: once ours has seen the
		// refreshed list, the page's has too.
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.__lists = 0; CRPending.onUpdate(() => window.__lists++); CRPending.refresh()`)))
		browser.WaitJS(t, ctx, `window.__lists >= 2`, 10*time.Second)
		if st := browser.Eval[string](t, ctx, `document.querySelector(`+jsString(apCard("ap-edit")+` .a-status`)+`).textContent`); st != "Already decided by api:laptop: deny" {
			t.Errorf("status after a refresh: %q", st)
		}
	})

	t.Run("resolved approvals leave with their reason", func(t *testing.T) {
		s.post("s-bash", apResolved("run-b", "ap-bash", "allow", "dashboard"))
		item := `#resolved li[data-approval-id="ap-bash"]`
		browser.WaitJS(t, ctx, `!document.querySelector(`+jsString(apCard("ap-bash"))+`) && !!document.querySelector(`+jsString(item)+`)`, 10*time.Second)
		if got := browser.Eval[string](t, ctx, `document.querySelector(`+jsString(item+` .r-outcome`)+`).textContent`); got != "Allowed by dashboard:phone" {
			t.Errorf("outcome %q", got)
		}
		// The run of the question and the plan ends: both leave, cancelled.
		s.post("s-q", ev{"relay.run_completed", "relay", map[string]any{"run_id": "run-q", "status": "completed", "result": map[string]any{"exitCode": 0}}})
		browser.WaitJS(t, ctx, `!document.querySelector(`+jsString(apCard("ap-q"))+`) && !!document.querySelector('#resolved li[data-approval-id="ap-q"]')`, 10*time.Second)
		got := browser.Eval[string](t, ctx, `document.querySelector('#resolved li[data-approval-id="ap-q"]').textContent`)
		if !strings.Contains(got, "Cancelled") || !strings.Contains(got, "the run ended") {
			t.Errorf("resolved by the run's end: %q", got)
		}
		// What is left was decided and waits for its run: nobody's turn.
		browser.WaitJS(t, ctx, `document.title === "claude-relay: approvals" && document.body.dataset.pendingApprovals === "0"`, 10*time.Second)
	})

	t.Run("deep link", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/approvals#ap-bash2")))
		browser.WaitJS(t, ctx, `!!document.querySelector(`+jsString(apCard("ap-bash2")+`.target`)+`)`, 10*time.Second)
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/approvals#ap-plan")))
		browser.WaitJS(t, ctx, `!!document.querySelector('#resolved li.target[data-approval-id="ap-plan"]')`, 10*time.Second)
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/approvals#no-such-approval")))
		browser.WaitJS(t, ctx, `!document.getElementById('missing').hidden`, 10*time.Second)
		if msg := browser.Eval[string](t, ctx, `document.getElementById('missing').textContent`); !strings.Contains(msg, "no-such-approval") {
			t.Errorf("missing approval note %q", msg)
		}
	})

	t.Run("event text is never markup", func(t *testing.T) {
		s.post("s-bash", apAsks("run-b", "ap-xss", "tool", "mcp__x__"+xss, xss, map[string]any{"html": xss, "pwn": `<script>window.__pwned=1</script>`}, "allow", "deny"))
		browser.WaitJS(t, ctx, `!!document.querySelector(`+jsString(apCard("ap-xss"))+`)`, 10*time.Second)
		got := browser.Eval[string](t, ctx, `document.querySelector(`+jsString(apCard("ap-xss"))+`).textContent`)
		if !strings.Contains(got, xss) || !strings.Contains(got, "mcp__x__"+xss) {
			t.Errorf("card text %q lacks the literal %q", got, xss)
		}
		if n := browser.Eval[string](t, ctx, `String(document.querySelectorAll('main img, main script').length)`); n != "0" {
			t.Errorf("%s <img>/<script> elements in the page", n)
		}
		if p := browser.Eval[string](t, ctx, `String(window.__pwned)`); p != "undefined" {
			t.Errorf("a script from the approval ran")
		}
		if d := tab.Dialogs(); len(d) > 0 {
			t.Errorf("the page opened dialogs: %q", d)
		}
	})

	t.Run("every page has the badge and the count", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/")))
		browser.WaitJS(t, ctx, `document.body.dataset.pendingApprovals === "1"`, 10*time.Second)
		browser.WaitJS(t, ctx, `document.title.startsWith("(1) ")`, 10*time.Second)
		badge := browser.Eval[string](t, ctx, `(() => { const b = document.querySelector('header.top #approvals-badge'); return b.textContent + ' ' + b.getAttribute('href'); })()`)
		if badge != "Approvals 1 /approvals" {
			t.Errorf("badge %q", badge)
		}
		// A session page that sets its own title keeps the count in front.
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/sessions/s-bash")))
		browser.WaitJS(t, ctx, `document.body.dataset.pendingApprovals === "1"`, 10*time.Second)
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.title = 'a title of its own'`)))
		browser.WaitJS(t, ctx, `document.title.startsWith("(1) ")`, 10*time.Second)
		// Nobody was notified twice across the page loads.
		if n := browser.Eval[string](t, ctx, `String(window.__notes.length)`); n != "0" {
			t.Errorf("%s notifications again after a page load", n)
		}
	})

	t.Run("at most one list request a second", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/approvals")))
		browser.WaitJS(t, ctx, `document.body.dataset.pendingApprovals === "1"`, 10*time.Second)
		for i := range 15 {
			s.post(fmt.Sprintf("busy-%d", i), apRunStarted(fmt.Sprintf("run-busy-%d", i), "busy"))
			time.Sleep(100 * time.Millisecond)
		}
		browser.WaitJS(t, ctx, `window.__polls.length >= 2`, 10*time.Second)
		polls := browser.Eval[string](t, ctx, `JSON.stringify(window.__polls)`)
		var at []float64
		must(t, json.Unmarshal([]byte(polls), &at))
		for i := 1; i < len(at); i++ {
			if gap := at[i] - at[i-1]; gap < 990 {
				t.Errorf("list requests %.0f ms apart (all: %v)", gap, at)
			}
		}
	})

	t.Run("no script errors", func(t *testing.T) {
		// The lost race is a 409 by design, the link to an unknown
		// approval a 404.
		noScriptErrors(t, tab, "409", "404")
	})
}

// TestApprovalsReadOnlyLogin: a login without the approve scope sees what
// waits but no buttons, and a note saying how to get a token that may
// decide.
func TestApprovalsReadOnlyLogin(t *testing.T) {
	tab, ctx := apOpenOne(t, newApprovalsSite(t), apViewerToken)
	if cmd := browser.Eval[string](t, ctx, `document.querySelector(`+jsString(apCard("ap-1")+` .a-cmd`)+`).textContent`); cmd != "make clean" {
		t.Errorf("command %q", cmd)
	}
	visible := browser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.approval button')).filter(b => b.offsetParent !== null).map(b => b.textContent)`)
	if len(visible) > 0 {
		t.Errorf("buttons shown to a read-only login: %q", visible)
	}
	note := browser.Eval[string](t, ctx, `(() => { const n = document.getElementById('readonly'); return n.hidden ? '' : n.textContent.replace(/\s+/g, ' ').trim(); })()`)
	if note != "This login can't approve: create a token with claude-relay token create --scope approve and log in with it" {
		t.Errorf("note %q", note)
	}
	if who := browser.Eval[string](t, ctx, `document.getElementById('who').textContent`); !strings.Contains(who, "viewer") || strings.Contains(who, "approve") {
		t.Errorf("who %q", who)
	}
	if e := tab.Exceptions(); len(e) > 0 {
		t.Errorf("uncaught exceptions: %q", e)
	}
}

// TestNotificationPermissionOnClick: the page never asks for the
// notification permission by itself; a button does, on a click.
func TestNotificationPermissionOnClick(t *testing.T) {
	s := newApprovalsSite(t)
	tab := browser.New(t, browser.Options{})
	ctx := tab.Ctx
	apRecord(t, ctx)
	_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `window.__permission = 'default';`})
	must(t, err)
	apLogin(t, ctx, s.url, apViewerToken)
	browser.WaitJS(t, ctx, `!!document.getElementById('notify-enable') && !document.getElementById('notify-enable').hidden`, 10*time.Second)
	if n := browser.Eval[string](t, ctx, `String(window.__permissionAsks)`); n != "0" {
		t.Errorf("asked %s times before any click", n)
	}
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.__permission = 'granted'`)))
	apClick(t, ctx, "#notify-enable")
	browser.WaitJS(t, ctx, `window.__permissionAsks === 1 && document.getElementById('notify-enable').hidden`, 10*time.Second)
}

// TestPendingQuietOnOldBackend: against a backend without the approvals
// API (404), pages show no badge and raise no script error.
func TestPendingQuietOnOldBackend(t *testing.T) {
	mux := http.NewServeMux()
	dashboard.Register(mux, dashboard.Pages{})
	mux.HandleFunc("GET /api/", http.NotFound)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	tab := browser.New(t, browser.Options{})
	ctx := tab.Ctx
	apRecord(t, ctx)
	_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: countStreams})
	must(t, err)
	must(t, chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/approvals")))
	// The feed has had its answer (404) or was closed on the list's: it
	// brings no news that would ask again.
	browser.WaitJS(t, ctx, `window.__polls.length >= 1 && document.body.dataset.pendingApprovals === "" && window.__streams.every(es => es.readyState === 2)`, 10*time.Second)
	// Nothing asks again: not a refresh, not the feed.
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`CRPending.refresh()`)))
	// The barrier, on the page's own clock rather than a pause: a refresh
	// that did ask would start its request from a timer due at most a
	// second (the throttle) after the last request started. A timer of
	// ours due later runs after that one, and a request is counted in the
	// turn of the timer that starts it.
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise((ok) => setTimeout(() => ok(true),
		Math.max(0, window.__polls[window.__polls.length - 1] + 1000 - performance.now()) + 50))`, chromedp.EvalAwaitPromise))
	must(t, err)
	if n := browser.Eval[string](t, ctx, `String(window.__polls.length)`); n != "1" {
		t.Errorf("%s list requests to a backend that has no approvals API", n)
	}
	if b := browser.Eval[string](t, ctx, `(() => { const b = document.getElementById('approvals-badge'); return b && b.querySelector('.n') && !b.querySelector('.n').hidden ? b.textContent : ''; })()`); b != "" {
		t.Errorf("badge %q shown", b)
	}
	if msg := browser.Eval[string](t, ctx, `document.getElementById('api-error').textContent`); !strings.Contains(msg, "no approvals API") {
		t.Errorf("the approvals page says %q", msg)
	}
	if e := tab.Exceptions(); len(e) > 0 {
		t.Errorf("uncaught exceptions: %q", e)
	}
	if c := tab.ConsoleErrors(); len(c) > 0 {
		t.Errorf("console errors: %q", c)
	}
}

// TestApprovalsRefusedShowsWhy: a decision the server refuses (403: here
// the self-approval check, as when the browser ran inside an agent's run)
// shows the server's reason on the card, and the approval stays pending.
func TestApprovalsRefusedShowsWhy(t *testing.T) {
	s := newApprovalsSite(t, func(o *backend.Options) {
		o.Peer = func(context.Context, net.Addr, net.Addr) (peer.Process, error) {
			return peer.Process{PID: 4242, Marked: true, Chain: []int{4242, 1}}, nil
		}
	})
	_, ctx := apOpenOne(t, s, apPhoneToken)
	apClick(t, ctx, apCard("ap-1")+` button[data-decision="allow"]`)
	apWaitStatus(t, ctx, "ap-1", "refused: this decision comes from a process started by a claude-relay run (pid 4242)")
	if cls := browser.Eval[string](t, ctx, `document.querySelector(`+jsString(apCard("ap-1")+` .a-status`)+`).className`); cls != "a-status error" {
		t.Errorf("status class %q", cls)
	}
	if a := s.apGet("ap-1"); a.State != "pending" || a.Remote != nil {
		t.Errorf("after the refusal: %+v", a)
	}
	if hidden := browser.Eval[string](t, ctx, `String(document.querySelector(`+jsString(apCard("ap-1")+` .a-actions`)+`).hidden)`); hidden != "false" {
		t.Errorf("the buttons went away after a refusal")
	}
}
