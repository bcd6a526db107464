package fakecli

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Wire shapes of the lines the fake writes, modelled on what the real CLI
// 2.1.330 was seen to print (see /work/shared/CLAUDE_CLI_NOTES.md). Structs
// rather than maps keep "type" first on each line, as the real CLI does.

type systemInit struct {
	Type           string   `json:"type"`
	Subtype        string   `json:"subtype"`
	CWD            string   `json:"cwd"`
	SessionID      string   `json:"session_id"`
	Tools          []string `json:"tools"`
	MCPServers     []any    `json:"mcp_servers"`
	Model          string   `json:"model"`
	PermissionMode string   `json:"permissionMode"`
	SlashCommands  []string `json:"slash_commands"`
	APIKeySource   string   `json:"apiKeySource"`
	Version        string   `json:"claude_code_version"`
	OutputStyle    string   `json:"output_style"`
	UUID           string   `json:"uuid"`
}

type usage struct {
	InputTokens              int    `json:"input_tokens"`
	CacheCreationInputTokens int    `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int    `json:"cache_read_input_tokens"`
	OutputTokens             int    `json:"output_tokens"`
	ServiceTier              string `json:"service_tier"`
}

type apiMessage struct {
	ID         string  `json:"id,omitempty"`
	Type       string  `json:"type,omitempty"`
	Role       string  `json:"role"`
	Model      string  `json:"model,omitempty"`
	Content    []any   `json:"content"`
	StopReason *string `json:"stop_reason,omitempty"`
	Usage      *usage  `json:"usage,omitempty"`
}

// chatLine is an "assistant" or "user" line.
type chatLine struct {
	Type            string     `json:"type"`
	Message         apiMessage `json:"message"`
	ParentToolUseID *string    `json:"parent_tool_use_id"`
	SessionID       string     `json:"session_id"`
	UUID            string     `json:"uuid"`
	ToolUseResult   any        `json:"tool_use_result,omitempty"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolUseBlock struct {
	Type  string         `json:"type"`
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

type toolResultBlock struct {
	ToolUseID string `json:"tool_use_id"`
	Type      string `json:"type"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error"`
}

type bashResult struct {
	Stdout      string `json:"stdout"`
	Stderr      string `json:"stderr"`
	Interrupted bool   `json:"interrupted"`
	IsImage     bool   `json:"isImage"`
}

type modelUsage struct {
	InputTokens              int     `json:"inputTokens"`
	OutputTokens             int     `json:"outputTokens"`
	CacheReadInputTokens     int     `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int     `json:"cacheCreationInputTokens"`
	WebSearchRequests        int     `json:"webSearchRequests"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int     `json:"contextWindow"`
}

type permissionDenial struct {
	ToolName  string         `json:"tool_name"`
	ToolUseID string         `json:"tool_use_id"`
	ToolInput map[string]any `json:"tool_input"`
}

type resultLine struct {
	Type          string `json:"type"`
	Subtype       string `json:"subtype"`
	IsError       bool   `json:"is_error"`
	DurationMS    int64  `json:"duration_ms"`
	DurationAPIMS int64  `json:"duration_api_ms"`
	NumTurns      int    `json:"num_turns"`
	// Result is a pointer because the real CLI leaves the key out of the
	// result of an interrupted turn (anthropics/claude-code#94741).
	Result            *string               `json:"result,omitempty"`
	SessionID         string                `json:"session_id"`
	TotalCostUSD      float64               `json:"total_cost_usd"`
	Usage             usage                 `json:"usage"`
	ModelUsage        map[string]modelUsage `json:"modelUsage"`
	PermissionDenials []permissionDenial    `json:"permission_denials"`
	UUID              string                `json:"uuid"`
}

type controlRequestLine struct {
	Type      string         `json:"type"`
	RequestID string         `json:"request_id"`
	Request   map[string]any `json:"request"`
}

type controlResponseLine struct {
	Type     string          `json:"type"`
	Response controlResponse `json:"response"`
}

type controlResponse struct {
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	Response  any    `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
	ErrorCode string `json:"error_code,omitempty"`
}

// session is what stays fixed for the life of one fake process.
type session struct {
	id    string
	model string
	cwd   string
}

func (s session) init(permissionMode string) systemInit {
	return systemInit{
		Type: "system", Subtype: "init", CWD: s.cwd, SessionID: s.id,
		Tools:          []string{"Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "WebFetch", "TodoWrite"},
		MCPServers:     []any{},
		Model:          s.model,
		PermissionMode: permissionMode,
		SlashCommands:  []string{"compact", "context", "cost", "init", "review"},
		APIKeySource:   "ANTHROPIC_API_KEY",
		Version:        Version,
		OutputStyle:    "default",
		UUID:           newUUID(),
	}
}

func (s session) assistant(content ...any) chatLine {
	return chatLine{
		Type: "assistant",
		Message: apiMessage{
			ID: "msg_" + newUUID()[:8], Type: "message", Role: "assistant", Model: s.model,
			Content: content,
			Usage:   &usage{InputTokens: 10, OutputTokens: 5, ServiceTier: "standard"},
		},
		SessionID: s.id,
		UUID:      newUUID(),
	}
}

func (s session) toolResult(content string, isError bool, detail any) chatLine {
	return chatLine{
		Type: "user",
		Message: apiMessage{Role: "user", Content: []any{toolResultBlock{
			ToolUseID: ToolUseID, Type: "tool_result", Content: content, IsError: isError,
		}}},
		SessionID:     s.id,
		UUID:          newUUID(),
		ToolUseResult: detail,
	}
}

// result builds a turn's last line; text nil means the turn was interrupted.
func (s session) result(start time.Time, turns int, text *string, denials []permissionDenial) resultLine {
	ms := time.Since(start).Milliseconds()
	r := resultLine{
		Type: "result", Subtype: "success", DurationMS: ms, DurationAPIMS: ms,
		NumTurns: turns, Result: text, SessionID: s.id, TotalCostUSD: CostUSD,
		Usage: usage{InputTokens: 10, OutputTokens: 5, ServiceTier: "standard"},
		ModelUsage: map[string]modelUsage{s.model: {
			InputTokens: 10, OutputTokens: 5, CostUSD: CostUSD, ContextWindow: 200000,
		}},
		PermissionDenials: denials,
		UUID:              newUUID(),
	}
	if r.PermissionDenials == nil {
		r.PermissionDenials = []permissionDenial{}
	}
	if text == nil {
		r.Subtype, r.IsError = "error_during_execution", true
	}
	return r
}

// transcriptPath is where the real CLI keeps the session's transcript; hook
// inputs carry it.
func (s session) transcriptPath() string {
	home, _ := os.UserHomeDir()
	dir := strings.ReplaceAll(s.cwd, string(filepath.Separator), "-")
	return filepath.Join(home, ".claude", "projects", dir, s.id+".jsonl")
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
