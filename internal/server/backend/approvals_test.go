package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/peer"
	"github.com/claude-relay/claude-relay/internal/server/push"
	"github.com/claude-relay/claude-relay/internal/server/store"
	"github.com/claude-relay/claude-relay/internal/testkit/poll"
	"github.com/claude-relay/claude-relay/internal/tokens"
	relaywire "github.com/claude-relay/claude-relay/internal/wire"
)

// Tokens of the approvals tests, beside testToken (a plain entry: ingest
// and read).
const (
	phoneToken  = "phone-token-0123456789"
	ingestToken = "ingest-token-0123456789"
	readToken   = "read-token-0123456789"
	adminToken  = "admin-token-0123456789"
	helperToken = "helper-token-0123456789"
)

func scopedTokens() []config.ServeToken {
	return []config.ServeToken{
		{Name: "phone", Token: phoneToken, Scopes: []tokens.Scope{tokens.Approve}},
		{Name: "ingester", Token: ingestToken, Scopes: []tokens.Scope{tokens.Ingest}},
		{Name: "reader", Token: readToken, Scopes: []tokens.Scope{tokens.Read}},
		{Name: "ops", Token: adminToken, Scopes: []tokens.Scope{tokens.Admin}},
		{Name: "helper", Token: helperToken, Scopes: tokens.Helper},
	}
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// unmarked is a client process that was checked and is no run's.
var unmarked = peer.Process{PID: 1, Chain: []int{1}}

// fakePeer is the self-approval check's process lookup.
type fakePeer struct {
	mu            sync.Mutex
	proc          peer.Process
	err           error
	calls         int
	local, remote net.Addr
}

func (f *fakePeer) lookup(_ context.Context, local, remote net.Addr) (peer.Process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.local, f.remote = local, remote
	return f.proc, f.err
}

func (f *fakePeer) set(p peer.Process, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.proc, f.err = p, err
}

// fakePusher records pushes.
type fakePusher struct {
	mu     sync.Mutex
	msgs   []push.Message
	sent   chan push.Message
	closed int
}

func newFakePusher() *fakePusher { return &fakePusher{sent: make(chan push.Message, 100)} }

func (p *fakePusher) Send(_ context.Context, m push.Message) {
	p.mu.Lock()
	p.msgs = append(p.msgs, m)
	p.mu.Unlock()
	p.sent <- m
}

func (p *fakePusher) Close(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed++
	return nil
}

func (p *fakePusher) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.msgs)
}

func (p *fakePusher) next(t *testing.T) push.Message {
	t.Helper()
	select {
	case m := <-p.sent:
		return m
	case <-time.After(wait):
		t.Fatalf("no push within %v", wait)
	}
	return push.Message{}
}

// approvalEnv is a server over a fakeStore with the scoped tokens, a fake
// peer lookup (nobody is an agent) and a fake pusher.
type approvalEnv struct {
	*env
	fs   *fakeStore
	peer *fakePeer
	push *fakePusher
	log  *syncBuffer
}

func newApprovalEnv(t *testing.T, opts ...envOption) *approvalEnv {
	t.Helper()
	return newApprovalEnvOn(t, newFakeStore(), opts...)
}

