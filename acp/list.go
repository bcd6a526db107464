package acp

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// listHead is how much of a transcript session/list reads for its cwd and
// title: the first user message is near the top.
const listHead = 256 << 10

// listSessions lists the CLI's conversations, newest first: for cwd's
// project when cwd is set, else for every project.
func listSessions(home, cwd string) ([]acpsdk.SessionInfo, error) {
	root := filepath.Join(home, ".claude", "projects")
	dirs := []string{}
	if cwd != "" {
		dirs = append(dirs, filepath.Join(root, projectDir(cwd)))
	} else {
		entries, err := os.ReadDir(root)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(root, e.Name()))
			}
		}
	}
	type found struct {
		info acpsdk.SessionInfo
		mod  time.Time
	}
	var all []found
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			fi, err := os.Stat(f)
			if err != nil {
				continue
			}
			id := strings.TrimSuffix(filepath.Base(f), ".jsonl")
			if !isConversationID(id) {
				continue // session/load would refuse it
			}
			dirOf, title := transcriptHead(f)
			if dirOf == "" {
				dirOf = cwd
			}
			if dirOf == "" {
				continue // no way to load it: session/load needs the cwd
			}
			updated := fi.ModTime().UTC().Format(time.RFC3339)
			si := acpsdk.SessionInfo{SessionId: acpsdk.SessionId(id), Cwd: dirOf, UpdatedAt: &updated}
			if title != "" {
				si.Title = &title
			}
			all = append(all, found{si, fi.ModTime()})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod.After(all[j].mod) })
	out := make([]acpsdk.SessionInfo, 0, len(all))
	for _, f := range all {
		out = append(out, f.info)
	}
	return out, nil
}

// transcriptHead reads a transcript's cwd and its first user text (the
// title, one line, at most 80 characters).
func transcriptHead(path string) (cwd, title string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	buf := make([]byte, listHead)
	n, _ := f.Read(buf)
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		var l struct {
			Type    string `json:"type"`
			Cwd     string `json:"cwd"`
			IsMeta  bool   `json:"isMeta"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		if cwd == "" {
			cwd = l.Cwd
		}
		if title == "" && l.Type == "user" && !l.IsMeta {
			title = firstText(l.Message.Content)
		}
		if cwd != "" && title != "" {
			break
		}
	}
	return cwd, title
}

// titleOf is a prompt's text as a one-line session title ("" for none).
func titleOf(text string) string {
	b, _ := json.Marshal(text) // a string always marshals
	return firstText(b)
}

// firstText is a user message's text, as a one-line title.
func firstText(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) != nil {
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(c, &blocks)
		for _, b := range blocks {
			if b.Type == "text" {
				s = b.Text
				break
			}
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	if strings.HasPrefix(s, "<") { // command wrappers and the like are no title
		return ""
	}
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}
