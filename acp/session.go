package acp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// initTimeout bounds the wait for a new session's CLI to answer initialize.
const initTimeout = 60 * time.Second

// spec is what a session's runs are started with; a run that ended (idle,
// crashed) is started again from it, resuming the conversation.
type spec struct {
	id           string // the ACP sessionId: also the backend session and the CLI conversation
	resume       bool   // the conversation exists: resume it rather than create it
	forkFrom     string // the first run forks this conversation into id
	cwd          string
	mcp          json.RawMessage
	systemPrompt string // replaces the default
	appendPrompt string
	addDirs      []string
}

// specOf checks session/new's (or load's) parameters.
func (a *Agent) specOf(cwd string, mcp []acpsdk.McpServer, meta map[string]any, dirs []string) (spec, error) {
	bad := func(format string, args ...any) (spec, error) {
		return spec{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf(format, args...)})
	}
	if !filepath.IsAbs(cwd) {
		return bad("cwd %q must be an absolute path", cwd)
	}
	sp := spec{id: uuid.NewString(), cwd: cwd, addDirs: dirs}
	servers, err := mcpConfig(mcp)
	if err != nil {
		return bad("mcpServers: %v", err)
	}
	sp.mcp = servers
	switch v := meta["systemPrompt"].(type) {
	case nil:
	case string:
		sp.systemPrompt = v
	case map[string]any:
		s, ok := v["append"].(string)
		if !ok {
			return bad(`_meta.systemPrompt must be a string (replaces the system prompt) or {"append": "..."}`)
		}
		sp.appendPrompt = s
	default:
		return bad(`_meta.systemPrompt must be a string (replaces the system prompt) or {"append": "..."}`)
	}
	if cc, ok := meta["claudeCode"].(map[string]any); ok {
		if o, ok := cc["options"].(map[string]any); ok {
			if r, ok := o["resume"].(string); ok && r != "" {
				if err := checkConversationID("_meta.claudeCode.options.resume", r); err != nil {
					return spec{}, err
				}
				sp.id, sp.resume = r, true
			}
		}
	}
	return sp, nil
}

// checkConversationID refuses an id that is not a conversation ID as the
// CLI writes one: a UUID in its 36-character form. The id becomes a file
// name under ~/.claude/projects, so anything else ("../../x", a path) could
// read or resume a file that is no conversation of this project.
// uuid.Parse alone would also take "urn:uuid:…" and "{…}".
func checkConversationID(field, id string) error {
	if !isConversationID(id) {
		return acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf(
			"%s %q is not a conversation ID: want a UUID like 0f8fad5b-d9cb-469f-a165-70867728950e, as session/new and session/list give", field, clipID(id))})
	}
	return nil
}

func isConversationID(id string) bool {
	_, err := uuid.Parse(id)
	return err == nil && len(id) == 36
}

// clipID keeps an error quoting a client's id short.
func clipID(id string) string {
	if len(id) <= 80 {
		return id
	}
	return strings.ToValidUTF8(id[:80], "") + "…"
}

// session is one ACP session: one live run at a time, restarted (resuming
// the conversation) when it ended between prompts.
type session struct {
	a   *Agent
	id  string
	sp  spec
	out *outbox
	tr  *translator // owned by the outbox goroutine

	mu    sync.Mutex
	runID string  // "" when no run is live
	turn  *turn   // the prompt whose turn runs
	queue []*turn // prompts sent while a turn ran, in order: the run runs them after it
	// arrivals orders queueing: prompts are handled concurrently, so each
	// waits for the ones that arrived before it (stampArrival) to queue.
	arrivals  int
	arrivalsC chan struct{} // closed and replaced when arrivals grows
	mode      string        // "" until the run says which it started in (the CLI's configured default)
	model     string
	info      json.RawMessage             // the CLI's initialize response
	cliModes  []streamjson.PermissionMode // the modes the CLI takes; nil when it did not say
	infoC     chan struct{}               // closed when info arrives or the run ends
	perms     map[string]context.CancelFunc
	lastRes   *streamjson.Result // the running turn's result line
	stopWhy   string
	closed    bool
	title     string // sent in session_info_update: the conversation's first prompt
}

// turn is one session/prompt in flight.
type turn struct {
	inter string
	done  chan acpsdk.PromptResponse
	err   chan error
}