func newApprovalEnvOn(t *testing.T, fs *fakeStore, opts ...envOption) *approvalEnv {
	t.Helper()
	a := &approvalEnv{fs: fs, peer: &fakePeer{proc: unmarked}, push: newFakePusher(), log: &syncBuffer{}}
	base := func(o *Options) {
		o.ServeTokens = scopedTokens
		o.Peer = a.peer.lookup
		o.pusher = a.push
		o.PublicURL = "https://relay.example/"
		o.Logger = slog.New(slog.NewTextHandler(a.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	a.env = newEnvWith(t, fs, append([]envOption{base}, opts...)...)
	return a
}

// request posts a relay.approval_requested for approval id of run r1 in
// session s1.
func (a *approvalEnv) request(id, kind, tool, title string, options ...string) {
	a.t.Helper()
	a.requestIn("s1", "r1", id, kind, tool, title, options...)
}

func (a *approvalEnv) requestIn(session, run, id, kind, tool, title string, options ...string) {
	a.t.Helper()
	typed := relaywire.AsDecisions(options)
	if options == nil {
		typed = optionsFor(kind)
	}
	a.post(session, envelope(session, 1, relaywire.TypeApprovalRequested, relaywire.ApprovalRequested{
		RunID: run, ApprovalID: id, Kind: relaywire.Kind(kind), ToolName: tool, Title: title,
		Input: json.RawMessage(`{"command":` + mustJSON(title) + `}`), Options: typed,
	}).with("source", "relay"))
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// decide posts a decision with hdr and returns the status and the answer.
func (a *approvalEnv) decide(id string, body any, hdr map[string]string) (int, map[string]json.RawMessage) {
	a.t.Helper()
	var out map[string]json.RawMessage
	b, _ := json.Marshal(body)
	if s, ok := body.(string); ok {
		b = []byte(s)
	}
	code := a.call("POST", "/api/approvals/"+url.PathEscape(id)+"/decision", b, hdr, &out)
	return code, out
}

func errorOf(m map[string]json.RawMessage) string {
	var s string
	_ = json.Unmarshal(m["error"], &s)
	return s
}

func approvalOf(t *testing.T, m map[string]json.RawMessage) store.Approval {
	t.Helper()
	var a store.Approval
	if err := json.Unmarshal(m["approval"], &a); err != nil {
		t.Fatalf("answer %v has no approval: %v", m, err)
	}
	return a
}

// TestWhoami: every kind of token says its name and effective scopes.
func TestWhoami(t *testing.T) {
	e := newApprovalEnv(t)
	for tok, want := range map[string]whoamiResponse{
		testToken:   {Name: "serve-token-6", Scopes: []tokens.Scope{tokens.Ingest, tokens.Read}, By: "api:serve-token-6"},
		phoneToken:  {Name: "phone", Scopes: []tokens.Scope{tokens.Read, tokens.Approve}, By: "api:phone"},
		ingestToken: {Name: "ingester", Scopes: []tokens.Scope{tokens.Ingest}, By: "api:ingester"},
		adminToken:  {Name: "ops", Scopes: []tokens.Scope{tokens.Ingest, tokens.Read, tokens.Approve, tokens.Audit, tokens.Admin}, By: "api:ops"},
		helperToken: {Name: "helper", Scopes: tokens.Helper, By: "api:helper"},
	} {
		var got whoamiResponse
		if code := e.call("GET", "/api/whoami", nil, bearer(tok), &got); code != 200 ||
			got.Name != want.Name || !slices.Equal(got.Scopes, want.Scopes) || got.By != want.By {
			t.Errorf("whoami with %s: %d %+v, want %+v", want.Name, code, got, want)
		}
	}
	if code := e.call("GET", "/api/whoami", nil, bearer("nope"), nil); code != 401 {
		t.Errorf("whoami with a bad token: %d, want 401", code)
	}
}

// TestScopesPerRoute: each route needs its scope; without it a valid token
// gets 403 saying which scope and how to get one, never 401.
func TestScopesPerRoute(t *testing.T) {
	e := newApprovalEnv(t)
	e.request("a1", "tool", "Bash", "ls")
	ev := envelope("s1", 1, "x", map[string]any{})
	type route struct {
		method, path string
		body         []byte
		need         tokens.Scope
	}
	routes := []route{
		{"POST", "/api/sessions/s1/events", ev.json(), tokens.Ingest},
		{"POST", "/api/sessions/s1/events/batch", []byte(`{"events":[]}`), tokens.Ingest},
		{"GET", "/api/sessions", nil, tokens.Read},
		{"GET", "/api/sessions/s1/events", nil, tokens.Read},
		{"GET", "/api/approvals", nil, tokens.Read},
		{"GET", "/api/approvals/a1", nil, tokens.Read},
		{"GET", "/api/approvals/decisions?ids=a1&wait=0", nil, tokens.Decisions},
		{"GET", "/metrics", nil, tokens.Read},
		{"GET", "/approvals", nil, tokens.Read},
		{"POST", "/api/approvals/zz/decision", []byte(`{"decision":"allow"}`), tokens.Approve},
	}
	has := map[string]tokens.Set{
		testToken: tokens.SetOf(nil), phoneToken: tokens.SetOf([]tokens.Scope{tokens.Approve}),
		ingestToken: tokens.SetOf([]tokens.Scope{tokens.Ingest}), readToken: tokens.SetOf([]tokens.Scope{tokens.Read}),
		adminToken: tokens.SetOf([]tokens.Scope{tokens.Admin}), helperToken: tokens.SetOf(tokens.Helper),
	}
	for _, r := range routes {
		for tok, set := range has {
			var out errorBody
			resp := e.do(r.method, r.path, r.body, bearer(tok))
			code := resp.StatusCode
			_ = json.Unmarshal([]byte(readAll(t, resp)), &out) // pages and metrics are not JSON
			if set.Has(r.need) {
				if code == 401 || code == 403 {
					t.Errorf("%s %s with scopes %s: %d %q, want it let through", r.method, r.path, set, code, out.Error)
				}
				continue
			}
			want := "needs the " + string(r.need) + " scope; create a token with `claude-relay token create --scope " + string(r.need) + "`"
			if code != 403 || !strings.Contains(out.Error, want) {
				t.Errorf("%s %s with scopes %s: %d %q, want 403 saying %q", r.method, r.path, set, code, out.Error, want)
			}
		}
	}
}

// TestApprovalsList: the states, the session filter, the limit, one by ID,
// and bad parameters.
func TestApprovalsList(t *testing.T) {
	e := newApprovalEnv(t)
	e.request("a1", "tool", "Bash", "rm -rf build")
	e.requestIn("s2", "r2", "a2", "question", "AskUserQuestion", "Which color?")
	e.request("a3", "tool", "Write", "/tmp/x")
	e.post("s1", envelope("s1", 2, relaywire.TypeApprovalResolved, relaywire.ApprovalResolved{RunID: "r1", ApprovalID: "a3", Decision: "deny", By: "extension"}))

	ids := func(q string) []string {
		t.Helper()
		var out approvalsResponse
		if code := e.call("GET", "/api/approvals"+q, nil, nil, &out); code != 200 {
			t.Fatalf("GET /api/approvals%s: %d", q, code)
		}
		var l []string
		for _, a := range out.Approvals {
			l = append(l, a.ApprovalID)
		}
		slices.Sort(l)
		return l
	}
	for q, want := range map[string][]string{
		"":                             {"a1", "a2"},
		"?state=pending":               {"a1", "a2"},
		"?state=resolved":              {"a3"},
		"?state=all":                   {"a1", "a2", "a3"},
		"?state=all&session_id=s2":     {"a2"},
		"?state=pending&session_id=s9": nil,
	} {
		if got := ids(q); !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %v", q, got, want)
		}
	}
	var out approvalsResponse
	if e.call("GET", "/api/approvals?state=all&limit=1", nil, nil, &out); len(out.Approvals) != 1 {
		t.Errorf("limit=1: %d approvals", len(out.Approvals))
	}
	var raw map[string]json.RawMessage
	if e.call("GET", "/api/approvals?session_id=none", nil, nil, &raw); string(raw["approvals"]) != "[]" {
		t.Errorf("none: %s, want []", raw["approvals"])
	}
	// Exactly the CONTRACT §10 fields, plus the state.
	var one map[string]json.RawMessage
	if code := e.call("GET", "/api/approvals/a1", nil, nil, &one); code != 200 {
		t.Fatalf("GET one: %d", code)
	}
	for _, k := range []string{"approval_id", "session_id", "run_id", "tool_name", "title", "input", "kind", "options", "requested_at", "state"} {
		if _, ok := one[k]; !ok {
			t.Errorf("approval lacks %q: %v", k, one)
		}
	}
	var eb errorBody
	if code := e.call("GET", "/api/approvals/nope", nil, nil, &eb); code != 404 || !strings.Contains(eb.Error, `no approval "nope"`) {
		t.Errorf("unknown: %d %q", code, eb.Error)
	}
	for _, q := range []string{"?state=open", "?limit=0", "?limit=x"} {
		if code := e.call("GET", "/api/approvals"+q, nil, nil, &eb); code != 400 {
			t.Errorf("%s: %d, want 400", q, code)
		}
	}
}

// TestApprovalPolicyShown: an approval the central policy asked for shows
// its approver, rule and reason in the list and alone; one no rule asked
// for has none of those fields.
func TestApprovalPolicyShown(t *testing.T) {
	e := newApprovalEnv(t)
	e.post("s1", envelope("s1", 1, relaywire.TypeApprovalRequested, relaywire.ApprovalRequested{
		RunID: "r1", ApprovalID: "p1", Kind: relaywire.ApprovalTool, ToolName: "Bash", Title: "git push",
		Input: json.RawMessage(`{"command":"git push origin main"}`), Options: optionsFor("tool"),
		Approver: "dashboard", PolicyRule: "Bash(git push *)", PolicyReason: "pushes need <b>review</b>",
	}).with("source", "relay"))
	e.request("p2", "tool", "Bash", "ls")
	want := map[string]string{"approver": "dashboard", "policy_rule": "Bash(git push *)", "policy_reason": "pushes need <b>review</b>"}
	check := func(how string, a map[string]json.RawMessage, want map[string]string) {
		t.Helper()
		for _, k := range []string{"approver", "policy_rule", "policy_reason"} {
			raw, ok := a[k]
			w, wanted := want[k]
			if !wanted {
				if ok {
					t.Errorf("%s: %s = %s, want absent", how, k, raw)
				}
				continue
			}
			var got string
			if json.Unmarshal(raw, &got) != nil || got != w {
				t.Errorf("%s: %s = %s, want %q", how, k, raw, w)
			}
		}
	}
	var one map[string]json.RawMessage
	if code := e.call("GET", "/api/approvals/p1", nil, nil, &one); code != 200 {
		t.Fatalf("GET /api/approvals/p1: %d", code)
	}
	check("GET p1", one, want)
	var list struct {
		Approvals []map[string]json.RawMessage `json:"approvals"`
	}
	if code := e.call("GET", "/api/approvals", nil, nil, &list); code != 200 || len(list.Approvals) != 2 {
		t.Fatalf("GET /api/approvals: %d, %d approvals", code, len(list.Approvals))
	}
	for _, a := range list.Approvals {
		switch id := string(a["approval_id"]); id {
		case `"p1"`:
			check("list p1", a, want)
		case `"p2"`:
			check("list p2", a, nil)
		default:
			t.Errorf("list: unexpected %s", id)
		}
	}
}

// TestDecision: every answer of POST /api/approvals/{id}/decision.
func TestDecision(t *testing.T) {
	e := newApprovalEnv(t)
	phone := bearer(phoneToken)
	e.request("bash", "tool", "Bash", "git push")
	e.request("q", "question", "AskUserQuestion", "Which color?")
	e.request("plan", "plan", "ExitPlanMode", "the plan")
	e.request("gone", "tool", "Bash", "make")
	e.post("s1", envelope("s1", 2, relaywire.TypeApprovalResolved, relaywire.ApprovalResolved{RunID: "r1", ApprovalID: "gone", Decision: "deny", By: "extension"}))

	for _, tc := range []struct {
		name, id string
		body     any
		status   int
		err      string
	}{
		{"not JSON", "bash", "{", 400, "body must be"},
		{"not an option", "bash", map[string]any{"decision": "maybe"}, 400, `decision "maybe" is not one of this tool approval's options (allow, allow_always, deny)`},
		{"plan option on a tool", "bash", map[string]any{"decision": "accept_edits"}, 400, "not one of"},
		{"updated_input with deny", "bash", map[string]any{"decision": "deny", "updated_input": map[string]any{"command": "x"}}, 400, "updated_input goes with allow or allow_always on a tool approval, not deny"},
		{"updated_input not an object", "bash", map[string]any{"decision": "allow", "updated_input": "rm"}, 400, "updated_input must be a JSON object"},
		{"answers on a tool", "bash", map[string]any{"decision": "allow", "answers": map[string]string{"a": "b"}}, 400, "answers are for a question"},
		{"question without answers", "q", map[string]any{"decision": "allow"}, 400, "allow on a question needs answers"},
		{"answers not a map", "q", map[string]any{"decision": "allow", "answers": []string{"Blue"}}, 400, "answers must map"},
		{"updated_input on a plan", "plan", map[string]any{"decision": "accept_edits", "updated_input": map[string]any{}}, 400, "on a plan"},
		{"unknown", "nope", map[string]any{"decision": "allow"}, 404, `no approval "nope"`},
		{"resolved by the editor", "gone", map[string]any{"decision": "allow"}, 409, "already decided by extension: deny"},
		{"question answered", "q", map[string]any{"decision": "allow", "answers": map[string]string{"Which color?": "Blue"}}, 200, ""},
		{"plan accepted", "plan", map[string]any{"decision": "default"}, 200, ""},
		{"edited command", "bash", map[string]any{"decision": "allow", "updated_input": map[string]any{"command": "git push --dry-run"}}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := e.decide(tc.id, tc.body, phone)
			if code != tc.status || !strings.Contains(errorOf(out), tc.err) {
				t.Errorf("%d %q, want %d %q", code, errorOf(out), tc.status, tc.err)
			}
		})
	}
	a, _ := e.fs.Approval(context.Background(), "bash")
	if a.Remote == nil || a.Remote.Decision != "allow" || a.Remote.By != "api:phone" || string(a.Remote.UpdatedInput) != `{"command":"git push --dry-run"}` ||
		!strings.HasPrefix(a.Remote.DecisionID, "d-") {
		t.Fatalf("stored decision %+v", a.Remote)
	}
	// The same POST again is the same decision (200); another is a 409
	// naming the first, with the approval.
	code, out := e.decide("bash", map[string]any{"decision": "allow", "updated_input": map[string]any{"command": "git push --dry-run"}}, phone)
	if code != 200 || approvalOf(t, out).Remote.DecisionID != a.Remote.DecisionID {
		t.Errorf("retry: %d %v", code, out)
	}
	code, out = e.decide("bash", map[string]any{"decision": "deny"}, bearer(adminToken))
	if code != 409 || errorOf(out) != "already decided by api (phone): allow" || approvalOf(t, out).Remote.Decision != "allow" {
		t.Errorf("second decision: %d %q", code, errorOf(out))
	}
	// An explicit decision_id makes retries idempotent across bodies too.
	e.request("b2", "tool", "Bash", "ls")
	if code, _ := e.decide("b2", map[string]any{"decision": "deny", "reason": "no", "decision_id": "k1"}, phone); code != 200 {
		t.Fatalf("with decision_id: %d", code)
	}
	if code, _ := e.decide("b2", map[string]any{"decision": "deny", "reason": "no!", "decision_id": "k1"}, bearer(adminToken)); code != 200 {
		t.Errorf("same decision_id again: %d, want 200", code)
	}
	// The run ended: the approval says so.
	e.request("b3", "tool", "Bash", "ls")
	e.post("s1", envelope("s1", 3, relaywire.TypeRunCompleted, map[string]any{"run_id": "r1"}))
	if code, out := e.decide("b3", map[string]any{"decision": "allow"}, phone); code != 409 || errorOf(out) != "already cancelled: the run ended" {
		t.Errorf("after the run ended: %d %q", code, errorOf(out))
	}
}

// TestDecideRace: when the store finds the approval decided meanwhile
// (another replica won), the answer is a 409 naming the winner.
func TestDecideRace(t *testing.T) {
	fs := newFakeStore()
	e := newEnvWith(t, raceStore{fs}, func(o *Options) { o.ServeTokens = scopedTokens; o.Peer = (&fakePeer{proc: unmarked}).lookup })
	a := &approvalEnv{env: e, fs: fs}
	a.request("a1", "tool", "Bash", "ls")
	code, out := a.decide("a1", map[string]any{"decision": "allow"}, bearer(phoneToken))
	if code != 409 || errorOf(out) != "already decided by dashboard (other): deny" {
		t.Errorf("%d %q", code, errorOf(out))
	}
}

// raceStore decides for someone else just before each Decide.
type raceStore struct{ *fakeStore }

func (r raceStore) Decide(ctx context.Context, d store.Decision) (store.Approval, error) {
	if _, err := r.fakeStore.Decide(ctx, store.Decision{ApprovalID: d.ApprovalID, DecisionID: "other", Decision: "deny", By: "dashboard:other"}); err != nil {
		return store.Approval{}, err
	}
	return r.fakeStore.Decide(ctx, d)
}

// TestDashboardCookieDecision: a login with an approve token gives the
// dashboard that scope (whoami says so); its decision needs the dashboard's
// header and same origin, so a cross-site request is refused.
func TestDashboardCookieDecision(t *testing.T) {
	e := newApprovalEnv(t)
	cookie := e.login(t, phoneToken)
	var who whoamiResponse
	if code := e.call("GET", "/api/whoami", nil, map[string]string{"Authorization": "", "Cookie": cookie}, &who); code != 200 ||
		who.Name != "phone" || !slices.Equal(who.Scopes, []tokens.Scope{tokens.Read, tokens.Approve}) || who.By != "dashboard:phone" {
		t.Fatalf("whoami with the phone's cookie: %d %+v", code, who)
	}
	good := map[string]string{"Authorization": "", "Cookie": cookie, DashboardHeader: "1", "Origin": e.ts.URL, "Sec-Fetch-Site": "same-origin"}
	// with returns good with kv's changes ("" deletes a header).
	with := func(kv ...string) map[string]string {
		h := map[string]string{}
		for k, v := range good {
			h[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(h, kv[i])
			} else {
				h[kv[i]] = kv[i+1]
			}
		}
		return h
	}
	e.request("a1", "tool", "Bash", "ls")
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		err  string
	}{
		{"no dashboard header", with(DashboardHeader, ""), "needs the header X-Claude-Relay: 1"},
		{"header not 1", with(DashboardHeader, "yes"), "needs the header X-Claude-Relay: 1"},
		{"cross-site fetch", with("Sec-Fetch-Site", "cross-site"), "cross-site request"},
		{"same-site, other origin", with("Sec-Fetch-Site", "same-site"), "cross-site request"},
		{"evil origin", with("Origin", "http://evil.example"), `Origin "http://evil.example" is not this dashboard`},
		{"neither origin nor fetch metadata", with("Origin", "", "Sec-Fetch-Site", ""), "needs an Origin or Sec-Fetch-Site header"},
	} {
		code, out := e.decide("a1", map[string]any{"decision": "allow"}, tc.hdr)
		if code != 403 || !strings.Contains(errorOf(out), tc.err) {
			t.Errorf("%s: %d %q, want 403 %q", tc.name, code, errorOf(out), tc.err)
		}
	}
	if a, _ := e.fs.Approval(context.Background(), "a1"); a.Remote != nil {
		t.Fatalf("a refused request decided: %+v", a.Remote)
	}
	// The cookie still cannot post events.
	if code := e.call("POST", "/api/sessions/s1/events", envelope("s1", 9, "x", map[string]any{}).json(), good, nil); code != 401 {
		t.Errorf("cookie posting an event: %d, want 401", code)
	}
	// From the dashboard's own page it decides, recorded as the dashboard.
	if code, out := e.decide("a1", map[string]any{"decision": "deny", "reason": "not now"}, good); code != 200 || approvalOf(t, out).Remote.By != "dashboard:phone" {
		t.Fatalf("dashboard decision: %d %v", code, out)
	}
	// Origin alone (no fetch metadata: an older browser) and serve.public_url
	// as the origin both count as the dashboard.
	e.request("a2", "tool", "Bash", "ls")
	if code, out := e.decide("a2", map[string]any{"decision": "allow"}, with("Sec-Fetch-Site", "")); code != 200 {
		t.Errorf("Origin only: %d %q", code, errorOf(out))
	}
	e.request("a3", "tool", "Bash", "ls")
	if code, out := e.decide("a3", map[string]any{"decision": "allow"}, with("Origin", "https://relay.example")); code != 200 {
		t.Errorf("public_url origin: %d %q", code, errorOf(out))
	}
	// A read-only login's dashboard may not decide, and says so.
	e.request("a4", "tool", "Bash", "ls")
	ro := with("Cookie", e.login(t, readToken))
	if code, out := e.decide("a4", map[string]any{"decision": "allow"}, ro); code != 403 || !strings.Contains(errorOf(out), "needs the approve scope") {
		t.Errorf("read-only cookie: %d %q", code, errorOf(out))
	}
}

// login posts the login form and returns the "name=value" cookie.
func (e *env) login(t *testing.T, token string) string {
	t.Helper()
	resp := e.do("POST", "/login", []byte(url.Values{"token": {token}, "next": {"/approvals"}}.Encode()), e.formHdr())
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %d %v", resp.StatusCode, resp.Cookies())
	}
	c := resp.Cookies()[0]
	if !c.HttpOnly || strings.Contains(c.Value, token) {
		t.Fatalf("cookie %+v", c)
	}
	return c.Name + "=" + c.Value
}

