package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf16"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/claude-relay/claude-relay/internal/streamjson"
)

// maxTranscriptLine bounds one transcript line in memory. The CLI writes
// whole API requests (system prompt included) and pasted images on one
// line; a longer line is skipped rather than failing the whole load.
const maxTranscriptLine = 64 << 20

// maxProjectDir is where the CLI cuts a long project directory name and
// appends a hash instead (checked against CLI 2.1.330).
const maxProjectDir = 200

// transcriptPath is where the CLI keeps a conversation's transcript:
// <home>/.claude/projects/<project>/<sessionID>.jsonl, the project being
// cwd with symlinks resolved (the CLI runs in the real directory) and every
// UTF-16 unit but an ASCII letter or digit turned into '-'. A name over 200
// characters is cut there and gets "-" and a hash of the path appended.
// The CLI's CLAUDE_CONFIG_DIR, when set, replaces <home>/.claude.
func transcriptPath(home, cwd, sessionID string) string {
	return filepath.Join(home, ".claude", "projects", projectDir(cwd), sessionID+".jsonl")
}

// projectDir is the CLI's directory name for a project (its sanitizePath):
// JavaScript replaces /[^a-zA-Z0-9]/g per UTF-16 unit, so a character
// beyond the BMP becomes two dashes.
func projectDir(cwd string) string {
	if a, err := filepath.Abs(cwd); err == nil {
		cwd = a
	}
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	var b strings.Builder
	for _, r := range cwd {
		switch {
		case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			b.WriteRune(r)
		case r > 0xFFFF:
			b.WriteString("--")
		default:
			b.WriteByte('-')
		}
	}
	name := b.String()
	if len(name) <= maxProjectDir {
		return name
	}
	return name[:maxProjectDir] + "-" + strconv.FormatInt(javaHash(cwd), 36)
}

// javaHash is the CLI's hash of a long path: Java's String.hashCode over
// UTF-16 units in 32-bit arithmetic, then Math.abs (which, on a JavaScript
// number, keeps -2^31 positive).
func javaHash(s string) int64 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = h*31 + int32(u)
	}
	n := int64(h)
	if n < 0 {
		n = -n
	}
	return n
}

// replay turns a conversation's transcript into the updates session/load
// sends, in order: the user's prompts as user_message_chunk, the answers
// and thinking, tool calls with their results, plans. Lines that are not
// the conversation are skipped: the CLI's bookkeeping (queue operations,
// attachments, API request copies, cost state), meta and compact-summary
// user lines, subagents' sidechain lines, and its notices to the model.
// Tool calls left without a result (the run stopped mid-call) end failed.
func replay(transcriptPath string, cwd string) ([]acpsdk.SessionUpdate, error) {
	f, err := os.Open(transcriptPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no transcript for this session at %s: the Claude CLI keeps one per conversation and directory; check the session id and that cwd %s is where it ran: %w", transcriptPath, cwd, err)
		}
		return nil, fmt.Errorf("open transcript %s: %w", transcriptPath, err)
	}
	defer f.Close()
	r := replayer{t: newTranslator(cwd)}
	// The files have changed since: a diff's old text must come from the
	// transcript (a Write result's originalFile), never from the disk.
	r.t.read = nil
	if err := eachLine(f, maxTranscriptLine, r.line); err != nil {
		return nil, fmt.Errorf("read transcript %s: %w", transcriptPath, err)
	}
	return append(r.out, r.t.abandon()...), nil
}

// replayer collects the updates of one transcript.
type replayer struct {
	t   *translator
	out []acpsdk.SessionUpdate
}

// transcriptLine is what a transcript line adds to a stream-json line
// (the CLI writes camelCase names here), decoded to decide on skipping.
type transcriptLine struct {
	Type                      string          `json:"type"`
	Subtype                   string          `json:"subtype"`
	IsSidechain               bool            `json:"isSidechain"`
	IsMeta                    bool            `json:"isMeta"`
	IsCompactSummary          bool            `json:"isCompactSummary"`
	IsVisibleInTranscriptOnly bool            `json:"isVisibleInTranscriptOnly"`
	Content                   json.RawMessage `json:"content"` // system local_command: the command's output
	ToolUseResult             json.RawMessage `json:"toolUseResult"`
}

