package policy

import (
	"encoding/json"
	"errors"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// kind is how a rule's specifier is matched.
type kind int

const (
	kindAny    kind = iota // the tool (or a set of tools) whatever the input
	kindBash               // a command: exact, legacy prefix, or wildcard
	kindPath               // a gitignore-style path pattern
	kindDomain             // WebFetch(domain:host)
	kindField              // the tool's primary input, * a wildcard
)

type matcher struct {
	tools     []string // exact tool names; nil with toolPrefix
	mcpPrefix string   // "mcp__server__": every tool of an MCP server
	kind      kind
	spec      string         // the specifier as written
	re        *regexp.Regexp // kindBash wildcards, kindField
	prefix    string         // kindBash legacy "prefix:*"
	exact     bool           // kindBash without a wildcard
}

// The CLI applies Edit rules to every tool that edits files and Read rules,
// as a best effort, to the tools that read them. A policy that says Write
// means writes, so Write rules are taken as Edit rules (the CLI itself only
// reads Edit and Read path rules).
var (
	editTools = []string{"Edit", "MultiEdit", "Write", "NotebookEdit"}
	readTools = []string{"Read", "Grep", "Glob", "LS"}
)

var toolName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*(__\*)?$`)

// parseRule reads "Tool" or "Tool(specifier)".
func parseRule(s string) (matcher, error) {
	s = strings.TrimSpace(s)
	name, spec, hasSpec := s, "", false
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return matcher{}, errors.New(`a specifier goes in parentheses at the end: Tool(specifier), e.g. "Bash(git push *)"`)
		}
		name, spec, hasSpec = s[:i], s[i+1:len(s)-1], true
	}
	if !toolName.MatchString(name) {
		return matcher{}, errors.New(`want a tool name (Bash, Edit, WebFetch, mcp__server__tool), optionally with (specifier)`)
	}
	m := matcher{tools: []string{name}, spec: spec}
	switch name {
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		m.tools = editTools
	case "Read":
		m.tools = readTools
	}
	if strings.HasPrefix(name, "mcp__") {
		if hasSpec {
			return matcher{}, errors.New("MCP rules take no specifier: mcp__server, mcp__server__* or mcp__server__tool")
		}
		parts := strings.SplitN(name[len("mcp__"):], "__", 2)
		if len(parts) == 1 || parts[1] == "*" {
			return matcher{mcpPrefix: "mcp__" + parts[0] + "__"}, nil
		}
		return m, nil
	}
	if !hasSpec || spec == "*" {
		return m, nil // every call of the tool
	}
	if spec == "" {
		return matcher{}, errors.New("empty specifier: write the bare tool name to match every call")
	}
	switch {
	case name == "Bash":
		m.kind = kindBash
		compileBash(&m)
	case len(m.tools) > 1: // Edit, Write, Read and friends
		m.kind = kindPath
	case name == "WebFetch":
		host, ok := strings.CutPrefix(spec, "domain:")
		if !ok || host == "" {
			return matcher{}, errors.New(`WebFetch takes domain:HOST ("domain:example.com", "domain:*.example.com", "domain:*")`)
		}
		m.kind, m.spec = kindDomain, strings.ToLower(host)
	default:
		m.kind, m.re = kindField, wildcard(spec, false)
	}
	return m, nil
}

// compileBash reads a Bash specifier the way the CLI does.
func compileBash(m *matcher) {
	if p, ok := strings.CutSuffix(m.spec, ":*"); ok && !strings.Contains(p, "*") {
		m.prefix = p
		return
	}
	if !hasWildcard(m.spec) {
		m.exact = true
		return
	}
	m.re = wildcard(m.spec, true)
}

// hasWildcard reports an unescaped *.
func hasWildcard(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*':
			return true
		}
	}
	return false
}

// wildcard compiles a pattern where * matches anything and \* is a star. For
// a command, a single trailing " *" is optional: "git *" matches "git".
func wildcard(s string, command bool) *regexp.Regexp {
	var b strings.Builder
	stars := strings.Count(strings.ReplaceAll(s, `\*`, ""), "*")
	optionalTail := command && stars == 1 && strings.HasSuffix(s, " *") && !strings.HasSuffix(s, `\ *`)
	if optionalTail {
		s = strings.TrimSuffix(s, " *")
	}
	b.WriteString(`^`)
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			i++
			b.WriteString(regexp.QuoteMeta(s[i : i+1]))
		case s[i] == '*':
			b.WriteString(`.*`)
		default:
			b.WriteString(regexp.QuoteMeta(s[i : i+1]))
		}
	}
	if optionalTail {
		b.WriteString(`(?:[ \t].*)?`)
	}
	b.WriteString(`$`)
	return regexp.MustCompile("(?s)" + b.String())
}

func (m matcher) matches(c Call, effect Effect) bool {
	if m.mcpPrefix != "" {
		return strings.HasPrefix(c.Tool, m.mcpPrefix)
	}
	if !contains(m.tools, c.Tool) {
		return false
	}
	switch m.kind {
	case kindBash:
		return m.matchCommand(field(c.Input, "command"), effect)
	case kindPath:
		p := field(c.Input, "file_path", "notebook_path", "path")
		if p == "" && (c.Tool == "Grep" || c.Tool == "Glob" || c.Tool == "LS") {
			p = c.Cwd // they search the working directory
		}
		return p != "" && matchPath(m.spec, p, c.Cwd, c.Home)
	case kindDomain:
		return matchDomain(m.spec, field(c.Input, "url"))
	case kindField:
		return m.re.MatchString(field(c.Input, "command", "file_path", "path", "url", "pattern", "query"))
	default:
		return true
	}
}

// matchCommand checks a command and, for a compound one, its parts: deny and
// ask hold when any part matches, allow only when every part does.
func (m matcher) matchCommand(cmd string, effect Effect) bool {
	cmd = strings.TrimSpace(cmd)
	if cmd == "" {
		return false
	}
	parts := splitCommand(cmd)
	if effect == Allow {
		for _, p := range parts {
			if !m.matchOne(p) {
				return false
			}
		}
		return true
	}
	if m.matchOne(cmd) {
		return true
	}
	for _, p := range parts {
		if m.matchOne(p) {
			return true
		}
	}
	return false
}

func (m matcher) matchOne(cmd string) bool {
	switch {
	case m.exact:
		return cmd == m.spec
	case m.re != nil:
		return m.re.MatchString(cmd)
	default:
		return cmd == m.prefix || strings.HasPrefix(cmd, m.prefix+" ")
	}
}

// splitCommand cuts a shell command at its operators (&&, ||, ;, |, &,
// newlines) and command substitutions ($( ), backticks, parentheses),
// outside quotes. It is no shell parser: what a variable, eval or a script
// runs is not seen (docs: SECURITY.md).
func splitCommand(cmd string) []string {
	var parts []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			parts = append(parts, s)
		}
		cur.Reset()
	}
	var quote byte
	for i := 0; i < len(cmd); i++ {
		ch := cmd[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else if ch == '\\' && quote == '"' && i+1 < len(cmd) {
				cur.WriteByte(ch)
				i++
				ch = cmd[i]
			}
			cur.WriteByte(ch)
			continue
		case ch == '\\' && i+1 < len(cmd):
			cur.WriteByte(ch)
			i++
			cur.WriteByte(cmd[i])
			continue
		case ch == '\'' || ch == '"':
			quote = ch
			cur.WriteByte(ch)
			continue
		case ch == '$' && i+1 < len(cmd) && cmd[i+1] == '(':
			i++
			flush()
			continue
		case strings.IndexByte("&|;\n()`{}", ch) >= 0:
			flush()
			continue
		}
		cur.WriteByte(ch)
	}
	flush()
	return parts
}

