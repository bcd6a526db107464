package store

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// Event types the derivation rules look at (CONTRACT §6): the relay's
// lifecycle events, as the helper and the terminal runner write them.
const (
	EventRunStarted   = wire.TypeRunStarted
	EventRunCompleted = wire.TypeRunCompleted
	EventRunFailed    = wire.TypeRunFailed
	EventRunCancelled = wire.TypeRunCancelled
	EventResult       = "result" // the CLI's final event of a turn
)

// Session statuses.
const (
	StatusRunning   = string(wire.StatusRunning)
	StatusCompleted = string(wire.StatusCompleted)
	StatusFailed    = string(wire.StatusFailed)
	StatusCancelled = string(wire.StatusCancelled)
	// StatusInterrupted: the latest turn of a live or terminal run was
	// stopped (relay.turn_completed interrupted) and the run waits for the
	// next message.
	StatusInterrupted = string(wire.StatusInterrupted)
	StatusUnknown     = "unknown" // a session with no lifecycle event yet
)

// Facts is what the derivation rules read from one event. FactsOf parses
// event_data once so that a backend folds an event without parsing it again.
type Facts struct {
	Candidate string  // conversation-ID candidate, "" when the event has none
	Lifecycle string  // the status a relay lifecycle event sets, "" otherwise
	Result    *Result // non-nil for an event counted in usage (see FactsOf)
	// TurnDone: a relay.turn_completed whose turn completed. A run
	// cancelled after it, in the same interaction, was closed while idle.
	TurnDone bool

	// What the session list shows (listing.go).
	Prompt string // a prompt the user gave, as sent, or a description of its blocks ("" when none)
	// LegacyPrompt: Prompt is the summary a helper before event schema 2
	// recorded in place of a prompt given with content blocks, such as
	// "[text, 30 B]"; it titles a session only when no real prompt does.
	LegacyPrompt bool
	Cwd          string   // a working directory the event names
	CwdRank      int      // how much Cwd says about the project: CwdRun or CwdHook
	Source       string   // the kind of session the event shows, "" when it shows none
	Model        string   // the model a run used (system/init) or asked for (relay.run_started)
	Tools        []string // names of the tools the event calls
	BilledTo     string   // where the run's credentials come from, for people (billing.go)
	BilledRank   int      // how much BilledTo says: BilledGuard or BilledInit

	// Approvals (approvals.go).
	RunID           string                  // event_data.run_id of a relay lifecycle event
	ApprovalRequest *wire.ApprovalRequested // relay.approval_requested with an approval_id
	ApprovalResolve *wire.ApprovalResolved  // relay.approval_resolved with an approval_id
}

// How much a Facts.Cwd says about the session's project: a run's own
// working directory outranks a hook's.
const (
	CwdHook = 1
	CwdRun  = 2
)

// Result is the usage and cost one event reports: a CLI result, or a
// terminal run's turn or end (FactsOf).
type Result struct {
	// Key identifies the result within its session so that a result re-sent
	// under another event_id counts once: "uuid:<event_data.uuid>" when the
	// event has a uuid, else "seq:<interaction_id>:<seq>"; a terminal
	// run's "turn:<run_id>:<turn>" and "end:<run_id>".
	Key     string
	Usage   Usage
	CostUSD float64
	// Models splits Usage and CostUSD by model (sorted by name, summing to
	// them exactly); empty when the result names no model, and then its
	// usage belongs to the session's model.
	Models []ModelUsage
	// CostOnly: a terminal run's end, which adds the run's cost (the CLI's
	// own record) and neither a turn nor tokens (its turns counted those).
	CostOnly bool
}

// ModelUsage is one model's share of a result.
type ModelUsage struct {
	Model   string
	Usage   Usage
	CostUSD float64
}

