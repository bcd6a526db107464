package acp

import (
	"errors"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/claude-relay/claude-relay/internal/budget"
	"github.com/claude-relay/claude-relay/internal/relay"
)

// TestBudgetRefusalIsAClearError: a prompt a budget refused answers a
// JSON-RPC error of its own code whose message names the cap, the spend
// and the reset (issue 26).
func TestBudgetRefusalIsAClearError(t *testing.T) {
	ex := &budget.ExhaustedError{Status: budget.Status{Project: "app", Period: budget.Day, CapUSD: 0.01, SpentUSD: 0.022}}
	err := errOf(&relay.RefusedError{Code: relay.RefuseBudget, Message: ex.Error(), Err: ex})
	var re *acpsdk.RequestError
	if !errors.As(err, &re) || re.Code != BudgetExhaustedCode || !strings.Contains(re.Message, "$0.01 daily budget") {
		t.Fatalf("errOf = %#v", err)
	}
	if d, ok := re.Data.(map[string]any); !ok || d["code"] != "budget_exhausted" {
		t.Errorf("data %#v", re.Data)
	}
}