// open starts a session's first run and waits for its CLI's initialize.
func (a *Agent) open(ctx context.Context, sp spec) (*session, error) {
	s := &session{a: a, id: sp.id, sp: sp, out: newOutbox(true), tr: newTranslator(sp.cwd),
		perms: map[string]context.CancelFunc{}, arrivalsC: make(chan struct{})}
	if err := s.start(); err != nil {
		s.out.close()
		return nil, err
	}
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	s.mu.Lock()
	infoC := s.infoC
	s.mu.Unlock()
	select {
	case <-infoC:
	case <-time.After(initTimeout):
	case <-ctx.Done():
	}
	s.mu.Lock()
	ok := s.info != nil
	why := s.stopWhy
	s.mu.Unlock()
	if !ok {
		a.mu.Lock()
		delete(a.sessions, s.id)
		a.mu.Unlock()
		s.close()
		return nil, acpsdk.NewInternalError(map[string]any{"error": "the Claude CLI did not start: " + orText(why, "no answer to initialize")})
	}
	return s, nil
}

// start begins a live run with no turn: the CLI starts and initializes,
// and the next prompt is its first turn.
func (s *session) start() error {
	s.mu.Lock()
	sp := s.sp
	req := relay.Request{RunOptions: executor.RunOptions{Cwd: sp.cwd, Approvals: true, KeepAlive: true, PartialMessages: true,
		SystemPromptAppend: sp.appendPrompt, PermissionMode: streamjson.PermissionMode(s.mode), Model: s.model,
		MCPServers: sp.mcp, SystemPrompt: sp.systemPrompt, AddDirs: sp.addDirs},
		RunID: uuid.NewString(), SessionID: sp.id, Mode: wire.ModeACP, Idle: true, IdleTimeout: 24 * time.Hour}
	switch {
	case sp.forkFrom != "":
		req.Resume, req.Fork, req.ConversationID = sp.forkFrom, true, sp.id
	case sp.resume:
		req.Resume = sp.id
	default:
		req.ConversationID = sp.id
	}
	// Set before the run starts: its first events (an instant end among
	// them) must find it.
	s.runID = req.RunID
	s.infoC = make(chan struct{})
	s.mu.Unlock()
	if _, err := s.a.opts.Core.Start(req, s); err != nil {
		s.mu.Lock()
		s.runID = ""
		s.mu.Unlock()
		return errOf(err)
	}
	// From now on the conversation exists: a restart resumes it.
	s.mu.Lock()
	s.sp.resume, s.sp.forkFrom = true, ""
	s.mu.Unlock()
	return nil
}

// Event implements relay.Sink. It runs on the CLI's reader goroutines:
// everything that talks to the client goes through the outbox.
func (s *session) Event(e relay.Event) {
	switch e.Kind {
	case relay.KindStream, relay.KindPartial:
		msg := e.Message
		if msg.Result != nil {
			s.mu.Lock()
			s.lastRes = msg.Result
			s.mu.Unlock()
		}
		s.out.push(func() {
			for _, u := range s.tr.line(msg) {
				s.send(u)
			}
		})
	case relay.KindSessionInfo:
		s.mu.Lock()
		s.info, s.cliModes = e.Info, e.Modes
		s.mode = e.Mode
		close(s.infoC)
		s.mu.Unlock()
		s.out.push(func() {
			if cmds := availableCommands(e.Info); len(cmds) > 0 {
				s.send(acpsdk.SessionUpdate{AvailableCommandsUpdate: &acpsdk.SessionAvailableCommandsUpdate{AvailableCommands: cmds}})
			}
		})
	case relay.KindModeChanged:
		s.mu.Lock()
		s.mode = e.Mode
		s.mu.Unlock()
		s.out.push(func() {
			s.send(acpsdk.SessionUpdate{CurrentModeUpdate: &acpsdk.SessionCurrentModeUpdate{CurrentModeId: acpsdk.SessionModeId(e.Mode)}})
			s.send(acpsdk.SessionUpdate{ConfigOptionUpdate: &acpsdk.SessionConfigOptionUpdate{ConfigOptions: s.configOptions()}})
		})
	case relay.KindApprovalRequested:
		ap := e.Approval
		if ap.DashboardOnly() {
			// The central policy lets only the dashboard decide: a
			// permission request the client could answer would be refused,
			// so the client is told, not asked (README: central policy).
			s.out.push(func() { s.send(acpsdk.UpdateAgentMessageText("\n" + dashboardOnlyText(ap) + "\n")) })
			return
		}
		ctx, cancel := context.WithCancel(s.a.ctx)
		s.mu.Lock()
		s.perms[ap.ID] = cancel
		s.mu.Unlock()
		// After the updates before it (the tool_call it is about), on its
		// own goroutine: the answer may take minutes.
		s.out.push(func() { go s.permission(ctx, ap) })
	case relay.KindApprovalCancelled:
		s.mu.Lock()
		cancel := s.perms[e.Approval.ID]
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	case relay.KindLimitNotice:
		s.out.push(func() { s.send(acpsdk.UpdateAgentMessageText("\n" + e.Text + "\n")) })
	case relay.KindTurnCompleted:
		s.out.push(func() { s.turnEnded(e.InteractionID, e.End) })
	case relay.KindEnded:
		s.mu.Lock()
		if s.info == nil {
			s.stopWhy = orText(e.End.Reason, e.End.Result.Stderr)
			close(s.infoC)
		}
		if s.runID == e.RunID {
			s.runID = ""
		}
		s.mu.Unlock()
		s.out.push(func() { s.runEnded(e.End) })
	}
}

