package backend

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func assistantLine(blocks ...any) map[string]any {
	return map[string]any{"type": "assistant", "session_id": "conv",
		"message": map[string]any{"role": "assistant", "content": blocks}}
}

func textBlock(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func TestMarkdown(t *testing.T) {
	e := newEnv(t)
	evs := []wire{
		envelope("s1", 1, "assistant", assistantLine(textBlock("# Title\n\n- one"), map[string]any{"type": "tool_use", "id": "t1", "name": "Bash"}, textBlock("`code`"))),
		envelope("s1", 2, "user", map[string]any{"type": "user", "message": map[string]any{"content": "# not assistant"}}),
		envelope("s1", 3, "assistant", assistantLine(map[string]any{"type": "thinking", "thinking": "# hidden"})),
		envelope("s1", 4, "transcript.assistant", map[string]any{"type": "assistant", "uuid": "u1",
			"message": map[string]any{"content": []any{textBlock("[x](javascript:alert(1)) <script>alert(1)</script>")}}}),
		// Odd shapes: a string content, a non-string text, no message.
		envelope("s1", 5, "assistant", map[string]any{"type": "assistant", "message": map[string]any{"content": "**bold**"}}),
		envelope("s1", 6, "assistant", assistantLine(map[string]any{"type": "text", "text": 42}, "not a block", textBlock("after"))),
		envelope("s1", 7, "assistant", map[string]any{"type": "assistant"}),
		envelope("s1", 8, "assistant", assistantLine(textBlock(strings.Repeat("# big <b>\n", 30000)))),
	}
	for _, ev := range evs {
		e.post("s1", ev)
	}

	var out markdownResponse
	resp := e.do("GET", "/api/sessions/s1/markdown?cursors=8,1,2,3,4,5,6,7,1,99", nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "private") || !strings.Contains(cc, "max-age=") {
		t.Errorf("Cache-Control %q, want private with a max-age", cc)
	}
	resp.Body.Close()
	if code := e.call("GET", "/api/sessions/s1/markdown?cursors=8,1,2,3,4,5,6,7,1,99", nil, nil, &out); code != 200 {
		t.Fatalf("status %d", code)
	}
	want := map[string][]string{
		"1": {"<h1>Title</h1>\n<ul>\n<li>one</li>\n</ul>\n", "<p><code>code</code></p>\n"},
		"4": {"<p>x &lt;script&gt;alert(1)&lt;/script&gt;</p>\n"},
		"5": {"<p><strong>bold</strong></p>\n"},
		"6": {"", "<p>after</p>\n"},
	}
	for k, w := range want {
		if fmt.Sprintf("%q", out.HTML[k]) != fmt.Sprintf("%q", w) {
			t.Errorf("cursor %s: %q, want %q", k, out.HTML[k], w)
		}
	}
	for _, k := range []string{"2", "3", "7", "99"} {
		if v, ok := out.HTML[k]; ok {
			t.Errorf("cursor %s has an entry %q; only assistant text blocks do", k, v)
		}
	}
	// Over MaxInput: escaped plain text, not parsed.
	if big := out.HTML["8"]; len(big) != 1 || !strings.HasPrefix(big[0], `<pre class="md-plain">`) || strings.Contains(big[0], "<h1>") {
		t.Errorf("big text: %.100q", big)
	}

	// An unknown session has no events: an empty map.
	var none markdownResponse
	if code := e.call("GET", "/api/sessions/nope/markdown?cursors=1", nil, nil, &none); code != 200 || none.HTML == nil || len(none.HTML) != 0 {
		t.Errorf("unknown session: %d %v", code, none.HTML)
	}
}

func TestMarkdownBadCursors(t *testing.T) {
	e := newEnv(t)
	many := strings.TrimSuffix(strings.Repeat("1,", maxMarkdownCursors+1), ",")
	for _, c := range []struct{ q, want string }{
		{"", "cursors is required"},
		{"?cursors=", "cursors is required"},
		{"?cursors=1,x", `"x"`},
		{"?cursors=0", `"0"`},
		{"?cursors=-3", `"-3"`},
		{"?cursors=" + many, "at most 200 cursors"},
	} {
		var body errorBody
		if code := e.call("GET", "/api/sessions/s1/markdown"+c.q, nil, nil, &body); code != http.StatusBadRequest || !strings.Contains(body.Error, c.want) {
			t.Errorf("%q: %d %q, want 400 saying %q", c.q, code, body.Error, c.want)
		}
	}
	// Reads need the token like every other read.
	if code := e.call("GET", "/api/sessions/s1/markdown?cursors=1", nil, map[string]string{"Authorization": ""}, nil); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", code)
	}
}

func TestSpans(t *testing.T) {
	got := fmt.Sprint(spans([]int64{1, 2, 60, 200, 201, 5000}))
	if got != "[[1 2 60] [200 201] [5000]]" {
		t.Errorf("spans %s", got)
	}
	wide := make([]int64, 0, 40)
	for i := range int64(40) {
		wide = append(wide, 1+i*50)
	}
	for _, s := range spans(wide) {
		if s[len(s)-1]-s[0] >= maxEventsLimit {
			t.Errorf("span %d..%d is wider than one read", s[0], s[len(s)-1])
		}
	}
}
