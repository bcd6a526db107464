// The session page: a conversation. History is fetched in pages and folded
// by the model (session-model.js) into entries; only a window of them
// becomes DOM (session-view.js), built a chunk per animation frame from
// the newest up, so a 10,000-event session shows its last screen at once
// and never blocks the page. New events arrive over SSE and are appended
// the same way. The assistant's text is shown escaped until the server's
// Markdown rendering of the window arrives.
//
// The window is [first, end) of the current list: the conversation, or
// every event as a raw card ("Show all events"). It follows the tail while
// the newest entry is in it; a permalink (#c<cursor>, or #approval-<id> from
// the approvals page) opens a window around its event instead, and "Jump to
// latest" goes back to the tail.
'use strict';

(function () {
  const C = window.CR;
  const M = window.CRModel;
  const V = window.CRView;

  const PAGE = 1000;          // events per history request (the API's maximum)
  const WINDOW = 300;         // entries rendered at first, and per "Load older/newer"
  const CHUNK = 60;           // entries turned into DOM per frame
  const SUMMARY_EVERY = 1000; // ms between summary refreshes while live
  const MD_BATCH = 200;       // cursors per Markdown request (the API's maximum)
  const MD_MAX = 65536;       // longer text stays plain (folded behind "Show all")

  const sessionID = decodeURIComponent(location.pathname.replace(/^\/sessions\//, ''));
  const api = '/api/sessions/' + encodeURIComponent(sessionID);

  const $ = (id) => document.getElementById(id);
  const timeline = $('timeline');
  const loading = $('loading');
  const empty = $('empty');
  const olderBar = $('older-bar');
  const newerBar = $('newer-bar');
  const showAllBtn = $('show-all');
  const jumpBtn = $('jump-end');

  let session = null;
  let showAll = false;       // the raw view
  let first = 0, end = 0;    // list()[first, end) are in the DOM
  let following = true;      // the window ends at the newest entry and grows with it
  let historyDone = false;
  let frame = 0;
  let busy = false;          // a window is being built over several frames
  let gen = 0;               // bumped by reset: a window being built for an older one stops
  let highlighted = null;
  let wantApproval = '';     // #approval-<id> not in the session yet: shown when it arrives

  $('crumb').textContent = sessionID;
  document.title = 'claude-relay: ' + sessionID;

  // ctx is what the view asks of the page.
  const ctx = {
    owns(en) { return en.type === 'raw' || model.byCursor.get(en.cursor) === en; },
    live(t) { return t === model.turn && !!session && session.status === 'running'; },
    over() { return !!session && session.status !== 'running' && session.status !== 'unknown'; },
    wantMarkdown(en) { md.want(en); },
  };

  const model = new M.Model({
    changed(en) { if (en.node) V.update(en, ctx); },
    added(parent, child) { V.added(parent, child, ctx); },
    moved(en, from) {
      if (showAll) return;
      if (from < end) {
        end--;
        if (from < first) first--;
      }
      if (en.node && en.node.parentNode === timeline) en.node.remove();
      schedule();
    },
  });

  function list() { return showAll ? model.raw : model.conv; }

  // ---- Markdown: fetched for what is rendered ----

  const md = {
    cache: new Map(),   // cursor -> HTML of each text block
    waiting: new Map(), // cursor -> entries waiting for it
    queue: new Set(),
    inflight: new Set(),
    timer: 0,
    pending: 0,
    want(en) {
      if (en.html !== undefined || en.text.length > MD_MAX) return;
      const c = en.cursor;
      const got = this.cache.get(c);
      if (got) return this.apply(en, got);
      let w = this.waiting.get(c);
      if (!w) { w = []; this.waiting.set(c, w); }
      if (!w.includes(en)) w.push(en);
      if (!this.inflight.has(c)) this.queue.add(c);
      if (!this.timer) this.timer = setTimeout(() => this.send(), 20);
    },
    apply(en, htmls) {
      const h = htmls[en.block];
      en.html = typeof h === 'string' && h ? h : null;
      if (en.html) V.markdown(en);
    },
    async send() {
      this.timer = 0;
      const cursors = Array.from(this.queue).slice(0, MD_BATCH);
      if (!cursors.length) return;
      for (const c of cursors) { this.queue.delete(c); this.inflight.add(c); }
      if (this.queue.size) this.timer = setTimeout(() => this.send(), 0);
      this.pending++;
      document.body.dataset.markdown = 'loading';
      let html = {};
      try {
        const res = await fetch(api + '/markdown?cursors=' + cursors.join(','), { credentials: 'same-origin' });
        if (res.status === 401) return toLogin();
        if (res.ok) {
          const body = await res.json();
          if (body && body.html && typeof body.html === 'object') html = body.html;
        }
      } catch (_) { /* the text stays as it is, escaped */ }
      for (const c of cursors) {
        this.inflight.delete(c);
        const h = Array.isArray(html[c]) ? html[c] : [];
        this.cache.set(c, h);
        const w = this.waiting.get(c) || [];
        this.waiting.delete(c);
        for (const en of w) this.apply(en, h);
      }
      if (--this.pending === 0 && !this.timer) document.body.dataset.markdown = 'done';
    },
  };

  // ---- the window ----

  function nearBottom() {
    const d = document.documentElement;
    return d.scrollHeight - (window.scrollY + window.innerHeight) < 120;
  }

  function toBottom() { window.scrollTo(0, document.documentElement.scrollHeight); }

  function schedule() {
    if (!frame) frame = requestAnimationFrame(flush);
  }

  // flush appends new entries (a chunk per frame) while following the tail.
  function flush() {
    frame = 0;
    if (!historyDone || busy) return;
    const L = list();
    if (following && end < L.length) {
      const stick = nearBottom();
      const stop = Math.min(L.length, end + CHUNK);
      const frag = document.createDocumentFragment();
      for (; end < stop; end++) frag.appendChild(V.render(L[end], ctx));
      timeline.appendChild(frag);
      if (stick) toBottom();
      if (end < L.length) schedule();
    }
    bars();
  }

  function bars() {
    const L = list();
    olderBar.hidden = first === 0;
    $('older-count').textContent = first > 0 ? first.toLocaleString() + ' older entries not shown' : '';
    newerBar.hidden = following || end >= L.length;
    $('newer-count').textContent = end < L.length ? (L.length - end).toLocaleString() + ' newer entries not shown' : '';
    jumpBtn.hidden = following;
    empty.hidden = L.length > 0;
  }

  // reset empties the window. Entries keep their nodes: the next window
  // reuses them (the model keeps even detached ones up to date).
  function reset() {
    gen++;
    busy = false;
    first = end = 0;
    following = false;
    timeline.replaceChildren();
    highlight(null);
  }

  // prependTo renders list()[target, first) above the window a chunk per
  // frame, keeping what is on screen where it is (or at the bottom when
  // pinned), then calls done.
  function prependTo(target, pinned, done) {
    busy = true;
    const L = list();
    const g = gen;
    const step = () => {
      if (g !== gen) return; // another window replaced this one
      const from = Math.max(target, first - CHUNK);
      const frag = document.createDocumentFragment();
      for (let i = from; i < first; i++) frag.appendChild(V.render(L[i], ctx));
      const before = document.documentElement.scrollHeight;
      timeline.insertBefore(frag, timeline.firstChild);
      if (pinned) toBottom();
      else window.scrollBy(0, document.documentElement.scrollHeight - before);
      first = from;
      bars();
      firstScreen();
      if (first > target) { requestAnimationFrame(step); return; }
      busy = false;
      if (done) done();
      schedule();
    };
    step();
  }

  // openTail shows the newest WINDOW entries, bottom first.
  function openTail(done) {
    reset();
    const L = list();
    first = end = L.length;
    following = true;
    bars();
    prependTo(Math.max(0, L.length - WINDOW), true, done);
  }

  // openAt shows a window around index i of the current list.
  function openAt(i) {
    reset();
    const L = list();
    first = Math.max(0, Math.min(i - 50, L.length - WINDOW));
    end = first;
    const stop = Math.min(L.length, first + WINDOW);
    const frag = document.createDocumentFragment();
    for (; end < stop; end++) frag.appendChild(V.render(L[end], ctx));
    timeline.appendChild(frag);
    following = end >= L.length;
    bars();
  }

  function loadOlder() {
    if (busy || first === 0) return;
    prependTo(Math.max(0, first - WINDOW), false, null);
  }

  function loadNewer() {
    const L = list();
    const stop = Math.min(L.length, end + WINDOW);
    const frag = document.createDocumentFragment();
    for (; end < stop; end++) frag.appendChild(V.render(L[end], ctx));
    timeline.appendChild(frag);
    if (end >= L.length) following = true;
    bars();
  }

  function jumpEnd() {
    const done = () => { toBottom(); performance.mark('cr:end'); document.body.dataset.at = 'end'; };
    if (following) { done(); return; }
    openTail(done);
  }

  // firstScreen notes, once, that the page shows its first screen of
  // events (performance marks: what the benchmark reads, and devtools show).
  function firstScreen() {
    if (document.body.dataset.screen) return;
    document.body.dataset.screen = '1';
    performance.mark('cr:first-screen');
  }

  // ready notes, once, that the first window is built.
  function ready() {
    if (document.body.dataset.state === 'ready') return;
    firstScreen();
    performance.mark('cr:ready');
    document.body.dataset.state = 'ready';
  }

  $('load-older').addEventListener('click', loadOlder);
  $('load-newer').addEventListener('click', loadNewer);
  jumpBtn.addEventListener('click', jumpEnd);

  // ---- permalinks ----

  function rawIndex(cursor) {
    const L = model.raw;
    let lo = 0, hi = L.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (L[mid].cursor === cursor) return mid;
      if (L[mid].cursor < cursor) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
  }

  function highlight(node) {
    if (highlighted) highlighted.classList.remove('target');
    highlighted = node;
    if (node) node.classList.add('target');
  }

  function scrollTo(node) {
    const bar = document.querySelector('.top');
    const off = bar ? bar.getBoundingClientRect().bottom : 0;
    window.scrollTo(0, window.scrollY + node.getBoundingClientRect().top - off - 8);
  }

  // goTo shows the card of the event at cursor and highlights it; an event
  // the conversation hides is shown in the raw view. False: no such event.
  function goTo(cursor) {
    let en = showAll ? null : model.byCursor.get(cursor);
    if (!en) {
      const i = rawIndex(cursor);
      if (i < 0) {
        $('notice').textContent = 'No event #c' + cursor + ' in this session (it has ' + model.lastCursor.toLocaleString() + ' events); the link may belong to another session.';
        $('notice').hidden = false;
        return false;
      }
      if (!showAll) setView(true, -1);
      en = model.raw[i];
    }
    const top = en.top || en;
    if (top.idx < first || top.idx >= end) openAt(top.idx);
    const node = en.node && en.node.isConnected ? en.node : top.node;
    if (!node) return false;
    $('notice').hidden = true;
    highlight(node);
    scrollTo(node);
    document.body.dataset.target = String(cursor);
    ready(); // when this replaced the first window before it was done
    return true;
  }

  // goToApproval shows the card of the approval id and highlights it. An
  // approval the session does not have (yet) is noted, and shown once its
  // event arrives. False: not shown.
  function goToApproval(id) {
    const a = model.approvals.get(id);
    if (!a) {
      wantApproval = id;
      $('notice').textContent = 'No approval "' + id + '" in this session yet; it shows here when it arrives (the link may belong to another session).';
      $('notice').hidden = false;
      return false;
    }
    wantApproval = '';
    if (showAll) setView(false, -1); // approval cards are the conversation's
    const top = a.top || a;
    if (top.idx < first || top.idx >= end) openAt(top.idx);
    if (!a.node || !a.node.isConnected) return false;
    $('notice').hidden = true;
    highlight(a.node);
    scrollTo(a.node);
    document.body.dataset.target = 'approval-' + id;
    ready(); // when this replaced the first window before it was done
    return true;
  }

  // hashTarget reads the permalink in the URL: { cursor } for #c<cursor>,
  // { approval } for #approval-<id> (the id URL-encoded), else null.
  function hashTarget() {
    const h = location.hash;
    let m = /^#c(\d+)$/.exec(h);
    if (m) return Number(m[1]) > 0 ? { cursor: Number(m[1]) } : null;
    m = /^#approval-(.+)$/.exec(h);
    if (!m) return null;
    try {
      return { approval: decodeURIComponent(m[1]) };
    } catch (_) {
      return { approval: m[1] }; // not valid percent-encoding: taken as it is
    }
  }

  function goToTarget(target) {
    wantApproval = '';
    if (!target) {
      $('notice').hidden = true; // a link's notice is moot once the link is gone
      return false;
    }
    return 'approval' in target ? goToApproval(target.approval) : goTo(target.cursor);
  }

  window.addEventListener('hashchange', () => {
    if (historyDone) goToTarget(hashTarget());
  });

  // ---- show all events ----

  // firstVisibleCursor is the cursor of the topmost card on screen, or 0
  // when the page is at its end (then the other view opens at its end too).
  function firstVisibleCursor() {
    if (following && nearBottom()) return 0;
    const bar = document.querySelector('.top');
    const top = bar ? bar.getBoundingClientRect().bottom : 0;
    for (const n of timeline.children) {
      if (n.getBoundingClientRect().bottom > top) return Number(n.dataset.cursor) || 0;
    }
    return 0;
  }

  // setView switches between the conversation and every event; at > 0
  // opens the new view around that cursor, 0 at its end, < 0 not at all.
  function setView(all, at) {
    if (all === showAll) return;
    reset();
    showAll = all;
    document.body.dataset.view = all ? 'all' : 'conversation';
    showAllBtn.textContent = all ? 'Show the conversation' : 'Show all events';
    showAllBtn.setAttribute('aria-pressed', String(all));
    if (at < 0) return;
    if (at === 0) { openTail(null); return; }
    let i = 0;
    if (all) {
      i = Math.max(0, rawIndex(at));
    } else {
      for (let c = at; c > 0; c--) {
        const en = model.byCursor.get(c);
        if (en) { i = (en.top || en).idx; break; }
      }
    }
    openAt(i);
    const en = list()[i];
    if (en && en.node) scrollTo(en.node);
  }

  showAllBtn.addEventListener('click', () => setView(!showAll, firstVisibleCursor()));

  // ---- keyboard: j / k move between turns (a prompt and what answered it) ----

  function moveTurn(dir) {
    if (showAll) return;
    const bar = document.querySelector('.top');
    const off = (bar ? bar.getBoundingClientRect().bottom : 0) + 8;
    const L = model.conv;
    let target = null;
    if (dir > 0) {
      for (let i = first; i < end && !target; i++) {
        if (L[i].type === 'turn' && L[i].node.getBoundingClientRect().top > off + 8) target = L[i];
      }
      for (let i = end; i < L.length && !target; i++) if (L[i].type === 'turn') target = L[i];
    } else {
      for (let i = end - 1; i >= first && !target; i--) {
        if (L[i].type === 'turn' && L[i].node.getBoundingClientRect().top < off - 4) target = L[i];
      }
      for (let i = first - 1; i >= 0 && !target; i--) if (L[i].type === 'turn') target = L[i];
    }
    if (!target) return;
    if (target.idx < first || target.idx >= end) openAt(target.idx);
    highlight(target.node);
    scrollTo(target.node);
    document.body.dataset.turn = String(target.n);
  }

  document.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return; // typing, not navigating
    if (e.key === 'j' || e.key === 'k') {
      e.preventDefault();
      moveTurn(e.key === 'j' ? 1 : -1);
    } else if (e.key === 'End' && !following) {
      e.preventDefault();
      jumpEnd();
    }
  });

  // ---- summary ----

  function shellQuote(s) {
    return /^[A-Za-z0-9._:@%+=/-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
  }

  function fact(id, v) { $(id).textContent = v || '–'; }

  function showSummary() {
    const s = session || {};
    const info = model.info;
    const title = (M.str(s.title) || info.prompt || '').replace(/\s+/g, ' ').trim();
    $('s-title').textContent = title || sessionID;
    $('s-title').title = title;
    if (title) document.title = title.slice(0, 80) + ' · claude-relay';
    fact('s-project', M.str(s.project) || info.cwd);
    fact('s-source', C.fmtSource(M.str(s.source) || info.source));
    fact('s-model', M.str(s.model) || info.model);
    C.fillBilled($('s-billed'), M.str(s.billed_to) || info.billedTo);
    if (!session) return;
    for (const call of model.calls.values()) {
      if (call.node && !call.result) V.toolState(call, ctx);
    }
    if (model.turn && model.turn.node) V.update(model.turn, ctx);
    C.setState($('s-status'), session);
    fact('s-started', C.fmtTime(session.started_at || session.created_at));
    fact('s-duration', headerDuration(session, info));
    fact('s-events', C.fmtInt(session.event_count));
    fact('s-turns', C.fmtInt(typeof session.turns === 'number' && session.turns ? session.turns : info.results));
    const tok = $('s-tokens');
    tok.textContent = C.fmtInt(C.totalTokens(session.usage));
    tok.title = C.tokensTitle(session.usage);
    // A terminal run's cost is the CLI's own record, written when it exits.
    const costLater = session.source === 'terminal' && session.status === 'running' && !session.total_cost_usd;
    $('s-cost').textContent = costLater ? '…' : C.fmtCost(session.total_cost_usd);
    $('s-cost').title = costLater ? 'known when the terminal run ends' : '';
    const conv = M.str(session.external_conversation_id);
    // Resume only a conversation the model answered: a run that failed
    // before reaching it ("Not logged in") left nothing to continue.
    $('resume').hidden = !conv || !info.answered;
    $('s-conv').textContent = conv;
    $('resume-cmd').textContent = conv ? resumeCommand(conv, M.str(session.project) || info.cwd) : '';
  }

  // headerDuration is the session's duration as its turns tell it too: a
  // session, ended or running, never reads shorter than the sum of its
  // turns (the CLI's duration_ms may exceed the span of the events that
  // frame it, as when a resumed run started a moment ago).
  function headerDuration(session, info) {
    const start = Date.parse(session.started_at || session.created_at);
    const end = session.status === 'running' ? Date.now() : Date.parse(session.ended_at || '');
    if (isNaN(start) || isNaN(end) || info.turnMs <= end - start) {
      return C.sessionDuration(session);
    }
    return C.fmtDuration(info.turnMs);
  }

  // resumeCommand is the follow-up run: --session keeps it in this session
  // (without it the run would start a new one), --cwd runs it where the
  // conversation lives (the CLI finds a conversation by its directory),
  // --resume continues it, and the prompt is a placeholder to replace, as
  // in the `resume:` line `claude-relay run` prints.
  function resumeCommand(conv, cwd) {
    return 'claude-relay run --session ' + shellQuote(sessionID) + (cwd ? ' --cwd ' + shellQuote(cwd) : '') +
      ' --resume ' + shellQuote(conv) + " 'next prompt'";
  }

  $('copy-resume').addEventListener('click', async (e) => {
    const btn = e.currentTarget;
    const ok = await C.copyText($('resume-cmd').textContent);
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
    location.href = '/login?next=' + encodeURIComponent(location.pathname + location.hash);
  }

  // ---- loading ----

  function fetchPage(after) {
    return fetch(api + '/events?limit=' + PAGE + '&after=' + after, { credentials: 'same-origin' });
  }

  async function loadHistory() {
    let next = fetchPage(0);
    for (;;) {
      const res = await next;
      if (res.status === 401) return toLogin();
      if (!res.ok) throw new Error('loading events: HTTP ' + res.status + ' from ' + api + '/events');
      const page = await res.json();
      const evs = Array.isArray(page.events) ? page.events : [];
      // The next page is on its way while this one is folded in.
      const full = evs.length >= PAGE && typeof page.next === 'number';
      if (full) next = fetchPage(page.next);
      for (const ev of evs) model.ingest(ev);
      loading.textContent = 'Loading events… ' + model.lastCursor.toLocaleString();
      if (!full) break;
    }
    historyDone = true;
    loading.hidden = true;
    showSummary();
    if (goToTarget(hashTarget())) {
      // A permalink: the window around its event.
      ready();
      return;
    }
    if (list().length === 0) { bars(); ready(); return; }
    openTail(ready);
  }

  function stream() {
    const es = new EventSource(api + '/stream?after=' + model.lastCursor);
    es.addEventListener('open', () => { C.setConn('live', 'live'); document.body.dataset.live = '1'; });
    es.addEventListener('event', (e) => {
      let ev;
      try { ev = JSON.parse(e.data); } catch (_) { return; }
      model.ingest(ev);
      schedule();
      refreshSummary();
      if (wantApproval && model.approvals.has(wantApproval)) goToApproval(wantApproval);
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