// FactsOf applies the per-event rules:
//
//   - conversation-ID candidate: event_data.conversation_id, else
//     event_data.conversationId, else event_data.session_id unless
//     event_data.type is "system"; non-empty strings only (CONTRACT §6);
//   - lifecycle: relay.run_started → running, relay.run_completed →
//     completed, relay.run_failed → failed, relay.run_cancelled → cancelled;
//   - result: event_type "result" whose event_data.type is "result" (see
//     resultOf for the figures), and the two events a terminal run posts
//     in their stead, since the interactive CLI writes no result line
//     (terminalTurnOf, terminalEndOf): relay.turn_completed with mode
//     "terminal" (a turn: tokens, by model) and relay.run_completed,
//     run_failed or run_cancelled with mode "terminal" and a cost (cost
//     only). A background run's relay.turn_completed and end events
//     repeat its result lines' numbers, so counting them too would double
//     them.
//   - the list fields and approvals: see listingFacts and approvalFacts.
//
// Keys match exactly (encoding/json's case-insensitive struct matching would
// let "Session_ID" through). Event data that is not a JSON object has no
// facts but its lifecycle.
func FactsOf(ev Event) Facts {
	f := Facts{Lifecycle: LifecycleStatus(ev.EventType)}
	var obj map[string]json.RawMessage
	if json.Unmarshal(ev.EventData, &obj) != nil {
		return f
	}
	typ := jsonString(obj["type"])
	f.Candidate = conversationCandidate(obj, typ)
	f.TurnDone = ev.EventType == wire.TypeTurnCompleted && jsonString(obj["status"]) == StatusCompleted
	terminal := jsonString(obj["mode"]) == wire.ModeTerminal
	switch {
	case ev.EventType == EventResult && typ == "result":
		f.Result = resultOf(ev, obj)
	case terminal && ev.EventType == wire.TypeTurnCompleted:
		f.Result = terminalTurnOf(ev, obj)
	case terminal && f.Lifecycle != "" && f.Lifecycle != StatusRunning:
		f.Result = terminalEndOf(ev, obj)
	}
	if l := turnLifecycle(ev.EventType, obj); l != "" {
		f.Lifecycle = l
	}
	listingFacts(&f, ev, obj, typ)
	billingFacts(&f, ev, obj, typ)
	approvalFacts(&f, ev, obj)
	return f
}

// ConversationCandidate returns the conversation-ID candidate of event data,
// "" when it has none. See FactsOf for the rule.
func ConversationCandidate(eventData json.RawMessage) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(eventData, &obj) != nil {
		return ""
	}
	return conversationCandidate(obj, jsonString(obj["type"]))
}

func conversationCandidate(obj map[string]json.RawMessage, typ string) string {
	if id := jsonString(obj["conversation_id"]); id != "" {
		return id
	}
	if id := jsonString(obj["conversationId"]); id != "" {
		return id
	}
	if typ == "system" {
		// system/init carries the CLI's session_id before the conversation
		// exists under it (and hooks' system events describe other things).
		return ""
	}
	return jsonString(obj["session_id"])
}

// LifecycleStatus maps a relay lifecycle event type to the status it sets; ""
// for any other event type.
func LifecycleStatus(eventType string) string {
	switch eventType {
	case EventRunStarted:
		return StatusRunning
	case EventRunCompleted:
		return StatusCompleted
	case EventRunFailed:
		return StatusFailed
	case EventRunCancelled:
		return StatusCancelled
	}
	return ""
}

// turnLifecycle is the status a turn's start or end sets for its
// interaction, "" for any other event: a live or terminal run runs a turn
// from each message (relay.message_sent, a terminal's UserPromptSubmit
// hook) and, between turns, is as its last turn ended (completed, failed,
// interrupted), until the run's own end.
func turnLifecycle(eventType string, obj map[string]json.RawMessage) string {
	switch eventType {
	case wire.TypeMessageSent, "hook.UserPromptSubmit":
		return StatusRunning
	case wire.TypeTurnCompleted:
		switch st := jsonString(obj["status"]); st {
		case StatusCompleted, StatusFailed, StatusInterrupted, StatusCancelled:
			return st
		}
	}
	return ""
}

// resultOf reads a result's figures. The CLI states them three ways:
//
//   - model_usage_since_last_result (CLI 2.1.3xx): per model, what the
//     process counted since its previous result. The CLI documents it as
//     the figure to sum over a conversation's results, each call stated on
//     one result only.
//   - modelUsage: per model, but cumulative over a process (a live run's
//     second result repeats the first's calls) and, after --resume, starting
//     from the resumed conversation's saved total; used when the first is
//     absent (older CLIs).
//   - usage (main loop only, per turn) and total_cost_usd (cumulative like
//     modelUsage): used when neither names a model.
//
// With a per-model breakdown, Usage and CostUSD are its sums, so a session's
// totals always equal the sum of its per-model usage rows. Entries whose
// figures are all zero are dropped.
func resultOf(ev Event, obj map[string]json.RawMessage) *Result {
	r := &Result{}
	if uuid := jsonString(obj["uuid"]); uuid != "" {
		r.Key = "uuid:" + uuid
	} else {
		r.Key = "seq:" + ev.InteractionID + ":" + strconv.FormatInt(ev.Seq, 10)
	}
	r.Models = modelUsageOf(obj["model_usage_since_last_result"])
	if len(r.Models) == 0 {
		r.Models = modelUsageOf(obj["modelUsage"])
	}
	if len(r.Models) > 0 {
		for _, m := range r.Models {
			r.Usage = r.Usage.Add(m.Usage)
			r.CostUSD += m.CostUSD
		}
		return r
	}
	r.Models = nil
	r.CostUSD = jsonFloat(obj["total_cost_usd"])
	r.Usage = usageOf(obj["usage"])
	return r
}

