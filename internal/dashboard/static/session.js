// Session timeline. History is fetched in pages and folded into "entries"
// (plain objects); only a window of the newest entries becomes DOM, built a
// chunk per animation frame, so a 10k-event session never blocks the page.
// New events arrive over SSE and are appended the same way.
//
// Safety: event content only ever reaches the page through textContent (via
// CR.el) or input.value; nothing here assigns innerHTML.
'use strict';

(function () {
  const C = window.CR;
  const el = C.el;

  const PAGE = 500;        // events per history request
  const WINDOW = 300;      // entries rendered at first, and per "Load older"
  const CHUNK = 60;        // entries turned into DOM per frame
  const MAX_TEXT = 20000;  // characters shown before a "Show all" button
  const SUMMARY_EVERY = 1000; // ms between summary refreshes while live

  const sessionID = decodeURIComponent(location.pathname.replace(/^\/sessions\//, ''));
  const api = '/api/sessions/' + encodeURIComponent(sessionID);

  const timeline = document.getElementById('timeline');
  const loading = document.getElementById('loading');
  const empty = document.getElementById('empty');
  const olderBar = document.getElementById('older-bar');
  const olderCount = document.getElementById('older-count');
  const olderBtn = document.getElementById('load-older');

  const entries = [];          // every entry, oldest first
  const calls = new Map();     // tool_use_id -> tool entry
  let lastCursor = 0;          // highest cursor folded in
  let first = 0, end = 0;      // entries[first, end) are in the DOM
  let historyDone = false;
  let frame = 0;
  let session = null;

  document.getElementById('crumb').textContent = sessionID;
  document.title = 'claude-relay: ' + sessionID;

  // ---- tools (titles and kinds as seed 004's extract_tool_info) ----

  function str(v) { return typeof v === 'string' ? v : ''; }

  function toolInfo(name, input) {
    input = input && typeof input === 'object' ? input : {};
    switch (name) {
      case 'Read': return { kind: 'read', title: 'Read ' + (str(input.file_path) || 'file') };
      case 'Edit': return { kind: 'edit', title: 'Edit ' + (str(input.file_path) || 'file') };
      case 'Write': return { kind: 'edit', title: 'Write ' + (str(input.file_path) || 'file') };
      case 'Bash': {
        if (typeof input.description === 'string') return { kind: 'execute', title: input.description };
        return { kind: 'execute', title: 'Run: ' + Array.from(str(input.command)).slice(0, 50).join('') };
      }
      case 'Grep':
      case 'Glob': return { kind: 'search', title: 'Search: ' + str(input.pattern) };
      case 'WebFetch': return { kind: 'fetch', title: 'Fetch ' + str(input.url) };
      default: return { kind: 'other', title: String(name || 'tool') };
    }
  }

  // resultText flattens a tool result's content: a string, or blocks.
  function resultText(content) {
    if (typeof content === 'string') return content;
    if (Array.isArray(content)) {
      return content.map((b) => (b && b.type === 'text' && typeof b.text === 'string') ? b.text : JSON.stringify(b)).join('\n');
    }
    if (content === undefined || content === null) return '';
    return JSON.stringify(content, null, 2);
  }

  // hookResponseText renders a PostToolUse hook's tool_response.
  function hookResponseText(r) {
    if (typeof r === 'string') return r;
    if (r && typeof r === 'object') {
      const parts = [];
      if (typeof r.stdout === 'string' && r.stdout) parts.push(r.stdout);
      if (typeof r.stderr === 'string' && r.stderr) parts.push(r.stderr);
      if (parts.length) return parts.join('\n');
    }
    return resultText(r);
  }

  // ---- folding events into entries ----

  function add(en) { entries.push(en); return en; }

  function notice(ev, label, text, cls, data) {
    return add({ type: 'notice', label, text, cls: cls || 'minor', time: ev.timestamp, data });
  }

  function toolCall(ev, id, name, input) {
    if (id && calls.has(id)) return calls.get(id); // hook and transcript both report it
    const en = add({ type: 'tool', id, name, input, info: toolInfo(name, input), results: [], time: ev.timestamp, cls: 'tool' });
    if (id) calls.set(id, en);
    return en;
  }

  function toolResult(ev, id, text, isError) {
    const r = { text, isError: !!isError, time: ev.timestamp };
    const call = id ? calls.get(id) : null;
    if (!call) {
      notice(ev, isError ? 'tool error' : 'tool result', text, isError ? 'error' : 'minor');
      return;
    }
    if (call.results.length && call.results[call.results.length - 1].text === text) return; // hook + transcript
    call.results.push(r);
    if (call.node) {
      call.node._results.appendChild(renderResult(r));
      updateToolState(call);
    }
  }

  function fromMessage(ev, d, role) {
    const msg = d.message && typeof d.message === 'object' ? d.message : {};
    const content = msg.content;
    if (typeof content === 'string') {
      if (content.trim()) add({ type: 'text', label: role, text: content, cls: role, time: ev.timestamp });
      return;
    }
    if (!Array.isArray(content)) return;
    for (const b of content) {
      if (!b || typeof b !== 'object') continue;
      switch (b.type) {
        case 'text':
          if (str(b.text).trim()) add({ type: 'text', label: role, text: b.text, cls: role, time: ev.timestamp });
          break;
        case 'thinking':
          add({ type: 'thinking', label: 'thinking', text: str(b.thinking), cls: 'thinking', time: ev.timestamp });
          break;
        case 'redacted_thinking':
          add({ type: 'thinking', label: 'thinking', text: '(redacted)', cls: 'thinking', time: ev.timestamp });
          break;
        case 'tool_use':
        case 'server_tool_use':
        case 'mcp_tool_use':
          toolCall(ev, str(b.id), str(b.name), b.input);
          break;
        case 'tool_result':
          toolResult(ev, str(b.tool_use_id), resultText(b.content), b.is_error);
          break;
        default:
          break; // images and the like: not shown
      }
    }
    if (role === 'assistant' && typeof d.error === 'string' && d.error) {
      notice(ev, 'error', d.error, 'error', d);
    }
  }

  function fromResult(ev, d) {
    const subtype = str(d.subtype);
    const isError = d.is_error === true || subtype.startsWith('error');
    const parts = [];
    if (subtype) parts.push(subtype);
    if (typeof d.num_turns === 'number') parts.push(d.num_turns + ' turns');
    if (typeof d.duration_ms === 'number') parts.push(C.fmtDuration(d.duration_ms));
    if (typeof d.total_cost_usd === 'number') parts.push(C.fmtCost(d.total_cost_usd));
    add({
      type: 'result', label: isError ? 'result: error' : 'result', text: str(d.result),
      summary: parts.join(' · '), usage: d.usage, cls: isError ? 'error' : 'result-entry', time: ev.timestamp,
    });
  }

  // pickText finds the human-readable part of a relay or unknown event.
  function pickText(d) {
    for (const k of ['text', 'message', 'error', 'line', 'stderr', 'reason']) {
      if (typeof d[k] === 'string' && d[k]) return d[k];
    }
    if (d.result && typeof d.result === 'object' && typeof d.result.stderr === 'string') return d.result.stderr;
    return '';
  }

  function fromRelay(ev, d, name) {
    switch (name) {
      case 'run_started':
        return notice(ev, 'run started', pickText(d), 'minor', d);
      case 'run_completed': {
        const r = d.result && typeof d.result === 'object' ? d.result : d;
        const code = typeof r.exitCode === 'number' ? r.exitCode : null;
        const bad = code !== null && code !== 0;
        let text = 'Run completed' + (code !== null ? ' · exit ' + code : '');
        if (typeof r.duration_ms === 'number') text += ' · ' + C.fmtDuration(r.duration_ms);
        if (bad && str(r.stderr)) text += '\n' + r.stderr;
        return notice(ev, 'run completed', text, bad ? 'error' : 'minor', d);
      }
      case 'run_failed':
        return notice(ev, 'run failed', pickText(d) || 'The run failed.', 'error', d);
      case 'run_cancelled':
        return notice(ev, 'run cancelled', pickText(d) || 'The run was cancelled.', 'warn', d);
      case 'stderr':
        return notice(ev, 'stderr', pickText(d), 'error', d);
      case 'limit_notice':
        return notice(ev, 'limit', pickText(d) || 'Usage limit reached.', 'warn', d);
      default:
        return notice(ev, 'relay ' + name, pickText(d), /malformed|error|fail/i.test(name) ? 'error' : 'minor', d);
    }
  }

  function fromHook(ev, d, name) {
    switch (name) {
      case 'PreToolUse':
        toolCall(ev, str(d.tool_use_id), str(d.tool_name), d.tool_input);
        return;
      case 'PostToolUse': {
        const r = d.tool_response;
        const isError = !!(r && typeof r === 'object' && (r.is_error === true || r.interrupted === true));
        toolResult(ev, str(d.tool_use_id), hookResponseText(r), isError);
        return;
      }
      case 'Notification':
        notice(ev, 'notification', str(d.message), 'warn', d);
        return;
      case 'UserPromptSubmit':
        notice(ev, 'prompt submitted', str(d.prompt), 'minor', d);
        return;
      default:
        notice(ev, 'hook ' + name, '', 'minor', d);
    }
  }

  // ingest folds one event (envelope + cursor) into entries.
  function ingest(ev) {
    if (!ev || typeof ev.cursor !== 'number' || ev.cursor <= lastCursor) return;
    lastCursor = ev.cursor;
    const d = ev.event_data && typeof ev.event_data === 'object' ? ev.event_data : {};
    const type = String(ev.event_type || '');
    if (type.startsWith('relay.')) return fromRelay(ev, d, type.slice(6));
    if (type.startsWith('hook.')) return fromHook(ev, d, type.slice(5));
    const base = type.startsWith('transcript.') ? type.slice(11) : type;
    switch (base) {
      case 'assistant': return fromMessage(ev, d, 'assistant');
      case 'user': return fromMessage(ev, d, 'user');
      case 'result': return fromResult(ev, d);
      case 'system':
        if (d.subtype === 'init') {
          const bits = ['Session started'];
          if (str(d.model)) bits.push('model ' + d.model);
          if (str(d.cwd)) bits.push(d.cwd);
          return notice(ev, 'system', bits.join(' · '), 'minor', d);
        }
        return notice(ev, 'system ' + str(d.subtype), pickText(d), 'minor', d);
      case 'stream_event':
        return; // partial deltas; the full message follows
      default:
        if (/malformed|stderr|error/i.test(type) || d.type === 'malformed') {
          return notice(ev, type, pickText(d) || JSON.stringify(d), 'error', d);
        }
        return notice(ev, type || 'event', pickText(d), 'minor', d);
    }
  }

  // ---- rendering entries ----

  function textBlock(cls, text) {
    const div = el('div', cls);
    text = String(text);
    if (text.length <= MAX_TEXT) {
      div.textContent = text;
      return div;
    }
    div.textContent = text.slice(0, MAX_TEXT) + '…';
    const more = el('button', null, 'Show all (' + text.length.toLocaleString() + ' characters)');
    more.type = 'button';
    more.addEventListener('click', () => { div.textContent = text; });
    const wrap = el('div');
    wrap.append(div, more);
    return wrap;
  }

  function preBlock(text) {
    const pre = el('pre');
    text = String(text);
    pre.textContent = text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) + '\n… (' + text.length.toLocaleString() + ' characters)' : text;
    return pre;
  }

  // jsonDetails is a folded view of raw data, built only when opened.
  function jsonDetails(label, data) {
    const det = el('details');
    det.appendChild(el('summary', null, label));
    det.addEventListener('toggle', () => {
      if (det.open && det.childNodes.length === 1) det.appendChild(preBlock(JSON.stringify(data, null, 2)));
    });
    return det;
  }

  function meta(label, time) {
    const m = el('div', 'meta');
    m.appendChild(el('span', 'kind', label));
    const t = el('time', null, C.fmtClock(time));
    if (time) t.dateTime = time;
    m.appendChild(t);
    return m;
  }

  function renderResult(r) {
    const det = el('details', 'result' + (r.isError ? ' error' : ''));
    const lines = r.text ? r.text.split('\n').length : 0;
    det.appendChild(el('summary', null, (r.isError ? 'Error' : 'Output') + ' (' + lines + (lines === 1 ? ' line)' : ' lines)')));
    det.appendChild(preBlock(r.text || '(no output)'));
    det.open = r.isError || (lines <= 12 && r.text.length <= 2000);
    return det;
  }

  function updateToolState(en) {
    const st = en.node._state;
    const last = en.results[en.results.length - 1];
    if (!last) {
      const over = session && session.status !== 'running' && session.status !== 'unknown';
      st.textContent = over ? 'no result' : 'running…';
      st.className = 'state';
      return;
    }
    st.textContent = last.isError ? 'error' : 'done';
    st.className = 'state' + (last.isError ? ' error' : '');
  }

  function renderTool(en, node) {
    const head = el('div');
    head.appendChild(el('span', 'badge', en.name || 'tool'));
    head.appendChild(el('span', 'title', en.info.title));
    const st = el('span', 'state');
    head.appendChild(st);
    node.appendChild(head);
    node._state = st;
    node.dataset.kind = en.info.kind;
    node.dataset.toolUseId = en.id || '';
    if (en.name === 'Bash' && en.input && typeof en.input.command === 'string') {
      node.appendChild(preBlock('$ ' + en.input.command));
    } else if (en.input !== undefined) {
      node.appendChild(jsonDetails('Input', en.input));
    }
    const box = el('div', 'results');
    for (const r of en.results) box.appendChild(renderResult(r));
    node.appendChild(box);
    node._results = box;
  }

  function render(en) {
    if (en.node) return en.node;
    const node = el('div', 'entry ' + en.cls);
    switch (en.type) {
      case 'text':
        node.appendChild(meta(en.label, en.time));
        node.appendChild(textBlock('text', en.text));
        break;
      case 'thinking': {
        node.appendChild(meta('thinking', en.time));
        const det = el('details');
        det.appendChild(el('summary', null, en.text.split('\n')[0].slice(0, 120) || 'Thinking'));
        det.appendChild(textBlock('text', en.text));
        node.appendChild(det);
        break;
      }
      case 'tool':
        node.appendChild(meta('tool · ' + en.info.kind, en.time));
        renderTool(en, node);
        break;
      case 'result':
        node.appendChild(meta(en.label, en.time));
        if (en.summary) node.appendChild(el('div', 'usage', en.summary));
        if (en.text) node.appendChild(textBlock('text', en.text));
        if (en.usage && typeof en.usage === 'object') {
          node.appendChild(el('div', 'usage', 'tokens: ' + C.tokensTitle(en.usage)));
        }
        break;
      default:
        node.appendChild(meta(en.label, en.time));
        if (en.text) node.appendChild(textBlock('text', en.text));
        if (en.data && Object.keys(en.data).length) node.appendChild(jsonDetails('Details', en.data));
    }
    en.node = node;
    if (en.type === 'tool') updateToolState(en);
    return node;
  }

  function nearBottom() {
    const d = document.documentElement;
    return d.scrollHeight - (window.scrollY + window.innerHeight) < 120;
  }

  function schedule() {
    if (!frame) frame = requestAnimationFrame(flush);
  }

  // flush appends up to CHUNK pending entries and reschedules itself.
  function flush() {
    frame = 0;
    if (!historyDone) return;
    const stick = nearBottom();
    const stop = Math.min(entries.length, end + CHUNK);
    const frag = document.createDocumentFragment();
    for (; end < stop; end++) frag.appendChild(render(entries[end]));
    timeline.appendChild(frag);
    if (stick) window.scrollTo(0, document.documentElement.scrollHeight);
    if (end < entries.length) {
      schedule();
    } else {
      document.body.dataset.state = 'ready';
    }
    empty.hidden = entries.length > 0;
    updateOlder();
  }

  function updateOlder() {
    olderBar.hidden = first === 0;
    olderCount.textContent = first > 0 ? first.toLocaleString() + ' older entries not shown' : '';
  }

  // loadOlder renders the previous WINDOW entries above, a chunk per frame,
  // keeping the visible content where it is.
  function loadOlder() {
    const target = Math.max(0, first - WINDOW);
    const step = () => {
      const from = Math.max(target, first - CHUNK);
      const frag = document.createDocumentFragment();
      for (let i = from; i < first; i++) frag.appendChild(render(entries[i]));
      const before = document.documentElement.scrollHeight;
      timeline.insertBefore(frag, timeline.firstChild);
      window.scrollBy(0, document.documentElement.scrollHeight - before);
      first = from;
      updateOlder();
      if (first > target) requestAnimationFrame(step);
    };
    step();
  }
  olderBtn.addEventListener('click', loadOlder);

  // ---- summary ----

  function shellQuote(s) {
    return /^[A-Za-z0-9._:@%+=/-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
  }

  function showSummary() {
    if (!session) return;
    for (const call of calls.values()) {
      if (call.node && call.results.length === 0) updateToolState(call);
    }
    C.setStatus(document.getElementById('s-status'), session.status);
    document.getElementById('s-started').textContent = C.fmtTime(session.started_at || session.created_at);
    document.getElementById('s-duration').textContent = C.sessionDuration(session);
    document.getElementById('s-events').textContent = C.fmtInt(session.event_count);
    const tok = document.getElementById('s-tokens');
    tok.textContent = C.fmtInt(C.totalTokens(session.usage));
    tok.title = C.tokensTitle(session.usage);
    document.getElementById('s-cost').textContent = C.fmtCost(session.total_cost_usd);
    const conv = str(session.external_conversation_id);
    document.getElementById('resume').hidden = !conv;
    document.getElementById('s-conv').textContent = conv;
    document.getElementById('resume-cmd').textContent = conv ? resumeCommand(conv) : '';
  }

  // resumeCommand is the follow-up run: --session keeps it in this session
  // (without it the run would start a new one), --resume continues the
  // conversation, and the prompt is a placeholder to replace, as in the
  // `resume:` line `claude-relay run` prints.
  function resumeCommand(conv) {
    return 'claude-relay run --session ' + shellQuote(sessionID) + ' --resume ' + shellQuote(conv) + " 'next prompt'";
  }

  document.getElementById('copy-resume').addEventListener('click', async (e) => {
    const btn = e.currentTarget;
    const ok = await C.copyText(document.getElementById('resume-cmd').textContent);
    btn.textContent = ok ? 'Copied' : 'Copy failed';
    setTimeout(() => { btn.textContent = 'Copy'; }, 1500);
  });

  let summaryTimer = 0, summaryAt = 0;
  function refreshSummary() {
    if (summaryTimer) return;
    const wait = Math.max(0, summaryAt + SUMMARY_EVERY - Date.now());
    summaryTimer = setTimeout(async () => {
      summaryTimer = 0;
      summaryAt = Date.now();
      try {
        const res = await fetch(api, { credentials: 'same-origin' });
        if (res.status === 401) return toLogin();
        if (res.ok) { session = await res.json(); showSummary(); }
      } catch (_) { /* the stream's reconnect will bring us back */ }
    }, wait);
  }
  setInterval(() => { if (session && session.status === 'running') showSummary(); }, 1000);

  function toLogin() {
    location.href = '/login?next=' + encodeURIComponent(location.pathname);
  }

  // ---- loading ----

  async function loadHistory() {
    for (;;) {
      const res = await fetch(api + '/events?limit=' + PAGE + '&after=' + lastCursor, { credentials: 'same-origin' });
      if (res.status === 401) return toLogin();
      if (!res.ok) throw new Error('loading events: HTTP ' + res.status);
      const page = await res.json();
      const evs = Array.isArray(page.events) ? page.events : [];
      for (const ev of evs) ingest(ev);
      loading.textContent = 'Loading events… ' + lastCursor.toLocaleString();
      if (evs.length < PAGE) break;
    }
    historyDone = true;
    loading.hidden = true;
    first = end = Math.max(0, entries.length - WINDOW);
    if (entries.length === 0) { empty.hidden = false; document.body.dataset.state = 'ready'; }
    schedule();
  }

  function stream() {
    const es = new EventSource(api + '/stream?after=' + lastCursor);
    es.addEventListener('open', () => { C.setConn('live', 'live'); document.body.dataset.live = '1'; });
    es.addEventListener('event', (e) => {
      let ev;
      try { ev = JSON.parse(e.data); } catch (_) { return; }
      ingest(ev);
      schedule();
      refreshSummary();
    });
    es.addEventListener('error', () => {
      C.setConn('down', 'reconnecting…');
      if (es.readyState === EventSource.CLOSED) {
        // EventSource gives up on HTTP errors (401 after a token change,
        // 503 while shutting down): start over from our cursor.
        C.checkAuth().then((ok) => { if (ok) setTimeout(stream, 5000); });
      }
    });
  }

  (async function main() {
    refreshSummary();
    try {
      await loadHistory();
    } catch (err) {
      loading.textContent = String(err && err.message || err) + ' (reload to retry)';
      return;
    }
    stream();
  })();
})();