// sendTitle tells the client the session's title (session_info_update),
// in order with the session's other updates.
func (s *session) sendTitle(title string) {
	now := time.Now().UTC().Format(time.RFC3339)
	s.out.push(func() {
		s.send(acpsdk.SessionUpdate{SessionInfoUpdate: &acpsdk.SessionSessionInfoUpdate{
			SessionUpdate: "session_info_update", Title: &title, UpdatedAt: &now}})
	})
}

// send writes one update; a client that went away ends the session soon.
func (s *session) send(u acpsdk.SessionUpdate) {
	if err := s.a.conn.SessionUpdate(s.a.ctx, acpsdk.SessionNotification{SessionId: acpsdk.SessionId(s.id), Update: u}); err != nil {
		s.a.log.Debug("session/update not sent", "session", s.id, "err", err)
	}
}

// prompt runs one turn and answers when it ends. A prompt sent while a
// turn runs is queued (promptQueueing): the run runs it when the turns
// before it ended, and it gets its own answer. arrival is the prompt's
// place among this session's (stampArrival), -1 when unknown.
func (s *session) prompt(ctx context.Context, blocks []acpsdk.ContentBlock, arrival int) (acpsdk.PromptResponse, error) {
	s.awaitArrival(arrival)
	queued := false
	defer func() {
		if !queued {
			s.arrived(arrival)
		}
	}()
	content, rec, err := promptContent(blocks)
	if err != nil {
		return acpsdk.PromptResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	t := &turn{inter: uuid.NewString(), done: make(chan acpsdk.PromptResponse, 1), err: make(chan error, 1)}
	s.mu.Lock()
	if s.turn != nil {
		s.queue = append(s.queue, t)
	} else {
		s.turn = t
	}
	runID := s.runID
	title := ""
	if s.title == "" {
		s.title = titleOf(rec.Prompt)
		title = s.title
	}
	s.mu.Unlock()
	if title != "" {
		s.sendTitle(title)
	}
	if runID == "" {
		// The run ended between prompts (idle, or the CLI died): start
		// another on the same conversation.
		if err := s.start(); err != nil {
			s.clearTurn(t)
			return acpsdk.PromptResponse{}, err
		}
		s.mu.Lock()
		runID = s.runID
		s.mu.Unlock()
	}
	if err := s.a.opts.Core.Send("", runID, t.inter, relay.Message{Content: content, Record: &rec}); err != nil {
		s.clearTurn(t)
		if errors.Is(err, relay.ErrCancelled) {
			// session/cancel came while it was being checked: cancelled
			// with the rest, never run.
			return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
		}
		return acpsdk.PromptResponse{}, errOf(err)
	}
	queued = true
	s.arrived(arrival)
	select {
	case r := <-t.done:
		return r, nil
	case err := <-t.err:
		return acpsdk.PromptResponse{}, err
	case <-ctx.Done():
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
	}
}

func (s *session) clearTurn(t *turn) {
	s.mu.Lock()
	if s.turn == t {
		s.turn = s.next()
	}
	s.queue = slices.DeleteFunc(s.queue, func(q *turn) bool { return q == t })
	s.mu.Unlock()
}

// next takes the first queued prompt, whose turn runs next; s.mu held.
func (s *session) next() *turn {
	if len(s.queue) == 0 {
		return nil
	}
	t := s.queue[0]
	s.queue = s.queue[1:]
	return t
}

// awaitArrival waits until the prompts that arrived in this session before
// arrival n have queued, so that turns run in the order the client sent
// them. Bounded: a prompt the SDK refused before it reached us never
// queues, and must not hold the rest for ever.
func (s *session) awaitArrival(n int) {
	if n < 0 {
		return
	}
	deadline := time.NewTimer(time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ready, c := s.arrivals >= n, s.arrivalsC
		s.mu.Unlock()
		if ready {
			return
		}
		select {
		case <-c:
		case <-deadline.C:
			s.a.log.Debug("prompt queued before an earlier one", "session", s.id, "arrival", n)
			return
		}
	}
}

// arrived notes that prompt arrival n has queued (or failed).
func (s *session) arrived(n int) {
	if n < 0 {
		return
	}
	s.mu.Lock()
	if n+1 > s.arrivals {
		s.arrivals = n + 1
		close(s.arrivalsC)
		s.arrivalsC = make(chan struct{})
	}
	s.mu.Unlock()
}

// turnEnded answers the prompt whose turn this was, after the turn's last
// updates; a turn that a cancel already answered is only finished here.
func (s *session) turnEnded(inter string, end *relay.End) {
	s.mu.Lock()
	t := s.turn
	res := s.lastRes
	s.lastRes = nil
	// The translator saw the result line before this (the outbox keeps
	// order): its stop_reason says whether the model refused.
	refusal := s.tr.lastStopReason() == "refusal"
	mine := t != nil && t.inter == inter
	if mine {
		s.turn = s.next() // the queued prompt the run runs now
	}
	s.mu.Unlock()
	for _, u := range s.tr.abandon() {
		s.send(u)
	}
	if u, ok := s.tr.usageUpdate(res); ok {
		s.send(u)
	}
	if !mine {
		return
	}
	switch {
	case end.Status == executor.StatusInterrupted:
		t.done <- acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled, Meta: usageMeta(res), Usage: promptUsage(res)}
	case end.Status == executor.StatusFailed && notLoggedIn(end):
		t.err <- errAuthRequired()
	case end.Status == executor.StatusFailed && (res == nil || res.Subtype != streamjson.ResultErrorMaxTurns):
		t.err <- acpsdk.NewInternalError(map[string]any{"error": orText(end.Reason, end.Result.Stderr, "the turn failed")})
	default:
		t.done <- acpsdk.PromptResponse{StopReason: stopReason(res, refusal), Meta: usageMeta(res), Usage: promptUsage(res)}
	}
}