// usageOf reads a usage object (the API's snake_case names, as wire.Usage).
func usageOf(raw json.RawMessage) Usage {
	var u map[string]json.RawMessage
	if json.Unmarshal(raw, &u) != nil {
		return Usage{}
	}
	return Usage{
		InputTokens:              jsonInt(u["input_tokens"]),
		OutputTokens:             jsonInt(u["output_tokens"]),
		CacheReadInputTokens:     jsonInt(u["cache_read_input_tokens"]),
		CacheCreationInputTokens: jsonInt(u["cache_creation_input_tokens"]),
	}
}

// terminalTurnOf reads a terminal run's relay.turn_completed: one turn, its
// tokens summed from the transcript's assistant messages, by model
// (model_usage, else usage under the session's model). It counts a turn
// as a CLI result does; its cost is counted by the run's end.
func terminalTurnOf(ev Event, obj map[string]json.RawMessage) *Result {
	r := &Result{Key: "turn:" + runKey(ev, obj) + ":" + strconv.FormatInt(jsonInt(obj["turn"]), 10)}
	r.Models = wireModelUsageOf(obj["model_usage"], false)
	if len(r.Models) == 0 {
		r.Models, r.Usage = nil, usageOf(obj["usage"])
		return r
	}
	for _, m := range r.Models {
		r.Usage = r.Usage.Add(m.Usage)
	}
	return r
}

// EndKeyPrefix starts the key of a cost-only result (a terminal run's
// end), which usage rows do not count as a turn.
const EndKeyPrefix = "end:"

// terminalEndOf reads a terminal run's end: its cost by the CLI's own
// records (model_usage's cost_usd, else total_cost_usd), nil when it has
// none. Its tokens are its turns' and are not counted again.
func terminalEndOf(ev Event, obj map[string]json.RawMessage) *Result {
	r := &Result{Key: EndKeyPrefix + runKey(ev, obj), CostOnly: true}
	r.Models = wireModelUsageOf(obj["model_usage"], true)
	for _, m := range r.Models {
		r.CostUSD += m.CostUSD
	}
	if len(r.Models) == 0 {
		r.Models, r.CostUSD = nil, jsonFloat(obj["total_cost_usd"])
	}
	if r.CostUSD <= 0 {
		return nil
	}
	return r
}

// runKey names a terminal run's events in result keys: its run_id, else
// the event's place.
func runKey(ev Event, obj map[string]json.RawMessage) string {
	if id := jsonString(obj["run_id"]); id != "" {
		return id
	}
	return "seq:" + ev.InteractionID + ":" + strconv.FormatInt(ev.Seq, 10)
}

// wireModelUsageOf reads the relay's model_usage (model name → wire.ModelUsage,
// snake_case), sorted by model: tokens alone, or with costOnly cost_usd
// alone; nil when it names none with figures.
func wireModelUsageOf(raw json.RawMessage, costOnly bool) []ModelUsage {
	return modelsOf(raw, func(m map[string]json.RawMessage, entry json.RawMessage) (Usage, float64) {
		if costOnly {
			return Usage{}, max(jsonFloat(m["cost_usd"]), 0)
		}
		return usageOf(entry), 0
	})
}

// modelUsageOf reads a modelUsage-shaped object (model name → figures in
// the CLI's camelCase), sorted by model; nil when it names none with figures.
func modelUsageOf(raw json.RawMessage) []ModelUsage {
	return modelsOf(raw, func(m map[string]json.RawMessage, _ json.RawMessage) (Usage, float64) {
		return Usage{
			InputTokens:              jsonInt(m["inputTokens"]),
			OutputTokens:             jsonInt(m["outputTokens"]),
			CacheReadInputTokens:     jsonInt(m["cacheReadInputTokens"]),
			CacheCreationInputTokens: jsonInt(m["cacheCreationInputTokens"]),
		}, jsonFloat(m["costUSD"])
	})
}