// TestLoginNeedsRead: a token that cannot read gets no dashboard cookie,
// and is told what it lacks.
func TestLoginNeedsRead(t *testing.T) {
	e := newApprovalEnv(t)
	resp := e.do("POST", "/login", []byte(url.Values{"token": {ingestToken}}.Encode()), e.formHdr())
	body := readAll(t, resp)
	if resp.StatusCode != 403 || len(resp.Cookies()) != 0 || !strings.Contains(body, "the dashboard needs read") {
		t.Errorf("ingest-only login: %d %v\n%s", resp.StatusCode, resp.Cookies(), body)
	}
}

// TestIssuedTokens: a token from the token file works as a Bearer token and
// as a login, with its scopes, and a revoke by another process ends both at
// the next request.
func TestIssuedTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), tokens.FileName)
	e := newApprovalEnv(t, func(o *Options) { o.Issued = tokens.Open(path) })
	tok, entry, err := tokens.Open(path).Create("tablet", []tokens.Scope{tokens.Approve}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var who whoamiResponse
	if code := e.call("GET", "/api/whoami", nil, bearer(tok), &who); code != 200 || who.Name != "tablet" || who.By != "api:tablet" {
		t.Fatalf("issued token: %d %+v", code, who)
	}
	cookie := e.login(t, tok)
	if code := e.call("GET", "/api/whoami", nil, map[string]string{"Authorization": "", "Cookie": cookie}, &who); code != 200 ||
		!slices.Contains(who.Scopes, tokens.Approve) || who.By != "dashboard:tablet" {
		t.Fatalf("issued token's cookie: %d %+v", code, who)
	}
	e.request("a1", "tool", "Bash", "ls")
	if code, _ := e.decide("a1", map[string]any{"decision": "allow"}, bearer(tok)); code != 200 {
		t.Errorf("issued approve token deciding: %d", code)
	}
	if _, err := tokens.Open(path).Revoke(entry.ID); err != nil {
		t.Fatal(err)
	}
	if code := e.call("GET", "/api/whoami", nil, bearer(tok), nil); code != 401 {
		t.Errorf("revoked token: %d, want 401", code)
	}
	if code := e.call("GET", "/api/whoami", nil, map[string]string{"Authorization": "", "Cookie": cookie}, nil); code != 401 {
		t.Errorf("revoked token's cookie: %d, want 401", code)
	}
	// A cookie claiming another credential's id with this MAC is nothing.
	_, mac, _ := strings.Cut(cookie, ".")
	if code := e.call("GET", "/api/whoami", nil, map[string]string{"Authorization": "", "Cookie": CookieName + "=c-phone." + mac}, nil); code != 401 {
		t.Errorf("forged cookie id: %d, want 401", code)
	}
}