// runEnded answers the prompts whose run ended under them: the running
// one and those queued behind it.
func (s *session) runEnded(end *relay.End) {
	s.mu.Lock()
	ts := s.takeTurns()
	s.mu.Unlock()
	for _, t := range ts {
		if end.Status == executor.StatusCancelled {
			t.done <- acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}
			continue
		}
		t.err <- acpsdk.NewInternalError(map[string]any{"error": "the Claude CLI ended during the turn: " +
			orText(end.Reason, end.Result.Stderr, string(end.Status))})
	}
}

// takeTurns takes the running prompt and the queued ones; s.mu held.
func (s *session) takeTurns() []*turn {
	var ts []*turn
	if s.turn != nil {
		ts = append(ts, s.turn)
	}
	ts = append(ts, s.queue...)
	s.turn, s.queue = nil, nil
	return ts
}

// cancel stops the running turn and drops the queued ones: their prompts
// answer cancelled at once, the CLI is interrupted, and permission
// requests still open are withdrawn. The next prompt waits in the run for
// the interrupted turn's end, so it never gets that turn's answer.
func (s *session) cancel() {
	s.mu.Lock()
	runID := s.runID
	ts := s.takeTurns()
	perms := make([]context.CancelFunc, 0, len(s.perms))
	for _, c := range s.perms {
		perms = append(perms, c)
	}
	s.mu.Unlock()
	for _, c := range perms {
		c()
	}
	if runID != "" {
		if err := s.a.opts.Core.CancelTurns(runID, wire.ByACP); err != nil {
			s.a.log.Debug("interrupt", "session", s.id, "err", err)
		}
	}
	for _, t := range ts {
		s.out.push(func() { t.done <- acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled} })
	}
}

// setMode switches the permission mode; current_mode_update confirms it,
// before the answer.
func (s *session) setMode(ctx context.Context, mode string) error {
	if !s.offersMode(mode) {
		return acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("mode %q is not offered (modes: %s)", mode, strings.Join(s.modeIDs(), ", "))})
	}
	return s.control(ctx, func(runID string) error { return s.a.opts.Core.SetModeWait(ctx, runID, mode) }, func() { s.mode = mode })
}

// setModel switches the model for the next turns.
func (s *session) setModel(ctx context.Context, model string) error {
	if !s.offersModel(model) {
		return acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("model %q is not offered (models: %s)", model, strings.Join(s.modelIDs(), ", "))})
	}
	return s.control(ctx, func(runID string) error { return s.a.opts.Core.SetModelWait(ctx, runID, model) }, func() { s.model = model })
}

