package store_test

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

func TestTitleOf(t *testing.T) {
	cut := strings.Repeat("ü", store.MaxTitleRunes-1) + "…"
	cases := []struct{ in, want string }{
		{"", ""},
		{" \n\t ", ""},
		{"  fix\n\nthe   bug\t", "fix the bug"},
		{"nul\x00byte", "nul\uFFFDbyte"},
		{strings.Repeat("ü", store.MaxTitleRunes), strings.Repeat("ü", store.MaxTitleRunes)},
		{strings.Repeat("ü", store.MaxTitleRunes+1), cut},
		{strings.Repeat("ü ", 300), titleCut(strings.Repeat("ü ", 300))},
	}
	for _, tc := range cases {
		got := store.TitleOf(tc.in)
		if got != tc.want {
			t.Errorf("TitleOf(%.20q…) = %.30q…, want %.30q…", tc.in, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); n > store.MaxTitleRunes || !utf8.ValidString(got) {
			t.Errorf("TitleOf(%.20q…): %d runes, valid %v", tc.in, n, utf8.ValidString(got))
		}
	}
}

// titleCut is the expected cut of a long prompt: 199 runes of its one-line
// form and "…".
func titleCut(s string) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	return string(r[:store.MaxTitleRunes-1]) + "…"
}

func TestAddSearch(t *testing.T) {
	text, changed := store.AddSearch("", "abc", "", "de\nf", "abc", "xyz")
	if text != "\nabc\nxyz\n" || !changed {
		t.Fatalf("AddSearch = %q, %v", text, changed)
	}
	if again, changed := store.AddSearch(text, "xyz", "abc"); again != text || changed {
		t.Errorf("adding known items = %q, %v; want no change", again, changed)
	}
	if got, _ := store.AddSearch(text, "ab"); got != text+"ab\n" {
		t.Errorf("a prefix of an item is an item of its own: %q", got)
	}
	big := strings.Repeat("x", store.MaxSearchText-10)
	full, _ := store.AddSearch("", big)
	if got, changed := store.AddSearch(full, strings.Repeat("y", 20)); changed || got != full {
		t.Errorf("past MaxSearchText: changed %v, %d bytes", changed, len(got))
	}
	if got, changed := store.AddSearch(full, "tiny"); !changed || len(got) > store.MaxSearchText {
		t.Errorf("a short item that fits: changed %v, %d bytes", changed, len(got))
	}
	for needle, want := range map[string]bool{"abc": true, "b": true, "abc xyz": false, "": true, "q": false} {
		if got := store.SearchMatches(text, needle); got != want {
			t.Errorf("SearchMatches(%q) = %v, want %v", needle, got, want)
		}
	}
	if got := store.SearchNeedle("  Hello \n WORLD\x00 "); got != "hello world\uFFFD" {
		t.Errorf("SearchNeedle = %q", got)
	}
}

func TestListingFacts(t *testing.T) {
	cases := []struct {
		name      string
		eventType string
		data      string
		want      store.Facts
	}{
		{"run_started", store.EventRunStarted, `{"prompt":"p","cwd":"/c","model":"m","mode":"terminal"}`,
			store.Facts{Lifecycle: store.StatusRunning, Prompt: "p", Cwd: "/c", CwdRank: store.CwdRun, Model: "m", Source: store.SourceTerminal}},
		{"acp run", store.EventRunStarted, `{"mode":"acp"}`, store.Facts{Lifecycle: store.StatusRunning, Source: store.SourceACP}},
		{"background run", store.EventRunStarted, `{"mode":"other"}`, store.Facts{Lifecycle: store.StatusRunning, Source: store.SourceBackground}},
		{"prompt hook", "hook.UserPromptSubmit", `{"prompt":"q","cwd":"/h"}`,
			store.Facts{Lifecycle: store.StatusRunning, Prompt: "q", Cwd: "/h", CwdRank: store.CwdHook, Source: store.SourceTerminal}},
		{"tool hook", "hook.PreToolUse", `{"tool_name":"Edit"}`, store.Facts{Tools: []string{"Edit"}, Source: store.SourceTerminal}},
		{"transcript", "transcript.assistant", `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Read"},{"type":"text","text":"x"},{"type":"tool_use","name":5}]}}`,
			store.Facts{Tools: []string{"Read"}, Source: store.SourceTerminal}},
		{"assistant", "assistant", `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash"},{"type":"tool_use","name":"Grep"}]}}`,
			store.Facts{Tools: []string{"Bash", "Grep"}}},
		{"assistant content not a list", "assistant", `{"type":"assistant","message":{"content":"hi"}}`, store.Facts{}},
		{"init", "system", `{"type":"system","subtype":"init","model":"claude-x","cwd":"/ignored"}`, store.Facts{Model: "claude-x"}},
		{"other system", "system", `{"type":"system","subtype":"status","model":"claude-x"}`, store.Facts{}},
		{"prompt elsewhere", "user", `{"prompt":"no","cwd":"/no","model":"no"}`, store.Facts{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := store.FactsOf(event("i", 1, tc.eventType, 0, tc.data))
			got := store.Facts{Lifecycle: f.Lifecycle, Prompt: f.Prompt, Cwd: f.Cwd, CwdRank: f.CwdRank,
				Model: f.Model, Source: f.Source, Tools: f.Tools}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("FactsOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestResultModels(t *testing.T) {
	cases := []struct {
		name   string
		data   string
		usage  store.Usage
		cost   float64
		models []string
	}{
		{"since last result first", `{"type":"result","total_cost_usd":9,"usage":{"input_tokens":99},
			"modelUsage":{"a":{"inputTokens":50,"costUSD":5}},
			"model_usage_since_last_result":{"b":{"inputTokens":2,"outputTokens":3,"cacheReadInputTokens":4,"cacheCreationInputTokens":5,"costUSD":0.5},"a":{"inputTokens":1,"costUSD":0.25}}}`,
			store.Usage{InputTokens: 3, OutputTokens: 3, CacheReadInputTokens: 4, CacheCreationInputTokens: 5}, 0.75, []string{"a", "b"}},
		{"modelUsage", `{"type":"result","total_cost_usd":9,"modelUsage":{"a":{"inputTokens":50,"costUSD":5}}}`,
			store.Usage{InputTokens: 50}, 5, []string{"a"}},
		{"empty breakdowns", `{"type":"result","total_cost_usd":0.5,"usage":{"output_tokens":7},"modelUsage":{},"model_usage_since_last_result":{"z":{"contextWindow":5}}}`,
			store.Usage{OutputTokens: 7}, 0.5, nil},
		{"malformed entries", `{"type":"result","total_cost_usd":0.5,"modelUsage":{"a":[1],"":{"costUSD":3},"b":{"costUSD":"x","outputTokens":1}}}`,
			store.Usage{OutputTokens: 1}, 0, []string{"b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := store.FactsOf(event("i", 1, "result", 0, tc.data)).Result
			var models []string
			var sum store.Usage
			var cost float64
			for _, m := range r.Models {
				models = append(models, m.Model)
				sum, cost = sum.Add(m.Usage), cost+m.CostUSD
			}
			if r.Usage != tc.usage || r.CostUSD != tc.cost || !reflect.DeepEqual(models, tc.models) {
				t.Errorf("result = %+v $%v %q, want %+v $%v %q", r.Usage, r.CostUSD, models, tc.usage, tc.cost, tc.models)
			}
			if len(r.Models) > 0 && (sum != r.Usage || cost != r.CostUSD) {
				t.Errorf("the models sum to %+v $%v, the result says %+v $%v", sum, cost, r.Usage, r.CostUSD)
			}
		})
	}
}