// matchPath matches a file against a gitignore-style pattern anchored as
// the CLI anchors it: //abs, ~/home, /project root, else the cwd.
func matchPath(pattern, file, cwd, home string) bool {
	if !filepath.IsAbs(file) {
		file = filepath.Join(cwd, file)
	}
	file = filepath.Clean(file)
	var base string
	switch {
	case strings.HasPrefix(pattern, "//"):
		base, pattern = "/", pattern[2:]
	case strings.HasPrefix(pattern, "~/"):
		if home == "" {
			return false
		}
		base, pattern = home, pattern[2:]
	case strings.HasPrefix(pattern, "/"):
		base, pattern = cwd, pattern[1:]
	default:
		base = cwd
		pattern = strings.TrimPrefix(pattern, "./")
		if !strings.Contains(strings.TrimSuffix(pattern, "/"), "/") {
			pattern = "**/" + pattern // no slash: at any depth, as in .gitignore
		}
	}
	rel, err := filepath.Rel(filepath.Clean(base), file)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return false
	}
	re := globRegexp(strings.TrimSuffix(pattern, "/"))
	// A pattern that names a directory takes everything under it.
	for p := filepath.ToSlash(rel); p != "." && p != ""; p = path.Dir(p) {
		if re.MatchString(p) {
			return true
		}
		if !strings.Contains(p, "/") {
			break
		}
	}
	return false
}

// globRegexp compiles a gitignore glob: * and ? stay in one segment, **
// spans segments.
func globRegexp(g string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^`)
	for i := 0; i < len(g); i++ {
		switch {
		case strings.HasPrefix(g[i:], "**/"):
			b.WriteString(`(?:.*/)?`)
			i += 2
		case strings.HasPrefix(g[i:], "/**") && i+3 == len(g):
			b.WriteString(`(?:/.*)?`)
			i += 2
		case strings.HasPrefix(g[i:], "**"):
			b.WriteString(`.*`)
			i++
		case g[i] == '*':
			b.WriteString(`[^/]*`)
		case g[i] == '?':
			b.WriteString(`[^/]`)
		case g[i] == '\\' && i+1 < len(g):
			i++
			b.WriteString(regexp.QuoteMeta(g[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(g[i : i+1]))
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile("(?s)" + b.String())
}

// matchDomain matches a URL's host against "host", "*.host" or "*".
func matchDomain(spec, raw string) bool {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Hostname() == "" {
		return spec == "*" && raw != ""
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	switch {
	case spec == "*":
		return true
	case strings.HasPrefix(spec, "*."):
		return strings.HasSuffix(host, spec[1:])
	default:
		return host == spec
	}
}

// field is the first of names that is a string in the input object.
func field(in json.RawMessage, names ...string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(in, &obj) != nil {
		return ""
	}
	for _, n := range names {
		var s string
		if raw, ok := obj[n]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