// TestIssuedTokensOnly: a server whose only tokens are in the file serves
// them (no "no tokens configured").
func TestIssuedTokensOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), tokens.FileName)
	e := newEnvWith(t, newFakeStore(), func(o *Options) { o.Tokens = nil; o.Issued = tokens.Open(path) })
	var eb errorBody
	if code := e.call("GET", "/api/whoami", nil, nil, &eb); code != 401 || !strings.Contains(eb.Error, "no tokens configured") {
		t.Fatalf("before create: %d %q", code, eb.Error)
	}
	tok, _, err := tokens.Open(path).Create("", []tokens.Scope{tokens.Read}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if code := e.call("GET", "/api/sessions", nil, bearer(tok), nil); code != 200 {
		t.Errorf("after create: %d", code)
	}
}

// TestSelfApproval: a decision whose client process carries a run's marker
// is refused (403, logged at warn, not stored); a lookup that fails lets it
// through.
func TestSelfApproval(t *testing.T) {
	e := newApprovalEnv(t)
	e.request("a1", "tool", "Bash", "rm -rf /")
	e.peer.set(peer.Process{PID: 4242, Marked: true, Chain: []int{4242, 4000, 1}}, nil)
	code, out := e.decide("a1", map[string]any{"decision": "allow"}, bearer(phoneToken))
	want := "refused: this decision comes from a process started by a claude-relay run (pid 4242); an agent cannot approve its own request; decide from the dashboard, the editor or the terminal"
	if code != 403 || errorOf(out) != want {
		t.Fatalf("%d %q", code, errorOf(out))
	}
	if a, _ := e.fs.Approval(context.Background(), "a1"); a.Remote != nil || a.State != store.ApprovalPending {
		t.Fatalf("refused decision stored: %+v", a)
	}
	logs := e.log.String()
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "self-approval") || !strings.Contains(logs, "pid=4242") ||
		strings.Contains(logs, phoneToken) {
		t.Errorf("log:\n%s", logs)
	}
	// The lookup saw this connection: the server's end and the client's.
	e.peer.mu.Lock()
	local, remote := e.peer.local.String(), e.peer.remote.String()
	e.peer.mu.Unlock()
	if local != e.ts.Listener.Addr().String() || !strings.HasPrefix(remote, "127.0.0.1:") {
		t.Errorf("lookup of local %s remote %s; server at %s", local, remote, e.ts.Listener.Addr())
	}
	// Not an agent, or not knowable: allowed.
	e.peer.set(peer.Process{PID: 5, Chain: []int{5, 1}}, nil)
	if code, _ := e.decide("a1", map[string]any{"decision": "deny"}, bearer(phoneToken)); code != 200 {
		t.Errorf("unmarked client: %d", code)
	}
	// Not checkable at all (no /proc, or another user's process such as a
	// reverse proxy, or an agent with sudo): refused unless the operator
	// opted in.
	e.request("a2", "tool", "Bash", "ls")
	for _, err := range []error{peer.ErrUnsupported, &peer.HiddenError{Inode: 7, UID: 1234}} {
		e.peer.set(peer.Process{}, fmt.Errorf("peer: %w", err))
		code, out := e.decide("a2", map[string]any{"decision": "allow"}, bearer(phoneToken))
		if code != 403 || !strings.Contains(errorOf(out), "serve.allow_unchecked_local_decisions") {
			t.Errorf("unchecked local client (%v): %d %q, want 403 naming the opt-in", err, code, errorOf(out))
		}
	}
	opted := newApprovalEnv(t, func(o *Options) { o.AllowUncheckedLocal = true })
	opted.request("a3", "tool", "Bash", "ls")
	opted.peer.set(peer.Process{}, fmt.Errorf("peer: %w", errors.ErrUnsupported))
	if code, _ := opted.decide("a3", map[string]any{"decision": "allow"}, bearer(phoneToken)); code != 200 {
		t.Errorf("unchecked local client with the opt-in: %d, want 200", code)
	}
	// An agent hiding as our own user stays refused with the opt-in.
	opted.request("a4", "tool", "Bash", "ls")
	opted.peer.set(peer.Process{}, &peer.HiddenError{Inode: 8, UID: 0, SameUser: true})
	if code, _ := opted.decide("a4", map[string]any{"decision": "allow"}, bearer(phoneToken)); code != 403 {
		t.Errorf("a hidden client of our own user with the opt-in: %d, want 403", code)
	}
}

