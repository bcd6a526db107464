package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// policyHookWait bounds the policy hook's wait for our answer: the helper
// answers within its policy fetch timeout (5s), and this stays far below
// PolicyHookTimeout so that the hook, not the CLI, ends a stuck wait.
const policyHookWait = 60 * time.Second

// ExitBlock is the exit status with which a command hook refuses a tool
// call: the CLI shows its stderr to the model as the reason.
const ExitBlock = 2

// PolicyHook is `claude-relay hook-policy URL`, the PreToolUse command hook
// of a terminal run with a central policy: it posts the hook input (in) to
// the run's callback server and prints the decision it answers for the CLI
// to read. It fails closed: when the answer cannot be had (the helper is
// gone, stuck, or says something else than a JSON object) the call is
// refused with ExitBlock, because the CLI treats a failed or timed-out hook
// as no objection and would run the tool unchecked.
func PolicyHook(ctx context.Context, url string, in io.Reader, out, errw io.Writer) int {
	answer, err := askPolicy(ctx, url, in)
	if err != nil {
		fmt.Fprintf(errw, "claude-relay could not check this tool call against the team's central policy (%v), so it is refused. Do not try to get around it; tell the user that claude-relay's terminal run lost its helper.\n", err)
		return ExitBlock
	}
	out.Write(answer) //nolint:errcheck // nothing to do if the CLI stopped reading
	return 0
}

func askPolicy(ctx context.Context, url string, in io.Reader) ([]byte, error) {
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		return nil, fmt.Errorf("callback URL is not on 127.0.0.1")
	}
	body, err := io.ReadAll(io.LimitReader(in, MaxHookBody))
	if err != nil {
		return nil, fmt.Errorf("read the hook input: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, policyHookWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read the answer: %w", err)
	}
	var obj map[string]json.RawMessage
	switch {
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("the helper answered %s", resp.Status)
	case json.Unmarshal(answer, &obj) != nil:
		return nil, fmt.Errorf("the helper's answer is not a JSON object")
	}
	return answer, nil
}
