package acp

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// TestACPBillingRefused (issue 26): with ANTHROPIC_API_KEY set and
// claude.billing subscription, an ACP session is refused before its first
// API request: session/new, or else the first prompt, answers an error that
// names the credential found and how to change it; the scripted API gets
// nothing and the record shows the refusal.
func TestACPBillingRefused(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{mockapi.TextTurn("should not be asked")})
	cwd := t.TempDir()
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	cli.TrustDir(cwd)
	env := startAgentExec(t, cli, api, cwd, func(o *executor.Options) { o.Billing = billing.PolicySubscription })
	if _, err := env.conn.Initialize(env.ctx(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	res, err := env.conn.NewSession(env.ctx(), acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	session := res.SessionId
	if err == nil {
		_, err = env.prompt(session, "hello")
	}
	if err == nil {
		t.Fatal("neither session/new nor the first prompt was refused")
	}
	msg := errorText(err)
	for _, want := range []string{"API key ANTHROPIC_API_KEY", "claude.billing is subscription", "Unset ANTHROPIC_API_KEY", "CLAUDE_RELAY_CLAUDE_BILLING"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, realcli.APIKey) {
		t.Error("the key's value is in the error")
	}
	if n := len(api.Requests()); n != 0 {
		t.Errorf("the scripted API got %d requests", n)
	}
	if session != "" {
		if got := strings.Join(env.spool.types(string(session)), " "); !strings.Contains(got, "relay.billing_source relay.billing_refused") {
			t.Errorf("spooled %s", got)
		}
	}
}

// errorText is everything a JSON-RPC error answer says: its message and
// its data.
func errorText(err error) string {
	var re *acpsdk.RequestError
	if errors.As(err, &re) {
		return fmt.Sprintf("%s %v", re.Message, re.Data)
	}
	return err.Error()
}