// TestHostAddrs: a client at any address of this host's interfaces is
// local, even when it reached the server at another one (curl
// --interface); other machines are not.
func TestHostAddrs(t *testing.T) {
	h := &hostAddrs{list: func() ([]net.Addr, error) {
		return []net.Addr{
			&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
			&net.IPNet{IP: net.ParseIP("10.1.2.3"), Mask: net.CIDRMask(24, 32)},
			&net.IPNet{IP: net.ParseIP("fd00::5"), Mask: net.CIDRMask(64, 128)},
		}, nil
	}}
	local := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8787}
	for remote, want := range map[string]bool{
		"127.0.0.1":       true,
		"10.1.2.3":        true, // a second address of this host
		"::ffff:10.1.2.3": true,
		"fd00::5":         true,
		"10.1.2.4":        false, // another machine on that network
		"192.168.1.6":     false,
	} {
		if got := h.local(local, netip.MustParseAddr(remote)); got != want {
			t.Errorf("%s: %v, want %v", remote, got, want)
		}
	}
	// The real interfaces: every address of this host counts.
	var real hostAddrs
	as, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil && !real.local(local, p.Addr()) {
			t.Errorf("this host's own address %s is not local", p.Addr())
		}
	}
}

func TestSameHost(t *testing.T) {
	local := &net.TCPAddr{IP: net.ParseIP("192.168.1.5"), Port: 8787}
	for remote, want := range map[string]bool{
		"127.0.0.1":          true,
		"::1":                true,
		"::ffff:127.0.0.1":   true,
		"192.168.1.5":        true, // this host, dialling its own address
		"::ffff:192.168.1.5": true,
		"192.168.1.6":        false,
		"10.0.0.1":           false,
	} {
		if got := sameHost(local, netip.MustParseAddr(remote)); got != want {
			t.Errorf("%s: %v, want %v", remote, got, want)
		}
	}
}

