// The session page's model: events, in cursor order, folded into a
// conversation. Each interaction (a run, a follow-up, or a prompt typed in
// a terminal) becomes a "turn" entry that starts with its prompt and
// carries its status, duration and cost; what follows it is the assistant's
// text, thinking, tool calls (results and subagent calls folded under
// them), approvals and the notices worth reading. Protocol noise gets no
// entry; every event also has a raw entry for the "Show all events" view.
//
// A terminal run reports most things twice, once as a hook and once as a
// transcript line: the transcript wins (one card per message, lines
// deduplicated by uuid), and a hook is shown only while the transcript
// lacks its message (a PreToolUse before the transcript's tool_use, whose
// card then moves to the transcript's place).
//
// The model never touches the DOM. It calls view hooks when an entry that
// may be on screen changes: changed(entry); added(parent, child) for a call
// nested under a subagent call; moved(entry, fromIndex) when a top-level
// entry moved to the end.
'use strict';

window.CRModel = (function () {
  // Top-level event types that are protocol, not conversation.
  const NOISE = new Set(['control_request', 'control_response', 'control_cancel_request', 'stream_event',
    'keep_alive', 'rate_limit_event', 'auth_status', 'tool_progress']);

  function str(v) { return typeof v === 'string' ? v : ''; }
  function obj(v) { return v && typeof v === 'object' && !Array.isArray(v) ? v : {}; }
  function num(v) { return typeof v === 'number' && isFinite(v) ? v : null; }
  function samePrompt(a, b) { return str(a).trim() === str(b).trim(); }

  // sizeText and describeBlocks word a prompt's blocks as the backend's
  // titles do (store.DescribeBlocks): "image.png (PNG, 120.0 KiB)".
  function sizeText(n) {
    if (n < 1024) return n + ' B';
    if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KiB';
    if (n < 1024 * 1024 * 1024) return (n / 1024 / 1024).toFixed(1) + ' MiB';
    return (n / 1024 / 1024 / 1024).toFixed(1) + ' GiB';
  }
  const MEDIA_NAMES = { 'image/png': 'PNG', 'image/jpeg': 'JPEG', 'image/gif': 'GIF', 'image/webp': 'WebP', 'text/plain': 'text' };
  function describeBlock(b) {
    let name = str(b.name);
    if (!name && str(b.path)) {
      let p = b.path;
      if (p.indexOf('://') >= 0) p = p.replace(/[?#].*$/, '');
      name = p.replace(/\/+$/, '').split('/').pop();
    }
    if (!name || name === '.') name = str(b.type) || 'block';
    const media = str(b.media_type);
    const details = [];
    if (media) details.push(MEDIA_NAMES[media.toLowerCase()] || media);
    if (num(b.size) !== null && b.size > 0) details.push(sizeText(b.size));
    return details.length ? name + ' (' + details.join(', ') + ')' : name;
  }
  function describeBlocks(blocks, total) {
    const parts = [];
    let rest = Math.max(total - blocks.length, 0);
    for (const b of blocks) {
      if (b.type === 'text') continue; // blank, in a prompt without text
      if (parts.length === 4) rest++;
      else parts.push(describeBlock(b));
    }
    let out = parts.join(', ');
    if (out && rest > 0) out += ' and ' + rest + ' more';
    return out;
  }

  // promptOf is the prompt relay.run_started or relay.message_sent recorded
  // (event schema 2): its text, else a description of its blocks (a prompt
  // of images or files alone), and a note when the record was cut. Empty
  // for an idle start.
  function promptOf(d) {
    let text = str(d.prompt);
    const blocks = Array.isArray(d.blocks) ? d.blocks.filter((b) => b && typeof b === 'object') : [];
    if (!text.trim() && blocks.length) text = describeBlocks(blocks, Math.max(num(d.blocks_total) || 0, blocks.length));
    if (d.prompt_truncated === true && text) {
      text += '\n\n[cut: the prompt was ' + sizeText(num(d.prompt_bytes) || 0) + '; its first 256 KiB were recorded]';
    }
    return text;
  }

  // toolInfo is a call's kind and title (as seed 004's extract_tool_info).
  function toolInfo(name, input) {
    input = obj(input);
    switch (name) {
      case 'Read': return { kind: 'read', title: 'Read ' + (str(input.file_path) || 'file') };
      case 'Edit': return { kind: 'edit', title: 'Edit ' + (str(input.file_path) || 'file') };
      case 'MultiEdit': return { kind: 'edit', title: 'Edit ' + (str(input.file_path) || 'file') };
      case 'Write': return { kind: 'edit', title: 'Write ' + (str(input.file_path) || 'file') };
      case 'Bash': {
        if (typeof input.description === 'string') return { kind: 'execute', title: input.description };
        return { kind: 'execute', title: 'Run: ' + Array.from(str(input.command)).slice(0, 50).join('') };
      }
      case 'Grep':
      case 'Glob': return { kind: 'search', title: 'Search: ' + str(input.pattern) };
      case 'WebFetch': return { kind: 'fetch', title: 'Fetch ' + str(input.url) };
      case 'Task':
      case 'Agent': return { kind: 'agent', title: str(input.description) || str(input.subagent_type) || 'Subagent' };
      default: return { kind: 'other', title: String(name || 'tool') };
    }
  }

  // images picks the inline images of content blocks: base64 PNG, JPEG, GIF
  // or WebP only, as data: URLs (the page's CSP allows img-src data:).
  const IMAGE_TYPES = /^image\/(png|jpeg|gif|webp)$/;
  const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
  function imageOf(b) {
    const src = obj(b.source);
    const media = str(src.media_type);
    const data = str(src.data).replace(/\s+/g, '');
    if (src.type !== 'base64' || !IMAGE_TYPES.test(media) || !BASE64.test(data)) return null;
    return 'data:' + media + ';base64,' + data;
  }

  // resultOf flattens a tool_result's content: text and images.
  function resultOf(content) {
    const r = { text: '', images: [] };
    if (typeof content === 'string') { r.text = content; return r; }
    if (Array.isArray(content)) {
      const parts = [];
      for (const b of content) {
        if (b && b.type === 'text' && typeof b.text === 'string') parts.push(b.text);
        else if (b && b.type === 'image') { const u = imageOf(b); if (u) r.images.push(u); else parts.push('(an image that cannot be shown)'); }
        else parts.push(JSON.stringify(b));
      }
      r.text = parts.join('\n');
      return r;
    }
    if (content !== undefined && content !== null) r.text = JSON.stringify(content, null, 2);
    return r;
  }

  // hookResponseText renders a PostToolUse hook's tool_response.
  function hookResponseText(v) {
    if (typeof v === 'string') return v;
    const o = obj(v);
    const parts = [];
    if (str(o.stdout)) parts.push(o.stdout);
    if (str(o.stderr)) parts.push(o.stderr);
    if (parts.length) return parts.join('\n');
    return v === undefined || v === null ? '' : JSON.stringify(v, null, 2);
  }

  // pickText finds the human-readable part of a relay or unknown event.
  function pickText(d) {
    for (const k of ['text', 'message', 'error', 'line', 'stderr', 'reason', 'raw']) {
      if (typeof d[k] === 'string' && d[k]) return d[k];
    }
    const r = obj(d.result);
    if (typeof r.stderr === 'string') return r.stderr;
    return '';
  }

  const ERRORISH = /\b(error|fatal|panic|failed|failure|exception|denied|refused)\b/i;

  function Model(view) {
    this.view = view || { changed() {}, added() {}, moved() {} };
    this.conv = [];              // top-level entries, in order: what the window shows
    this.raw = [];               // one entry per event: the "Show all events" view
    this.byCursor = new Map();   // cursor -> the entry that shows that event
    this.calls = new Map();      // tool_use_id -> tool entry
    this.approvals = new Map();  // approval_id -> approval entry
    this.uuids = new Set();      // event type + uuid seen (transcript lines, CLI lines)
    this.turn = null;            // the current turn
    this.turnCount = 0;
    this.turnInters = new Set(); // interactions that have a turn
    this.interTurns = new Map(); // interaction -> its turns, in order (a terminal run has several)
    // Messages sent into a live run while a turn ran, as helpers before
    // the executor reported turn starts recorded them (relay.message_sent
    // posted when queued): each becomes a turn when the turn before it
    // ends. Today's helpers post it when the turn starts.
    this.queued = [];
    this.runTurnsEnded = new Set(); // runs that posted relay.turn_completed: their ends repeat the turns' figures
    this.inits = new Set();         // conversations whose session start was shown
    // An idle start (relay.run_started without a prompt: an ACP session at
    // session/new) makes no turn of its own: its run's first prompt, a
    // relay.message_sent in the next interaction, is the first turn.
    this.idleInters = new Set(); // interactions of idle starts
    this.pendingRun = null;      // the idle start's run, for the next turn
    this.lastCursor = 0;
    // answered: the model itself replied at least once (not only the CLI's
    // "<synthetic>" messages), so the conversation exists to resume.
    this.info = { prompt: '', cwd: '', model: '', source: '', billedTo: '', results: 0, answered: false, turnMs: 0 };
  }

  const P = Model.prototype;

  // ---- placing entries ----

  P.push = function (en) {
    en.idx = this.conv.length;
    en.top = en;
    this.conv.push(en);
    this.mark(en, en);
    return en;
  };

  // place adds en under the subagent call parentID when there is one,
  // else at the top level.
  P.place = function (en, parentID) {
    const parent = parentID ? this.calls.get(parentID) : null;
    if (!parent) return this.push(en);
    en.parent = parent;
    en.top = parent.top;
    parent.children.push(en);
    this.mark(en, en);
    this.view.added(parent, en);
    return en;
  };

  // mark maps an event's cursor to the entry that shows it; the first entry
  // an event made keeps it (its card carries the #c<cursor> anchor).
  P.mark = function (ev, en) {
    if (!this.byCursor.has(ev.cursor)) this.byCursor.set(ev.cursor, en);
  };

  P.notice = function (ev, label, text, cls, data, parentID) {
    return this.place({ type: 'notice', label, text: str(text), cls: cls || 'minor', data, cursor: ev.cursor, time: ev.timestamp }, parentID);
  };

  // ---- turns ----

  P.newTurn = function (ev) {
    this.turnCount++;
    const t = {
      type: 'turn', n: this.turnCount, cursor: ev.cursor, time: ev.timestamp, interaction: str(ev.interaction_id),
      prompt: '', promptFrom: '', images: [], hasContent: false, runID: '',
      status: '', durationMs: null, cost: null, usage: null, started: Date.parse(ev.timestamp), last: Date.parse(ev.timestamp),
    };
    if (this.pendingRun) {
      t.runID = this.pendingRun.runID;
      t.mode = this.pendingRun.mode;
      this.pendingRun = null;
    }
    this.turn = t;
    this.turnInters.add(t.interaction);
    const list = this.interTurns.get(t.interaction) || [];
    list.push(t);
    this.interTurns.set(t.interaction, list);
    return this.push(t);
  };

  // idle reports whether ev belongs to an idle start's interaction that has
  // no turn: what happens there (the CLI's control answers, a mode change,
  // the run's end before any prompt) makes no turn.
  P.idle = function (ev) {
    const i = str(ev.interaction_id);
    return this.idleInters.has(i) && !this.turnInters.has(i);
  };

  // turnOrIdle is turnFor, or null for an event of an idle start.
  P.turnOrIdle = function (ev) {
    return this.idle(ev) ? null : this.turnFor(ev);
  };

  // turnFor returns the turn an event belongs to: the current one, or a new
  // one when the interaction changed (a follow-up's events).
  P.turnFor = function (ev) {
    const t = this.turn;
    if (!t || str(ev.interaction_id) !== t.interaction) return this.newTurn(ev);
    const at = Date.parse(ev.timestamp);
    if (!isNaN(at)) t.last = at;
    return t;
  };

  // content notes that the current turn has an answer, so the next prompt
  // starts a new turn.
  P.content = function (ev) {
    const t = this.turnFor(ev);
    t.hasContent = true;
    return t;
  };

  // prompt starts a turn with text, or completes the current turn's prompt
  // when it is the same message seen from another source (run_started, the
  // UserPromptSubmit hook, the transcript, the CLI's replay).
  P.prompt = function (ev, text, from, images) {
    let t = this.turn;
    const fresh = t && str(ev.interaction_id) === t.interaction && !t.hasContent;
    if (fresh && (!t.prompt || samePrompt(t.prompt, text))) {
      this.turnFor(ev);
    } else {
      t = this.newTurn(ev);
    }
    if (!t.prompt && text) t.prompt = text;
    // The transcript's copy is the message itself; a hook's is provisional.
    if (!t.promptFrom || from === 'transcript') t.promptFrom = from;
    if (images && images.length && !t.images.length) t.images = images;
    if (!this.info.prompt && text) this.info.prompt = text;
    this.mark(ev, t);
    this.view.changed(t);
    return t;
  };

  // ---- ingest ----

  // ingest folds one event (an envelope plus cursor) in. It returns false
  // for an event seen before (by cursor).
  P.ingest = function (ev) {
    if (!ev || typeof ev.cursor !== 'number' || ev.cursor <= this.lastCursor) return false;
    this.lastCursor = ev.cursor;
    this.raw.push({ type: 'raw', ev, cursor: ev.cursor, idx: this.raw.length });
    const d = obj(ev.event_data);
    const type = String(ev.event_type || '');
    // The same line posted again under another event_id (a transcript read
    // twice, a resumed terminal run): one card per message.
    if (str(d.uuid)) {
      const key = type + ' ' + d.uuid;
      if (this.uuids.has(key)) return true;
      this.uuids.add(key);
    }
    try {
      this.dispatch(ev, d, type);
    } catch (err) {
      // Whatever an event holds, the page goes on: it shows as text.
      this.notice(ev, type || 'event', 'This event could not be shown: ' + String(err && err.message || err), 'error', d);
    }
    return true;
  };

  P.dispatch = function (ev, d, type) {
    if (type.startsWith('relay.')) return this.relay(ev, d, type.slice(6));
    if (type.startsWith('hook.')) return this.hook(ev, d, type.slice(5));
    if (type.startsWith('transcript.')) return this.transcript(ev, d, type.slice(11));
    switch (type) {
      case 'assistant': return this.assistant(ev, d);
      case 'user': return this.user(ev, d);
      case 'result': return this.result(ev, d);
      case 'system': return this.system(ev, d);
    }
    if (NOISE.has(type)) { this.turnOrIdle(ev); return; }
    if (/malformed|stderr|error/i.test(type) || d.type === 'malformed') {
      return this.notice(ev, type, pickText(d) || JSON.stringify(d), 'error', d);
    }
    this.turnOrIdle(ev);
    return this.notice(ev, type || 'event', pickText(d), 'minor', d);
  };

  P.transcript = function (ev, d, base) {
    switch (base) {
      case 'assistant': return this.assistant(ev, d);
      case 'user':
        if (d.isMeta === true) return; // the CLI's own reminders and command echoes
        return this.user(ev, d, 'transcript');
      default:
        // attachment, file-history-snapshot, summary, system, progress,
        // cost-state, queue-operation, last-prompt…: transcript bookkeeping.
        return;
    }
  };

  P.system = function (ev, d) {
    this.turnFor(ev);
    const sub = str(d.subtype);
    if (sub === 'init') {
      if (str(d.model)) this.info.model = d.model;
      if (str(d.cwd) && !this.info.cwd) this.info.cwd = d.cwd;
      // A live run's CLI says it again at every turn: once per
      // conversation and model is news, the rest is in "Show all events".
      const key = str(d.session_id) + ' ' + str(d.model);
      if (this.inits.has(key)) return;
      this.inits.add(key);
      const bits = ['Session started'];
      if (str(d.model)) bits.push('model ' + d.model);
      if (str(d.cwd)) bits.push(d.cwd);
      return this.notice(ev, 'system', bits.join(' · '), 'minor', d);
    }
    if (/error|fail/i.test(sub) || d.level === 'error' || d.is_error === true) {
      return this.notice(ev, 'system ' + sub, pickText(d) || sub, 'error', d);
    }
    // hook_response, status, compact_boundary…: protocol detail.
  };

  P.assistant = function (ev, d) {
    const msg = obj(d.message);
    const parentID = str(d.parent_tool_use_id);
    // A subagent may use another model; "<synthetic>" marks the CLI's own messages.
    if (str(msg.model) && !parentID && !msg.model.startsWith('<')) this.info.model = msg.model;
    if (!str(msg.model).startsWith('<')) this.info.answered = true; // "<synthetic>": the CLI's own words
    const content = msg.content;
    if (typeof content === 'string') {
      if (content.trim()) {
        this.content(ev);
        this.place({ type: 'text', cls: 'assistant', text: content, block: 0, cursor: ev.cursor, time: ev.timestamp }, parentID);
      }
    } else if (Array.isArray(content)) {
      let block = 0;
      for (const b of content) {
        if (!b || typeof b !== 'object') continue;
        switch (b.type) {
          case 'text': {
            const text = str(b.text);
            if (text.trim()) {
              this.content(ev);
              this.place({ type: 'text', cls: 'assistant', text, block, cursor: ev.cursor, time: ev.timestamp }, parentID);
            }
            block++; // counted like the markdown endpoint: every text block
            break;
          }
          case 'thinking':
          case 'redacted_thinking':
            this.content(ev);
            this.place({ type: 'thinking', cls: 'thinking', text: b.type === 'thinking' ? str(b.thinking) : '(redacted)', cursor: ev.cursor, time: ev.timestamp }, parentID);
            break;
          case 'tool_use':
          case 'server_tool_use':
          case 'mcp_tool_use':
            this.content(ev);
            this.toolCall(ev, str(b.id), str(b.name), b.input, 'message', parentID);
            break;
          default:
            break;
        }
      }
    } else {
      this.turnFor(ev);
    }
    if (typeof d.error === 'string' && d.error) this.notice(ev, 'error', d.error, 'error', d, parentID);
    if (!this.byCursor.has(ev.cursor) && this.turn) this.mark(ev, this.turn);
  };

  P.user = function (ev, d, from) {
    const msg = obj(d.message);
    const parentID = str(d.parent_tool_use_id);
    const content = msg.content;
    const texts = [];
    const images = [];
    if (typeof content === 'string') {
      texts.push(content);
    } else if (Array.isArray(content)) {
      for (const b of content) {
        if (!b || typeof b !== 'object') continue;
        if (b.type === 'tool_result') {
          const r = resultOf(b.content);
          const extra = from === 'transcript' ? d.toolUseResult : d.tool_use_result;
          this.toolResult(ev, str(b.tool_use_id), r.text, b.is_error === true, r.images, 'message', extra);
        } else if (b.type === 'text' && typeof b.text === 'string') {
          texts.push(b.text);
        } else if (b.type === 'image') {
          const u = imageOf(b);
          if (u) images.push(u);
        }
      }
    }
    const text = texts.join('\n');
    if (!text.trim() && !images.length) {
      if (!this.byCursor.has(ev.cursor)) this.turnFor(ev);
      return;
    }
    if (parentID) {
      // A subagent's own prompt, from the calling agent.
      this.place({ type: 'text', cls: 'user', label: 'prompt', text, images, cursor: ev.cursor, time: ev.timestamp }, parentID);
      return;
    }
    if (/^\[Request interrupted/.test(text.trim())) {
      this.turnFor(ev);
      return this.notice(ev, 'interrupted', text.trim(), 'warn', d);
    }
    this.prompt(ev, text, from || 'user', images);
  };

  P.result = function (ev, d) {
    const t = this.turnFor(ev);
    this.info.results++;
    const sub = str(d.subtype);
    const isError = d.is_error === true || sub.startsWith('error');
    t.status = isError ? 'failed' : 'completed';
    if (num(d.duration_ms) !== null) {
      t.durationMs = d.duration_ms;
      this.info.turnMs += d.duration_ms;
    }
    // total_cost_usd sums the whole CLI process (a live run's every turn);
    // the turn's own cost is what it spent since the last result.
    const since = turnCost(d);
    if (since !== null) t.cost = since;
    else if (num(d.total_cost_usd) !== null) t.cost = d.total_cost_usd;
    if (d.usage && typeof d.usage === 'object') t.usage = d.usage;
    if (num(d.num_turns) !== null) t.numTurns = d.num_turns;
    this.mark(ev, t);
    this.view.changed(t);
    if (isError) {
      const what = str(d.result) || (Array.isArray(d.errors) ? d.errors.filter((e) => typeof e === 'string').join('\n') : '') || sub;
      // The label says what the event says: an error result whose subtype
      // is "success" (the CLI's "Not logged in") is an error, not a success.
      t.errorCard = this.notice(ev, 'result: ' + (sub && sub !== 'success' ? sub : 'error'), what, 'error', d);
    }
  };

  // turnCost sums a result's model_usage_since_last_result costs (CLI
  // 2.1.3xx): its own turn's; null when it has none.
  function turnCost(d) {
    const m = obj(d.model_usage_since_last_result);
    let sum = null;
    for (const k of Object.keys(m)) {
      const c = num(obj(m[k]).costUSD);
      if (c !== null) sum = (sum || 0) + c;
    }
    return sum;
  }

  // stopped says who stopped a turn, for its card.
  const STOPPED_BY = {
    extension: 'from the editor', tty: 'at the terminal', acp: 'by the ACP client', dashboard: 'from the dashboard',
    timeout: 'by the approval timeout', watchdog: 'by the watchdog',
  };

  // ---- tools ----

  P.toolCall = function (ev, id, name, input, from, parentID) {
    const have = id ? this.calls.get(id) : null;
    if (have) {
      this.mark(ev, have);
      if (from === 'message' && have.from === 'hook') {
        // The transcript's tool_use replaces the hook's: its input, and
        // its place in the conversation.
        have.from = 'message';
        have.input = input;
        have.info = toolInfo(name || have.name, input);
        if (!have.parent && have.idx !== this.conv.length - 1) this.move(have);
        this.view.changed(have);
      }
      return have;
    }
    const en = {
      type: 'tool', cls: 'tool', id, name, input, info: toolInfo(name, input), from, result: null,
      children: [], approval: null, cursor: ev.cursor, time: ev.timestamp,
    };
    if (id) this.calls.set(id, en);
    return this.place(en, parentID);
  };

  // move puts a top-level entry at the end.
  P.move = function (en) {
    const from = en.idx;
    this.conv.splice(from, 1);
    for (let i = from; i < this.conv.length; i++) this.conv[i].idx = i;
    en.idx = this.conv.length;
    this.conv.push(en);
    this.view.moved(en, from);
  };

  P.toolResult = function (ev, id, text, isError, images, from, extra) {
    const call = id ? this.calls.get(id) : null;
    if (!call) {
      this.turnFor(ev);
      const n = this.notice(ev, isError ? 'tool error' : 'tool result', text, isError ? 'error' : 'minor');
      if (images && images.length) n.images = images;
      return;
    }
    this.mark(ev, call);
    const have = call.result;
    // One result per call: the message's (CLI or transcript) wins over the
    // PostToolUse hook's, whichever came first.
    if (have && !(have.from === 'hook' && from !== 'hook')) return;
    call.result = { text: str(text), isError: !!isError, images: images || [], from, extra, cursor: ev.cursor };
    this.view.changed(call);
  };

  // ---- hooks (terminal runs) ----

  P.hook = function (ev, d, name) {
    switch (name) {
      case 'PreToolUse':
        this.content(ev);
        this.toolCall(ev, str(d.tool_use_id), str(d.tool_name), d.tool_input, 'hook', '');
        return;
      case 'PostToolUse': {
        this.turnFor(ev);
        const r = d.tool_response;
        const o = obj(r);
        const isError = o.is_error === true || o.interrupted === true;
        this.toolResult(ev, str(d.tool_use_id), hookResponseText(r), isError, [], 'hook', r);
        return;
      }
      case 'UserPromptSubmit':
        if (str(d.prompt).trim()) this.prompt(ev, d.prompt, 'hook', []);
        else this.turnFor(ev);
        return;
      case 'Notification':
        this.turnFor(ev);
        this.notice(ev, 'notification', str(d.message) || 'Claude needs your attention', 'warn', d);
        return;
      default:
        // SessionStart, Stop, SubagentStop, PreCompact, SessionEnd: the
        // transcript and the run's own events say the same.
        this.turnFor(ev);
    }
  };

  // ---- the relay's own events ----

  P.relay = function (ev, d, name) {
    switch (name) {
      case 'run_started': {
        const prompt = promptOf(d);
        if (str(d.cwd)) this.info.cwd = this.info.cwd || d.cwd;
        if (str(d.model)) this.info.model = d.model;
        // Mode: "terminal", "acp", or none for a background run.
        if (!this.info.source) this.info.source = d.mode === 'terminal' || d.mode === 'acp' ? d.mode : 'background';
        if (!prompt) {
          // No prompt (idle, or typed later in a terminal): the turn comes
          // with the first thing that needs one.
          this.idleInters.add(str(ev.interaction_id));
          this.pendingRun = { runID: str(d.run_id), mode: str(d.mode) };
          return;
        }
        const t = this.turn;
        const fresh = t && str(ev.interaction_id) === t.interaction && !t.hasContent && !t.runID && (!t.prompt || samePrompt(t.prompt, prompt));
        const turn = fresh ? this.turnFor(ev) : this.newTurn(ev);
        if (!turn.prompt) turn.prompt = prompt;
        turn.promptFrom = turn.promptFrom || 'run';
        turn.runID = str(d.run_id);
        turn.mode = str(d.mode);
        if (!this.info.prompt) this.info.prompt = prompt;
        this.mark(ev, turn);
        this.view.changed(turn);
        return;
      }
      case 'message_sent': {
        // A message sent into a live run (a follow-up; each prompt of an
        // ACP session): the first event of its turn. One sent while a
        // turn of its run still runs waits for that turn's end (it was
        // queued; the running turn's last events come after it).
        const t = this.turn;
        if (t && !t.ended && t.runID && t.runID === str(d.run_id) && t.interaction !== str(ev.interaction_id)) {
          this.queued.push({ ev, d });
          return;
        }
        this.sent(ev, d);
        return;
      }
      case 'turn_completed': {
        // Its interaction's first turn still open (a terminal run has one
        // interaction and many turns).
        const mine = (this.interTurns.get(str(ev.interaction_id)) || []).find((x) => !x.ended);
        const t = mine || this.turnFor(ev);
        const r = obj(d.result);
        if (str(d.status)) t.status = d.status;
        t.ended = true;
        if (str(d.run_id)) this.runTurnsEnded.add(d.run_id);
        if (d.status === 'interrupted') {
          // Someone pressed Stop: nothing failed. The CLI's own words
          // (error_during_execution) stay in the card's details.
          const text = str(d.reason) || ('Stopped ' + (STOPPED_BY[str(d.by)] || '')).trim() + '.';
          if (t.errorCard) {
            Object.assign(t.errorCard, { label: 'interrupted', text, cls: 'warn' });
            this.view.changed(t.errorCard);
          } else {
            this.notice(ev, 'interrupted', text, 'warn', d);
          }
        }
        if (t.durationMs === null && num(r.duration_ms) !== null) t.durationMs = r.duration_ms;
        if (t.cost === null && num(d.total_cost_usd) !== null) t.cost = d.total_cost_usd;
        if (!t.usage && d.usage && typeof d.usage === 'object') t.usage = d.usage;
        this.mark(ev, t);
        this.view.changed(t);
        this.startQueued();
        return;
      }
      case 'run_completed':
      case 'run_failed':
      case 'run_cancelled':
        return this.runEnded(ev, d, name.slice(4));
      case 'stderr': {
        this.turnOrIdle(ev);
        const text = pickText(d);
        if (ERRORISH.test(text)) this.notice(ev, 'stderr', text, 'error', d);
        return; // warnings and progress chatter: in "Show all events"
      }
      case 'limit_notice':
        this.turnOrIdle(ev);
        return this.notice(ev, 'limit', pickText(d) || 'Usage limit reached.', 'warn', d);
      case 'mode_changed':
        this.turnOrIdle(ev);
        return this.notice(ev, 'mode', 'Permission mode: ' + (str(d.permission_mode) || 'changed'), 'minor', d);
      case 'billing_source':
        // Until the summary is fetched again; the stored billed_to wins.
        if (str(d.label)) this.info.billedTo = d.label;
        this.turnOrIdle(ev);
        return this.notice(ev, 'billed to', str(d.label) || 'unknown', 'minor', d);
      case 'billing_refused':
        this.turnOrIdle(ev);
        return this.notice(ev, 'billing guard', str(d.message) || 'The billing guard stopped the run.', 'error', d);
      case 'approval_requested':
        return this.approvalRequested(ev, d);
      case 'approval_resolved':
        return this.approvalResolved(ev, d);
      default:
        this.turnOrIdle(ev);
        return this.notice(ev, 'relay ' + name, pickText(d), /malformed|error|fail/i.test(name) ? 'error' : 'minor', d);
    }
  };

  // startQueued makes the turn of the next message queued behind the turn
  // that just ended.
  P.startQueued = function () {
    const q = this.queued.shift();
    if (q) this.sent(q.ev, q.d);
  };

  // sent makes a message_sent's turn, which belongs to its run.
  P.sent = function (ev, d) {
    const t = this.prompt(ev, promptOf(d), 'run', []);
    if (!t.runID) t.runID = str(d.run_id);
  };

  P.runEnded = function (ev, d, status) {
    // Messages still queued when the run ended never ran; their prompts
    // still show.
    while (this.queued.length) this.startQueued();
    // A run that ends before its first prompt (an ACP session closed at
    // once) has no turn to end: only a failure is worth a card.
    const t = this.turnOrIdle(ev);
    const r = obj(d.result);
    const code = num(r.exitCode) !== null ? r.exitCode : num(d.exit_code);
    // A live run cancelled after its turn completed was closed while idle
    // (helpers before event schema 2 said "cancelled"): nothing was lost.
    const closedIdle = t && t.ended && t.status === 'completed' && status === 'cancelled';
    if (t && !closedIdle) {
      // A turn that ended keeps its own status (an interrupted turn, then
      // its run cancelled); one the run's end cut short takes the run's.
      if (!t.ended && (!t.status || status !== 'completed')) t.status = status;
      if (status === 'completed' && code !== null && code !== 0) t.status = 'failed';
      // A live or terminal run's end sums its turns, which have their own.
      const summed = this.runTurnsEnded.has(str(d.run_id));
      if (!summed && t.durationMs === null && num(r.duration_ms) !== null) t.durationMs = r.duration_ms;
      if (!summed && t.cost === null && num(d.total_cost_usd) !== null) t.cost = d.total_cost_usd;
      if (!summed && !t.usage && d.usage && typeof d.usage === 'object') t.usage = d.usage;
      this.mark(ev, t);
      this.view.changed(t);
    }
    // Approvals still pending when their run ends are over.
    for (const a of this.approvals.values()) {
      if (a.state === 'pending' && (!a.runID || !str(d.run_id) || a.runID === d.run_id)) {
        a.state = 'resolved';
        a.by = 'cancelled';
        a.reason = 'the run ended';
        this.view.changed(a);
      }
    }
    if (closedIdle) {
      this.notice(ev, 'run closed', 'The run was closed between turns.', 'minor', d);
    } else if (status === 'cancelled') {
      // A cancel exits 130 by design: that is not a failure.
      if (t) this.notice(ev, 'run cancelled', str(d.reason) || 'The run was cancelled.', 'warn', d);
    } else if (status === 'failed' || (t && code !== null && code !== 0)) {
      let text = str(d.reason) || pickText(d) || 'The run failed.';
      if (code !== null) text += ' (exit ' + code + ')';
      if (str(r.stderr) && text.indexOf(r.stderr) < 0) text += '\n' + r.stderr;
      this.notice(ev, 'run failed', text, 'error', d);
    }
  };

  P.approvalRequested = function (ev, d) {
    this.turnFor(ev);
    const id = str(d.approval_id);
    let a = id ? this.approvals.get(id) : null;
    if (!a) {
      a = { type: 'approval', cls: 'approval-card', id, state: 'pending', cursor: ev.cursor, time: ev.timestamp };
      if (id) this.approvals.set(id, a);
      this.push(a);
    }
    Object.assign(a, {
      runID: str(d.run_id), toolName: str(d.tool_name), title: str(d.title), kind: str(d.kind) || 'tool',
      input: d.input, toolUseID: str(d.tool_use_id), options: Array.isArray(d.options) ? d.options.filter((o) => typeof o === 'string') : [],
      approver: str(d.approver), policyRule: str(d.policy_rule), policyReason: str(d.policy_reason),
    });
    this.mark(ev, a);
    const call = a.toolUseID ? this.calls.get(a.toolUseID) : null;
    if (call) { call.approval = a; this.view.changed(call); }
    this.view.changed(a);
  };

  P.approvalResolved = function (ev, d) {
    this.turnFor(ev);
    const id = str(d.approval_id);
    let a = id ? this.approvals.get(id) : null;
    if (!a) {
      // The request is older than what we have (or was never posted).
      a = { type: 'approval', cls: 'approval-card', id, runID: str(d.run_id), toolName: '', title: '', kind: 'tool', options: [], cursor: ev.cursor, time: ev.timestamp };
      if (id) this.approvals.set(id, a);
      this.push(a);
    }
    a.state = 'resolved';
    a.decision = str(d.decision);
    a.by = str(d.by);
    a.decidedBy = str(d.decided_by); // with by "dashboard": the token's name
    a.reason = str(d.reason);
    a.resolvedAt = ev.timestamp;
    this.mark(ev, a);
    this.view.changed(a);
  };

  return { Model, toolInfo, pickText, str, obj, num };
})();