// modelsOf reads an object of model name → figures with read, sorted by
// model, leaving out unnamed models and entries without figures; nil when
// none is left. One malformed entry does not hide the others.
func modelsOf(raw json.RawMessage, read func(m map[string]json.RawMessage, entry json.RawMessage) (Usage, float64)) []ModelUsage {
	var byModel map[string]json.RawMessage
	if json.Unmarshal(raw, &byModel) != nil {
		return nil
	}
	var out []ModelUsage
	for model, entry := range byModel {
		var m map[string]json.RawMessage
		if model == "" || json.Unmarshal(entry, &m) != nil {
			continue
		}
		u, cost := read(m, entry)
		if u == (Usage{}) && cost == 0 {
			continue
		}
		out = append(out, ModelUsage{Model: model, Usage: u, CostUSD: cost})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}

// jsonString returns raw as a string when it is a JSON string, else "".
func jsonString(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func jsonFloat(raw json.RawMessage) float64 {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == '"' {
		return 0
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return 0
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

func jsonInt(raw json.RawMessage) int64 {
	f := jsonFloat(raw)
	if f > math.MaxInt64 || f < math.MinInt64 {
		return 0
	}
	return int64(f)
}

// Interaction is the aggregate of one interaction's events that the
// session-level rules pick from. Apply folds events into it; the outcome does
// not depend on the order of the calls, so a backend can keep one row per
// interaction and update it as events arrive in any order.
//
// Ties (two events with one seq, which only a client re-sending an event
// under a new event_id with other content produces) are broken by value so
// that they too are order-independent.
type Interaction struct {
	ID         string
	EventCount int64
	// FirstEventAt is the earliest envelope timestamp of any of its events;
	// it orders interactions for the status rule.
	FirstEventAt time.Time

	// ConversationID is the candidate of the lowest-seq event that has one
	// (seq ConversationSeq); ConversationAt is the earliest timestamp of the
	// events that have one, and orders interactions for the conversation rule.
	ConversationID  string
	ConversationSeq int64
	ConversationAt  time.Time

	// The lifecycle event with the highest seq decides the status.
	LifecycleSeq int64
	Status       string // "" when the interaction has no lifecycle event
	LifecycleAt  time.Time
	// StartedSeq and StartedAt are of the lowest-seq relay.run_started.
	StartedSeq int64
	StartedAt  time.Time
	// TurnDoneSeq is the highest seq of a relay.turn_completed whose turn
	// completed (Facts.TurnDone); 0 when none.
	TurnDoneSeq int64
}

// Apply folds one event and its facts into the interaction.
func (in *Interaction) Apply(ev Event, f Facts) {
	ts := ev.Timestamp
	if in.EventCount == 0 || ts.Before(in.FirstEventAt) {
		in.FirstEventAt = ts
	}
	in.EventCount++
	if f.TurnDone && ev.Seq > in.TurnDoneSeq {
		in.TurnDoneSeq = ev.Seq
	}
	if f.Candidate != "" {
		if in.ConversationID == "" || ts.Before(in.ConversationAt) {
			in.ConversationAt = ts
		}
		if in.ConversationID == "" || ev.Seq < in.ConversationSeq ||
			(ev.Seq == in.ConversationSeq && f.Candidate < in.ConversationID) {
			in.ConversationID, in.ConversationSeq = f.Candidate, ev.Seq
		}
	}
	if f.Lifecycle == "" {
		return
	}
	if in.Status == "" || ev.Seq > in.LifecycleSeq ||
		(ev.Seq == in.LifecycleSeq && (f.Lifecycle > in.Status ||
			(f.Lifecycle == in.Status && ts.Before(in.LifecycleAt)))) {
		in.LifecycleSeq, in.Status, in.LifecycleAt = ev.Seq, f.Lifecycle, ts
	}
	if ev.EventType == EventRunStarted && (in.StartedAt.IsZero() || ev.Seq < in.StartedSeq ||
		(ev.Seq == in.StartedSeq && ts.Before(in.StartedAt))) {
		in.StartedSeq, in.StartedAt = ev.Seq, ts
	}
}

// Outcome is the interaction's status ("unknown" without lifecycle events),
// when it started (its relay.run_started) and when it ended (the deciding
// lifecycle event, when that is terminal).
//
// A run cancelled after its turn completed, in that turn's interaction, was
// closed while idle: nothing was lost, so it completed. Helpers before
// event schema 2 posted relay.run_cancelled when an ACP client or editor
// closed an idle live run; this reads their record as today's helpers
// write it (relay.run_completed).
func (in Interaction) Outcome() (status string, startedAt, endedAt *time.Time) {
	if in.Status == "" {
		return StatusUnknown, nil, nil
	}
	status = in.Status
	if status == StatusCancelled && in.TurnDoneSeq > 0 && in.TurnDoneSeq < in.LifecycleSeq {
		status = StatusCompleted
	}
	if !in.StartedAt.IsZero() {
		t := in.StartedAt
		startedAt = &t
	}
	if in.Status != StatusRunning {
		t := in.LifecycleAt
		endedAt = &t
	}
	return status, startedAt, endedAt
}

// FoldInteractions folds events into the interactions they belong to, in
// the order each interaction was first seen.
func FoldInteractions(events []Event) []Interaction {
	byID := map[string]int{}
	var ins []Interaction
	for _, ev := range events {
		i, ok := byID[ev.InteractionID]
		if !ok {
			i = len(ins)
			byID[ev.InteractionID] = i
			ins = append(ins, Interaction{ID: ev.InteractionID})
		}
		ins[i].Apply(ev, FactsOf(ev))
	}
	return ins
}

// MoreRecent orders interactions: a is more recent than b when its time is
// later, or on equal times when its ID is greater (byte order). The time is
// FirstEventAt for the status rule and ConversationAt for the conversation
// rule. Using the envelope timestamps (when the relay produced the events)
// rather than arrival order makes the outcome independent of the order in
// which events reach the backend; backends order their SQL the same way.
func MoreRecent(at time.Time, aID string, bt time.Time, bID string) bool {
	if !at.Equal(bt) {
		return at.After(bt)
	}
	return aID > bID
}

// PickConversation returns the session's external conversation ID: the
// ConversationID of the most recent interaction (by ConversationAt) that has
// one, "" when none has.
func PickConversation(ins []Interaction) string {
	var best *Interaction
	for i := range ins {
		in := &ins[i]
		if in.ConversationID == "" {
			continue
		}
		if best == nil || MoreRecent(in.ConversationAt, in.ID, best.ConversationAt, best.ID) {
			best = in
		}
	}
	if best == nil {
		return ""
	}
	return best.ConversationID
}

// MostRecent returns the most recent interaction by FirstEventAt, whose
// Outcome is the session's; false when ins is empty.
func MostRecent(ins []Interaction) (Interaction, bool) {
	var best *Interaction
	for i := range ins {
		in := &ins[i]
		if best == nil || MoreRecent(in.FirstEventAt, in.ID, best.FirstEventAt, best.ID) {
			best = in
		}
	}
	if best == nil {
		return Interaction{}, false
	}
	return *best, true
}

// AddConversationRef records a sighting of a conversation ID and returns the
// history, ordered by FirstSeen (ties: ID), keeping each ID once with its
// earliest sighting (ties: smallest InteractionID). changed reports whether
// the history differs from refs, which is left unmodified.
func AddConversationRef(refs []ConversationRef, ref ConversationRef) (out []ConversationRef, changed bool) {
	ref.FirstSeen = ref.FirstSeen.UTC()
	out = make([]ConversationRef, 0, len(refs)+1)
	found := false
	for _, r := range refs {
		if r.ID != ref.ID {
			out = append(out, r)
			continue
		}
		found = true
		if ref.FirstSeen.Before(r.FirstSeen) ||
			(ref.FirstSeen.Equal(r.FirstSeen) && ref.InteractionID < r.InteractionID) {
			changed = true
			r = ref
		}
		out = append(out, r)
	}
	if !found {
		out = append(out, ref)
		changed = true
	}
	if changed {
		sort.SliceStable(out, func(i, j int) bool {
			if !out[i].FirstSeen.Equal(out[j].FirstSeen) {
				return out[i].FirstSeen.Before(out[j].FirstSeen)
			}
			return out[i].ID < out[j].ID
		})
	}
	return out, changed
}

// Derivation is everything a session's events derive, folded from scratch:
// the reference the incremental stores are tested against, and what a
// migration computes for sessions stored before a rule existed.
type Derivation struct {
	Session   Session
	Listing   Listing
	Search    string                     // see AddSearch
	Results   []CountedResult            // in the order they were counted
	Approvals map[string]*ApprovalRecord // by approval_id
	RunEnds   map[string]RunEndRef       // by run_id
}

// CountedResult is a result counted in its session's usage.
type CountedResult struct {
	Key     string
	EventID string
	At      time.Time // its envelope timestamp
	Result  *Result
}

// UsageDay is the day, in UTC, that a result at t counts on.
func UsageDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Rows splits the result into usage rows by model: one per entry of
// Result.Models, or one with model "" (the session's model) when it names
// none. Their figures sum to the result's; a cost-only result's rows hold
// no tokens.
func (c CountedResult) Rows() []ModelUsage {
	rows := c.Result.Models
	if len(rows) == 0 {
		rows = []ModelUsage{{Usage: c.Result.Usage, CostUSD: c.Result.CostUSD}}
	}
	if c.Result.CostOnly {
		rows = append([]ModelUsage(nil), rows...)
		for i := range rows {
			rows[i].Usage = Usage{}
		}
	}
	return rows
}

// Derive folds a session's events into its derived state from scratch: the
// reference the incremental backends are tested against. Events with an
// event_id seen before are skipped, as a Store skips them. It sets ID (from
// the first event), ExternalConversationID, ConversationIDs, Status,
// StartedAt, EndedAt, EventCount, InteractionCount, Usage, CostUSD, Turns,
// Title, Project, Source, Model and BilledTo; the arrival-dependent fields
// (CreatedAt, UpdatedAt, LastCursor) stay zero.
func Derive(events []Event) Session {
	return DeriveAll(events).Session
}

// DeriveAll is Derive with the rest of what a session's events derive.
func DeriveAll(events []Event) Derivation {
	var (
		d           = Derivation{Approvals: map[string]*ApprovalRecord{}}
		s           Session
		seenEvents  = map[string]bool{}
		seenResults = map[string]bool{}
		byID        = map[string]*Interaction{}
		order       []string
		kept        []Event
		facts       []Facts
	)
	for _, ev := range events {
		if seenEvents[ev.EventID] {
			continue
		}
		seenEvents[ev.EventID] = true
		if s.ID == "" {
			s.ID = ev.SessionID
			d.Search, _ = AddSearch(d.Search, SearchNeedle(s.ID))
		}
		s.EventCount++
		f := FactsOf(ev)
		kept, facts = append(kept, ev), append(facts, f)
		in := byID[ev.InteractionID]
		if in == nil {
			in = &Interaction{ID: ev.InteractionID}
			byID[ev.InteractionID] = in
			order = append(order, ev.InteractionID)
		}
		in.Apply(ev, f)
		if f.Candidate != "" {
			s.ConversationIDs, _ = AddConversationRef(s.ConversationIDs, ConversationRef{
				ID: f.Candidate, InteractionID: ev.InteractionID, FirstSeen: ev.Timestamp,
			})
		}
		if f.Result != nil && !seenResults[f.Result.Key] {
			seenResults[f.Result.Key] = true
			s.Usage = s.Usage.Add(f.Result.Usage)
			s.CostUSD += f.Result.CostUSD
			if !f.Result.CostOnly {
				s.Turns++
			}
			d.Results = append(d.Results, CountedResult{Key: f.Result.Key, EventID: ev.EventID, At: ev.Timestamp.UTC(), Result: f.Result})
		}
		d.Listing.Apply(ev, f)
		d.Search, _ = AddSearch(d.Search, SearchItems(f)...)
	}
	ins := make([]Interaction, 0, len(order))
	for _, id := range order {
		ins = append(ins, *byID[id])
	}
	s.InteractionCount = int64(len(ins))
	s.ExternalConversationID = PickConversation(ins)
	s.Status = StatusUnknown
	if in, ok := MostRecent(ins); ok {
		s.Status, s.StartedAt, s.EndedAt = in.Outcome()
	}
	d.Listing.Fill(&s)
	fold := ApprovalFold{SessionID: s.ID, Records: d.Approvals, Ended: map[string]RunEndRef{}}
	fold.Apply(kept, facts)
	d.RunEnds = fold.Ended
	d.Session = s
	return d
}