// TestDecisionsLongPoll: the helper's poll answers at once when a decision
// exists, else when one is made (woken by the store's notification: the
// safety-net recheck is an hour here), with run and session; empty when
// its wait ends; bad parameters are 400s.
func TestDecisionsLongPoll(t *testing.T) {
	e := newApprovalEnv(t, func(o *Options) { o.recheck = time.Hour })
	e.request("a1", "tool", "Bash", "ls")
	e.requestIn("s2", "r2", "a2", "tool", "Bash", "pwd")

	var out relaywire.RemoteDecisions
	if code := e.call("GET", "/api/approvals/decisions?ids=a1,a2&wait=0", nil, nil, &out); code != 200 || out.Decisions == nil || len(out.Decisions) != 0 {
		t.Fatalf("nothing decided, wait=0: %d %+v", code, out)
	}
	if code := e.call("GET", "/api/approvals/decisions?ids=a1&wait=10ms", nil, nil, &out); code != 200 || len(out.Decisions) != 0 {
		t.Fatalf("nothing decided, short wait: %d %+v", code, out)
	}

	got := e.startPoll("a1,a2,unknown")
	if code, _ := e.decide("a2", map[string]any{"decision": "deny", "reason": "no"}, bearer(phoneToken)); code != 200 {
		t.Fatalf("decide: %d", code)
	}
	out = pollAnswer(t, got, "the poll to answer after the decision")
	if len(out.Decisions) != 1 {
		t.Fatalf("decisions %+v", out)
	}
	d := out.Decisions[0]
	if d.ApprovalID != "a2" || d.Decision != "deny" || d.Reason != "no" || d.By != "api:phone" || d.RunID != "r2" || d.SessionID != "s2" || d.DecisionID == "" {
		t.Errorf("decision %+v", d)
	}
	// Decided already: at once.
	if code := e.call("GET", "/api/approvals/decisions?ids=a2&wait=60s", nil, nil, &out); code != 200 || len(out.Decisions) != 1 {
		t.Errorf("already decided: %d %+v", code, out)
	}
	var eb errorBody
	many := strings.Repeat("x,", 100) + "y"
	for i := range 101 {
		many += fmt.Sprintf(",id%d", i)
	}
	for _, q := range []string{"", "?ids=", "?ids=a1&wait=soon", "?ids=a1&wait=-1s", "?ids=" + many} {
		if code := e.call("GET", "/api/approvals/decisions"+q, nil, nil, &eb); code != 400 || eb.Error == "" {
			t.Errorf("%.40s: %d %q, want 400", q, code, eb.Error)
		}
	}
}