func (r *replayer) line(raw []byte) {
	var tl transcriptLine
	if err := json.Unmarshal(raw, &tl); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return // a torn last line, say: the rest is still worth showing
		}
	}
	if tl.IsSidechain || tl.IsMeta || tl.IsCompactSummary || tl.IsVisibleInTranscriptOnly {
		return
	}
	switch tl.Type {
	case streamjson.TypeAssistant:
		if msg, err := streamjson.Decode(raw); err == nil {
			r.out = append(r.out, r.t.line(msg)...)
		}
	case streamjson.TypeUser:
		msg, err := streamjson.Decode(raw)
		if err != nil || msg.User == nil {
			return
		}
		if user := userContent(msg.User.Message); len(user) > 0 {
			r.t.separate()
			r.out = append(r.out, user...)
		}
		msg.User.ToolUseResult = tl.ToolUseResult
		r.out = append(r.out, r.t.line(msg)...)
	case streamjson.TypeSystem:
		if tl.Subtype == "local_command" {
			var s string
			if json.Unmarshal(tl.Content, &s) == nil {
				r.t.separate()
				r.out = append(r.out, userText(s)...)
			}
		}
	}
}

// userContent is what the user sent: text and images. Tool results are the
// translator's.
func userContent(m streamjson.APIMessage) []acpsdk.SessionUpdate {
	var out []acpsdk.SessionUpdate
	for _, b := range m.Blocks() {
		switch {
		case b.Type == streamjson.BlockText:
			out = append(out, userText(b.Text)...)
		case b.Type == streamjson.BlockImage && b.Source != nil && b.Source.Type == "base64":
			out = append(out, acpsdk.UpdateUserMessage(acpsdk.ImageBlock(b.Source.Data, b.Source.MediaType)))
		}
	}
	return out
}

// noticePrefixes start user-role text the CLI wrote for the model, not the
// user: reminders, background task notices, interrupt markers.
var noticePrefixes = []string{
	"<system-reminder>", "<task-notification>", "<local-command-caveat>", "<command-message>",
	"[Request interrupted by user",
}

// userText is one user text as the user saw it: a slash command as typed
// ("/context args"), a local command's output as the agent's message, a
// notice to the model as nothing, anything else as the user's text.
func userText(s string) []acpsdk.SessionUpdate {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return nil
	case strings.HasPrefix(t, "<command-name>"):
		cmd := strings.TrimSpace(tagged(t, "command-name") + " " + tagged(t, "command-args"))
		return []acpsdk.SessionUpdate{acpsdk.UpdateUserMessageText(cmd)}
	case strings.HasPrefix(t, "<local-command-stdout>"), strings.HasPrefix(t, "<local-command-stderr>"):
		out := strings.TrimSpace(tagged(t, "local-command-stdout") + "\n" + tagged(t, "local-command-stderr"))
		if out == "" {
			return nil
		}
		return []acpsdk.SessionUpdate{acpsdk.UpdateAgentMessageText(out)}
	}
	for _, p := range noticePrefixes {
		if strings.HasPrefix(t, p) {
			return nil
		}
	}
	return []acpsdk.SessionUpdate{acpsdk.UpdateUserMessageText(s)}
}

// tagged is the text between <tag> and </tag> in s, or "".
func tagged(s, tag string) string {
	_, rest, ok := strings.Cut(s, "<"+tag+">")
	if !ok {
		return ""
	}
	inner, _, _ := strings.Cut(rest, "</"+tag+">")
	return strings.TrimSpace(inner)
}

// eachLine calls fn with every non-blank line of r (fn must not keep it),
// skipping lines longer than limit without holding them in memory.
func eachLine(r io.Reader, limit int, fn func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !skipping {
			if len(line)+len(chunk) > limit {
				skipping, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if !skipping && len(bytes.TrimSpace(line)) > 0 {
			fn(line)
		}
		line, skipping = line[:0], false
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
