package backend

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

// maxMarkdownCursors bounds one GET /api/sessions/{id}/markdown: a page
// asks for what it renders, a window of a few hundred cards.
const maxMarkdownCursors = 200

// markdownGap is the largest gap between two asked cursors that one store
// read covers: a window's text events sit among its tool events, so near
// cursors come cheaper in one read than one read each.
const markdownGap = 64

// markdownBudget bounds the rendering of one request: past it, the blocks
// left come back as escaped text (and the answer is not cached by the
// browser), so a page with many slow blocks still gets its answer soon.
// Renders cut short finish on the pool and are cached for the next view.
const markdownBudget = 5 * time.Second

// markdownMaxBytes bounds the HTML of one answer: past it, the blocks left
// come back empty, which the page shows as it shows text not rendered yet
// (escaped). A window of 200 events of many long blocks would otherwise
// be gigabytes.
const markdownMaxBytes = 64 << 20

type markdownResponse struct {
	// HTML maps an event's cursor to the HTML of each of its assistant text
	// blocks, in order; events without any are absent.
	HTML map[string][]string `json:"html"`
}

// handleMarkdown is GET /api/sessions/{id}/markdown?cursors=1,5,9: the
// assistant text of those events as sanitised HTML, for the session page.
// Events never change, so the answer may be cached (privately: it is the
// user's data), unless a block in it is a stand-in for a render that was
// cut short or left out.
func (s *Server) handleMarkdown(w http.ResponseWriter, r *http.Request) {
	cursors, msg := parseCursors(r.URL.Query().Get("cursors"))
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	session := r.PathValue("id")
	budget, cancel := context.WithTimeout(r.Context(), s.markdown.budget)
	defer cancel()
	out := markdownResponse{HTML: map[string][]string{}}
	final := true // no block is a stand-in
	size := 0     // of the HTML so far
	for _, span := range spans(cursors) {
		first, last := span[0], span[len(span)-1]
		evs, err := s.store.Events(r.Context(), session, first-1, int(last-first+1))
		if err != nil {
			s.storeError(w, r, err)
			return
		}
		for _, ev := range evs {
			if _, asked := slices.BinarySearch(span, ev.Cursor); !asked {
				continue
			}
			if texts := assistantTexts(ev); texts != nil {
				html, ok := s.markdown.blocks(budget, session, ev.Cursor, texts, &size)
				out.HTML[strconv.FormatInt(ev.Cursor, 10)] = html
				final = final && ok
			}
		}
		if r.Context().Err() != nil {
			return // the page went away; rendering more is for nobody
		}
	}
	if final {
		w.Header().Set("Cache-Control", "private, max-age=3600")
	} else {
		w.Header().Set("Cache-Control", "no-store")
	}
	writeJSON(w, http.StatusOK, out)
}

// parseCursors reads "1,5,9": sorted, without repeats. msg says what is
// wrong with the value, for a 400.
func parseCursors(v string) (cursors []int64, msg string) {
	if strings.TrimSpace(v) == "" {
		return nil, "cursors is required: a comma-separated list of event cursors, e.g. ?cursors=1,5,9"
	}
	parts := strings.Split(v, ",")
	if len(parts) > maxMarkdownCursors {
		return nil, "at most " + strconv.Itoa(maxMarkdownCursors) + " cursors per request, got " +
			strconv.Itoa(len(parts)) + "; ask in several requests"
	}
	for _, p := range parts {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || n < 1 {
			return nil, "cursors must be integers >= 1 separated by commas, got " + strconv.Quote(clip(p)) +
				" in " + strconv.Quote(clip(v))
		}
		cursors = append(cursors, n)
	}
	slices.Sort(cursors)
	return slices.Compact(cursors), ""
}

// spans splits sorted cursors into runs that one store read each covers:
// consecutive cursors at most markdownGap apart, at most maxEventsLimit
// wide.
func spans(cursors []int64) [][]int64 {
	var out [][]int64
	start := 0
	for i := 1; i <= len(cursors); i++ {
		if i == len(cursors) || cursors[i]-cursors[i-1] > markdownGap || cursors[i]-cursors[start] >= maxEventsLimit {
			out = append(out, cursors[start:i])
			start = i
		}
	}
	return out
}

// assistantTexts returns the text blocks of an assistant message, the CLI's
// "assistant" line or a terminal transcript's "transcript.assistant" (the
// same shape): every content block of type text, in order, also empty
// ones, so indexes match the page's. Nil for any other event.
func assistantTexts(ev store.Event) []string {
	if ev.EventType != "assistant" && ev.EventType != "transcript.assistant" {
		return nil
	}
	var data struct {
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(ev.EventData, &data) != nil {
		return nil
	}
	var one string
	if json.Unmarshal(data.Message.Content, &one) == nil {
		return []string{one}
	}
	var blocks []json.RawMessage
	if json.Unmarshal(data.Message.Content, &blocks) != nil {
		return nil
	}
	var texts []string
	for _, raw := range blocks {
		var b struct {
			Type string          `json:"type"`
			Text json.RawMessage `json:"text"`
		}
		if json.Unmarshal(raw, &b) != nil || b.Type != "text" {
			continue
		}
		var text string
		_ = json.Unmarshal(b.Text, &text) // not a string: an empty block, as the page counts it
		texts = append(texts, text)
	}
	return texts
}