// control runs a mid-run change and answers once the CLI took it and the
// updates it caused were sent; with no run live it only changes what the
// next run starts with.
func (s *session) control(ctx context.Context, do func(runID string) error, remember func()) error {
	s.mu.Lock()
	runID := s.runID
	if runID == "" {
		remember()
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	if err := do(runID); err != nil {
		return errOf(err)
	}
	s.mu.Lock()
	remember()
	s.mu.Unlock()
	s.flush()
	return nil
}

// flush waits until the outbox has sent everything queued so far.
func (s *session) flush() {
	done := make(chan struct{})
	s.out.push(func() { close(done) })
	select {
	case <-done:
	case <-s.a.ctx.Done():
	}
}

// close ends the session's run after its turn and stops its outbox.
func (s *session) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	runID := s.runID
	s.mu.Unlock()
	if runID != "" {
		_ = s.a.opts.Core.Cancel(runID, relay.StopClosed)
	}
	s.out.close()
}

// modes is the session's mode state.
func (s *session) modes() *acpsdk.SessionModeState {
	s.mu.Lock()
	cur := s.mode
	s.mu.Unlock()
	var modes []acpsdk.SessionMode
	for _, m := range s.offeredModes() {
		desc := m.Description
		modes = append(modes, acpsdk.SessionMode{Id: acpsdk.SessionModeId(m.Mode), Name: m.Name, Description: &desc})
	}
	return &acpsdk.SessionModeState{AvailableModes: modes, CurrentModeId: acpsdk.SessionModeId(cur)}
}

// offeredModes are the modes the CLI takes (in streamjson.Modes' order),
// less those that cannot work here: bypassPermissions as root (the CLI
// refuses it), auto on a model that does not support it. A CLI that did not
// say gets the three every CLI takes.
func (s *session) offeredModes() []streamjson.ModeInfo {
	s.mu.Lock()
	taken, info, model := s.cliModes, s.info, s.model
	s.mu.Unlock()
	if taken == nil {
		taken = []streamjson.PermissionMode{streamjson.PermissionModeDefault, streamjson.PermissionModeAcceptEdits, streamjson.PermissionModePlan}
	}
	var out []streamjson.ModeInfo
	for _, m := range streamjson.Modes {
		switch {
		case !slices.Contains(taken, m.Mode):
		case m.Mode == streamjson.PermissionModeBypassPermissions && s.a.opts.Root:
		case m.Mode == streamjson.PermissionModeAuto && !autoSupported(info, model):
		default:
			out = append(out, m)
		}
	}
	return out
}

// autoSupported reads the model's supportsAutoMode from the initialize
// response's models (model "" is the CLI's default); a model that does not
// say is taken to support it.
func autoSupported(info json.RawMessage, model string) bool {
	var r struct {
		Models []struct {
			Value            string `json:"value"`
			SupportsAutoMode *bool  `json:"supportsAutoMode"`
		} `json:"models"`
	}
	if json.Unmarshal(info, &r) != nil {
		return true
	}
	model = cmp.Or(model, "default")
	for _, m := range r.Models {
		if m.Value == model {
			return m.SupportsAutoMode == nil || *m.SupportsAutoMode
		}
	}
	return true
}

func (s *session) offersMode(id string) bool {
	for _, m := range s.modeIDs() {
		if m == id {
			return true
		}
	}
	return false
}

func (s *session) modeIDs() []string {
	var ids []string
	for _, m := range s.modes().AvailableModes {
		ids = append(ids, string(m.Id))
	}
	return ids
}

// models is the model state from the CLI's initialize response.
func (s *session) models() *acpsdk.SessionModelState {
	s.mu.Lock()
	info, cur := s.info, s.model
	s.mu.Unlock()
	var r struct {
		Models []struct {
			Value       string `json:"value"`
			DisplayName string `json:"displayName"`
			Description string `json:"description"`
		} `json:"models"`
	}
	if json.Unmarshal(info, &r) != nil || len(r.Models) == 0 {
		return nil
	}
	st := &acpsdk.SessionModelState{}
	for _, m := range r.Models {
		desc := m.Description
		st.AvailableModels = append(st.AvailableModels, acpsdk.ModelInfo{ModelId: acpsdk.ModelId(m.Value), Name: orText(m.DisplayName, m.Value), Description: &desc})
	}
	st.CurrentModelId = acpsdk.ModelId(orText(cur, r.Models[0].Value))
	return st
}

func orText(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}
