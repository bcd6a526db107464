package backend

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/internal/server/audit"
	"github.com/claude-relay/claude-relay/internal/tokens"
	relaywire "github.com/claude-relay/claude-relay/internal/wire"
)

const auditToken = "audit-token-0123456789"

func auditTokens() []config.ServeToken {
	return append(scopedTokens(), config.ServeToken{Name: "siem", Token: auditToken, Scopes: []tokens.Scope{tokens.Audit}})
}

// TestAudit: GET /api/audit needs the audit scope (admin has it; the
// helper's, read and plain tokens do not), answers JSON Lines of the audit
// events in arrival order with the input digest, machine and project, and
// pages by cursor to the same bytes.
func TestAudit(t *testing.T) {
	for _, st := range []struct {
		name string
		env  func(*testing.T, ...envOption) *env
	}{
		{"memory", newEnv},
		{"sqlite", func(t *testing.T, o ...envOption) *env { return newEnvWith(t, openSQLite(t), o...) }},
	} {
		t.Run(st.name, func(t *testing.T) { testAudit(t, st.env) })
	}
}

func testAudit(t *testing.T, newE func(*testing.T, ...envOption) *env) {
	e := newE(t, func(o *Options) { o.ServeTokens = auditTokens })
	input := map[string]any{"command": "git push origin main"}
	posts := []wire{
		envelope("s1", 1, "relay.run_started", map[string]any{"v": 2, "run_id": "r1", "cwd": "/w/app", "host": "laptop-1"}),
		envelope("s1", 2, "relay.approval_requested", map[string]any{"v": 1, "run_id": "r1", "approval_id": "ap1",
			"kind": "tool", "tool_name": "Bash", "title": "git push origin main", "input": input}),
		envelope("s1", 3, "assistant", map[string]any{"type": "assistant"}),
		envelope("s1", 4, "relay.approval_resolved", map[string]any{"v": 1, "run_id": "r1", "approval_id": "ap1",
			"decision": "deny", "by": "dashboard", "decided_by": "dashboard:ops", "decision_id": "d1", "reason": "not today"}),
		envelope("s1", 5, "relay.mode_changed", map[string]any{"v": 1, "run_id": "r1", "permission_mode": "acceptEdits"}),
		envelope("s1", 6, "relay.run_completed", map[string]any{"v": 1, "run_id": "r1", "status": "completed",
			"result": map[string]any{"stdout": "secret output", "exitCode": 0}}),
	}
	for _, p := range posts {
		e.post("s1", p.with("source", "relay"))
	}

	for tok, want := range map[string]int{"": 401, "wrong-token-0123456789": 401, testToken: 403, readToken: 403,
		helperToken: 403, ingestToken: 403, phoneToken: 403, adminToken: 200, auditToken: 200} {
		hdr := bearer(tok)
		if tok == "" {
			hdr = map[string]string{"Authorization": ""}
		}
		resp := e.do("GET", "/api/audit", nil, hdr)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("token %q: %d %s, want %d", tok, resp.StatusCode, body, want)
		}
		if want == 403 && !strings.Contains(string(body), "--scope audit") {
			t.Errorf("403 does not say how to get the scope: %s", body)
		}
	}
	if code := e.call("GET", "/api/sessions", nil, bearer(auditToken), nil); code != 403 {
		t.Errorf("the audit token reads sessions: %d", code)
	}

	full, next := auditGet(t, e, "")
	recs := parseAudit(t, full)
	types := make([]string, len(recs))
	for i, r := range recs {
		types[i] = r.Type
	}
	if got := strings.Join(types, " "); got != "relay.approval_requested relay.approval_resolved relay.mode_changed relay.run_completed" {
		t.Fatalf("types: %s", got)
	}
	digest := relaywire.InputDigest(json.RawMessage(`{"command":"git push origin main"}`))
	req, dec, mode, end := recs[0], recs[1], recs[2], recs[3]
	if req.InputSHA256 != digest || dec.InputSHA256 != digest || req.ToolName != "Bash" || req.Title != "git push origin main" {
		t.Errorf("approval digests %q %q, want %q; request %+v", req.InputSHA256, dec.InputSHA256, digest, req)
	}
	if dec.Decision != "deny" || dec.By != "dashboard" || dec.DecidedBy != "dashboard:ops" || dec.Reason != "not today" {
		t.Errorf("decision: %+v", dec)
	}
	if mode.PermissionMode != "acceptEdits" || end.Status != "completed" || end.ExitCode == nil || *end.ExitCode != 0 {
		t.Errorf("mode %+v end %+v", mode, end)
	}
	for _, r := range recs {
		if r.V != 1 || r.SessionID != "s1" || r.RunID != "r1" || r.Project != "/w/app" || r.Machine != "laptop-1" ||
			r.ReceivedAt.IsZero() || r.Timestamp.IsZero() || r.Cursor == "" {
			t.Errorf("record %+v", r)
		}
		if bytes.Contains(r.Data, []byte(`"input"`)) || bytes.Contains(r.Data, []byte("secret output")) {
			t.Errorf("data keeps the input or output: %s", r.Data)
		}
	}
	if next != recs[3].Cursor {
		t.Errorf("trailer %s = %q, want the last cursor %q", AuditNextHeader, next, recs[3].Cursor)
	}

	t.Run("paging", func(t *testing.T) {
		var paged []byte
		after := ""
		for range 10 {
			page, n := auditGet(t, e, "limit=1&after="+url.QueryEscape(after))
			if len(page) == 0 {
				if n != after {
					t.Errorf("empty page's trailer %q, want the after given %q", n, after)
				}
				break
			}
			if lines := bytes.Count(page, []byte("\n")); lines != 1 {
				t.Fatalf("limit=1 gave %d lines", lines)
			}
			paged, after = append(paged, page...), n
		}
		if !bytes.Equal(paged, full) {
			t.Errorf("pages\n%s\ndiffer from one answer\n%s", paged, full)
		}
	})
	t.Run("filters", func(t *testing.T) {
		if page, _ := auditGet(t, e, "project=/elsewhere"); len(page) != 0 {
			t.Errorf("another project: %s", page)
		}
		if page, _ := auditGet(t, e, "project=/w/app&from=2000-01-01&to=2999-01-01"); !bytes.Equal(page, full) {
			t.Errorf("project and wide range: %s", page)
		}
		if page, _ := auditGet(t, e, "to=2000-01-01"); len(page) != 0 {
			t.Errorf("before everything: %s", page)
		}
		for _, q := range []string{"limit=0", "limit=x", "limit=100000", "after=bogus", "from=yesterday"} {
			if code := e.call("GET", "/api/audit?"+q, nil, bearer(auditToken), nil); code != 400 {
				t.Errorf("%s: %d, want 400", q, code)
			}
		}
	})
}

// auditGet reads a page with the audit token: the body and the trailer.
func auditGet(t *testing.T, e *env, query string) ([]byte, string) {
	t.Helper()
	resp := e.do("GET", "/api/audit?"+query, nil, bearer(auditToken))
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != audit.ContentType {
		t.Fatalf("GET /api/audit?%s: %d %s %s", query, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	return body, resp.Trailer.Get(AuditNextHeader)
}

func parseAudit(t *testing.T, body []byte) []audit.Record {
	t.Helper()
	var out []audit.Record
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}