// startPoll holds a decisions poll for ids (with a 60s wait) on e's
// server in the background, and returns once the server has subscribed it;
// the poll's answer comes on the channel.
func (e *env) startPoll(ids string) <-chan relaywire.RemoteDecisions {
	e.t.Helper()
	got := make(chan relaywire.RemoteDecisions, 1)
	go func() {
		var out relaywire.RemoteDecisions
		if code := e.call("GET", "/api/approvals/decisions?ids="+ids+"&wait=60s", nil, nil, &out); code != 200 {
			e.t.Errorf("poll: %d", code)
		}
		got <- out
	}()
	e.awaitPollers(1)
	return got
}

// pollAnswer is a startPoll's answer, failing t when it does not come
// within wait.
func pollAnswer(t *testing.T, got <-chan relaywire.RemoteDecisions, what string) relaywire.RemoteDecisions {
	t.Helper()
	select {
	case out := <-got:
		return out
	case <-time.After(wait):
		t.Fatalf("waited %v for %s", wait, what)
		return relaywire.RemoteDecisions{}
	}
}

// awaitPollers waits until n decision polls are subscribed to the hub.
func (e *env) awaitPollers(n int) {
	e.t.Helper()
	var got int
	if !poll.Within(wait, func() bool {
		e.srv.hub.mu.Lock()
		got = len(e.srv.hub.all)
		e.srv.hub.mu.Unlock()
		return got >= n
	}) {
		e.t.Fatalf("%d pollers after %v, want %d", got, wait, n)
	}
}

// TestDecisionsRecheck: a decision whose notification is lost still
// reaches the poll, by the periodic recheck.
func TestDecisionsRecheck(t *testing.T) {
	e := newApprovalEnv(t, func(o *Options) { o.recheck = 10 * time.Millisecond })
	e.fs.QuietDecide = true
	e.request("a1", "tool", "Bash", "ls")
	got := e.startPoll("a1")
	if code, _ := e.decide("a1", map[string]any{"decision": "allow"}, bearer(phoneToken)); code != 200 {
		t.Fatalf("decide: %d", code)
	}
	if out := pollAnswer(t, got, "the recheck to find the decision"); len(out.Decisions) != 1 {
		t.Errorf("%+v", out)
	}
}

// TestDecisionsPollAcrossServers: a decision made through one server wakes
// a poll held by another on the same store (replicas on one database).
func TestDecisionsPollAcrossServers(t *testing.T) {
	fs := newFakeStore()
	a := newApprovalEnvOn(t, fs, func(o *Options) { o.recheck = time.Hour })
	b := newApprovalEnvOn(t, fs)
	a.request("a1", "tool", "Bash", "ls")
	got := a.startPoll("a1")
	if code, _ := b.decide("a1", map[string]any{"decision": "allow"}, bearer(phoneToken)); code != 200 {
		t.Fatalf("decide on b: %d", code)
	}
	if out := pollAnswer(t, got, "the poll on a to hear of the decision made on b"); len(out.Decisions) != 1 || out.Decisions[0].ApprovalID != "a1" {
		t.Errorf("%+v", out)
	}
}

// TestDecisionsPollEndsOnShutdown: a waiting poll answers (empty) when the
// server stops, and Shutdown waits for it.
func TestDecisionsPollEndsOnShutdown(t *testing.T) {
	e := newApprovalEnv(t, func(o *Options) { o.recheck = time.Hour })
	e.request("a1", "tool", "Bash", "ls")
	got := make(chan int, 1)
	go func() {
		var out relaywire.RemoteDecisions
		got <- e.call("GET", "/api/approvals/decisions?ids=a1&wait=60s", nil, nil, &out)
	}()
	e.awaitPollers(1)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-got:
		if code != 200 {
			t.Errorf("poll at shutdown: %d", code)
		}
	case <-time.After(wait):
		t.Fatal("the poll did not end with the server")
	}
}

// TestPushes: a new pending approval is pushed once, with a short title
// (serve.notify_include_input; redacted), the project and a link, never its
// input or a token; duplicates and replicas do not push again.
func TestPushes(t *testing.T) {
	fs := newFakeStore()
	e := newApprovalEnvOn(t, fs, func(o *Options) { o.NotifyIncludeInput = true })
	e.post("s1", envelope("s1", 1, relaywire.TypeRunStarted, relaywire.RunStarted{RunID: "r1", Cwd: "/home/dev/my-project", PromptRecord: relaywire.RecordPrompt("go", nil)}))
	long := "curl -H 'Authorization: Bearer sk-ant-abcdefghijklmnop' https://example.com/" + strings.Repeat("x", 200) + " " + phoneToken
	req := envelope("s1", 2, relaywire.TypeApprovalRequested, relaywire.ApprovalRequested{RunID: "r1", ApprovalID: "a1", Kind: "tool",
		ToolName: "Bash", Title: long, Input: json.RawMessage(`{"command":"SECRET-INPUT"}`), Options: optionsFor("tool")})
	e.post("s1", req)
	m := e.push.next(t)
	if m.Title != "Claude wants to run Bash" || m.ClickURL != "https://relay.example/approvals#a1" {
		t.Errorf("push %+v", m)
	}
	if !strings.HasPrefix(m.Body, "curl -H 'Authorization: Bearer ***' https://example.com/xxx") || !strings.HasSuffix(m.Body, "…\nin my-project") ||
		len([]rune(strings.Split(m.Body, "\n")[0])) != maxPushTitle {
		t.Errorf("body %q", m.Body)
	}
	for _, secret := range []string{"sk-ant", phoneToken, "SECRET-INPUT"} {
		if strings.Contains(m.Title+m.Body+m.ClickURL, secret) {
			t.Errorf("push carries %q: %+v", secret, m)
		}
	}
	// A duplicate of the request, and the same request through a second
	// server on the same store (a replica) push nothing.
	if code := e.call("POST", "/api/sessions/s1/events", req.json(), nil, nil); code != 200 {
		t.Fatalf("duplicate: %d", code)
	}
	other := newApprovalEnvOn(t, fs)
	other.post("s1", envelope("s1", 3, relaywire.TypeApprovalRequested, relaywire.ApprovalRequested{RunID: "r1", ApprovalID: "a1",
		Kind: "tool", ToolName: "Bash", Title: "again", Options: optionsFor("tool")}))
	// A question through the batch endpoint is the barrier: pushes go in
	// order, so once it is out the ones above would have been too.
	q := envelope("s1", 4, relaywire.TypeApprovalRequested, relaywire.ApprovalRequested{RunID: "r1", ApprovalID: "q/1 x",
		Kind: "question", ToolName: "AskUserQuestion", Title: "Which color?", Options: optionsFor("question")})
	body, _ := json.Marshal(map[string]any{"events": []json.RawMessage{q.json()}})
	if code := e.call("POST", "/api/sessions/s1/events/batch", body, nil, nil); code != 200 {
		t.Fatalf("batch: %d", code)
	}
	m = e.push.next(t)
	if m.Title != "Claude asks a question" || m.Body != "Which color?\nin my-project" || m.ClickURL != "https://relay.example/approvals#q/1%20x" {
		t.Errorf("question push %+v", m)
	}
	if n := e.push.count(); n != 2 {
		t.Errorf("%d pushes, want 2", n)
	}
	poll.Until(t, wait, "two claims of a1", func() bool {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		return fs.claims["a1"] == 2 // one claim per server that stored a request of it
	})
	if n := other.push.count(); n != 0 {
		t.Errorf("the replica pushed %d times", n)
	}
	// An approval answered before its push goes out is not pushed. (Stored
	// straight into the store, so no push is queued for it meanwhile.)
	ctx := context.Background()
	for _, ev := range []wire{
		envelope("s1", 5, relaywire.TypeApprovalRequested, relaywire.ApprovalRequested{RunID: "r1", ApprovalID: "a5", Kind: "tool", ToolName: "Bash", Title: "ls"}),
		envelope("s1", 6, relaywire.TypeApprovalResolved, relaywire.ApprovalResolved{RunID: "r1", ApprovalID: "a5", Decision: "allow", By: "tty"}),
	} {
		if _, err := fs.Append(ctx, []store.Event{storeEvent(t, ev)}); err != nil {
			t.Fatal(err)
		}
	}
	before := e.push.count()
	e.srv.pushOne(ctx, "a5")
	if e.push.count() != before {
		t.Errorf("an answered approval was pushed")
	}
}

// storeEvent turns a posted envelope into the store's event.
func storeEvent(t *testing.T, w wire) store.Event {
	t.Helper()
	var ev store.Event
	if err := json.Unmarshal(w.json(), &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestPusherClosedOnShutdown: Shutdown closes the push client after the push
// loop stopped.
func TestPusherClosedOnShutdown(t *testing.T) {
	e := newApprovalEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	e.push.mu.Lock()
	defer e.push.mu.Unlock()
	if e.push.closed != 1 {
		t.Errorf("closed %d times", e.push.closed)
	}
}

// TestFirstMatchingTokenWins: one token value listed twice (backend.token
// is both a serve.tokens entry and the data dir's token) takes the scopes
// of its first entry, for Bearer and cookie alike.
func TestFirstMatchingTokenWins(t *testing.T) {
	e := newEnvWith(t, newFakeStore(), func(o *Options) {
		o.ServeTokens = func() []config.ServeToken {
			return []config.ServeToken{{Name: "ops", Token: "same-token-0123456789", Scopes: []tokens.Scope{tokens.Admin}}, {Name: "default", Token: "same-token-0123456789"}}
		}
	})
	var who whoamiResponse
	if e.call("GET", "/api/whoami", nil, bearer("same-token-0123456789"), &who); who.Name != "ops" || !slices.Equal(who.Scopes, []tokens.Scope{tokens.Ingest, tokens.Read, tokens.Approve, tokens.Audit, tokens.Admin}) {
		t.Errorf("bearer: %+v", who)
	}
	cookie := e.login(t, "same-token-0123456789")
	if e.call("GET", "/api/whoami", nil, map[string]string{"Authorization": "", "Cookie": cookie}, &who); who.Name != "ops" || who.By != "dashboard:ops" {
		t.Errorf("cookie: %+v", who)
	}
}

// TestNotifyURLReceivesOnePostPerApproval: with NotifyURL set (the real
// push.Client), a receiver on loopback gets exactly one POST per pending
// approval, duplicates of its request included, naming the tool and
// linking to the approval, without the tool's input.
func TestNotifyURLReceivesOnePostPerApproval(t *testing.T) {
	type post struct {
		title, click, body string
	}
	posts := make(chan post, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		posts <- post{r.Header.Get("Title"), r.Header.Get("Click"), string(b)}
	}))
	defer rcv.Close()
	e := newApprovalEnv(t, func(o *Options) { o.pusher = nil; o.NotifyURL = rcv.URL + "/relay-topic" })
	req := envelope("s1", 1, relaywire.TypeApprovalRequested, relaywire.ApprovalRequested{RunID: "r1", ApprovalID: "a1", Kind: "tool",
		ToolName: "Bash", Title: "make deploy", Input: json.RawMessage(`{"command":"make deploy","secret":"INPUT-ONLY"}`), Options: optionsFor("tool")})
	e.post("s1", req)
	e.call("POST", "/api/sessions/s1/events", req.json(), nil, nil) // a retried post: a duplicate
	e.request("a2", "question", "AskUserQuestion", "Which color?")
	next := func() post {
		t.Helper()
		select {
		case p := <-posts:
			return p
		case <-time.After(wait):
			t.Fatal("no POST at the notify URL")
		}
		return post{}
	}
	first, second := next(), next()
	if first.title != "Claude wants to run Bash" || first.click != "https://relay.example/approvals#a1" || first.body != "Bash" ||
		strings.Contains(first.body, "INPUT-ONLY") {
		t.Errorf("first push %+v", first)
	}
	if second.title != "Claude asks a question" || !strings.HasSuffix(second.click, "#a2") {
		t.Errorf("second push %+v", second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil { // waits for the push client
		t.Fatal(err)
	}
	if n := len(posts); n != 0 {
		t.Errorf("%d more POSTs, want exactly one per approval", n)
	}
}
