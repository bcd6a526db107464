// Session list: pages from GET /api/sessions (search and filters run on the
// server; "Load more" follows its keyset cursor), kept live by the
// /api/stream SSE feed, which sends every session that changes. The filters
// live in the URL query (?q=&status=&project=&from=&to=), so a link or the
// Back button brings the same view back.
'use strict';

(function () {
  const { el, sessionDuration, tokensTitle, setState, isStale, stateOf, setConn, checkAuth } = window.CR;
  const F = window.CRFmt;
  const PAGE = 50;
  // "stale": running, but no event for 35 minutes (the server's filter).
  const STATUSES = ['running', 'stale', 'completed', 'interrupted', 'failed', 'cancelled', 'unknown'];
  const SOURCES = window.CR.SOURCES;
  const DEBOUNCE_MS = 250;
  const REFRESH_MS = 300;

  const $ = (id) => document.getElementById(id);
  const tbody = document.querySelector('#sessions tbody');
  const ctl = { q: $('q'), status: $('status'), project: $('project'), from: $('from'), to: $('to') };
  const ui = {
    loading: $('loading'), empty: $('empty'), noMatch: $('no-match'), noMatchWhat: $('no-match-what'),
    more: $('load-more'), count: $('count'), clear: $('clear'), error: $('api-error'),
  };

  let filters = readURL();
  const sessions = new Map(); // id → session, as last heard of
  const rows = new Map(); // id → {s, tr, dur, time}: a session's row and the cells that tick
  const projects = new Set();
  let projectsShown = '';
  let next = ''; // cursor of the next page; '' when everything is loaded
  let pages = 0;
  let loaded = false; // the first page for the current filters has arrived
  let gen = 0; // bumped when the filters change: older answers are dropped
  let inflight = new Set(); // AbortControllers of this generation's requests
  let scheduled = false;
  let refreshTimer = 0;
  // Sessions the server said do not match the search, with the status they
  // had then: their live frames are ignored until the status changes, so a
  // busy session elsewhere does not make the page refetch all the time.
  let ignored = new Map();
  let checking = new Map();
  let early = new Map(); // live frames that came while a first page loaded
  let retry = false; // the first page failed for want of a server: load it on reconnect

  // ---- the URL is the state -------------------------------------------------

  function readURL() {
    const p = new URLSearchParams(location.search);
    const f = { q: (p.get('q') || '').trim(), status: p.get('status') || '', project: p.get('project') || '', from: p.get('from') || '', to: p.get('to') || '' };
    if (!STATUSES.includes(f.status)) f.status = '';
    if (!F.isDate(f.from)) f.from = '';
    if (!F.isDate(f.to)) f.to = '';
    return f;
  }

  function queryOf(f) {
    const p = new URLSearchParams();
    for (const k of ['q', 'status', 'project', 'from', 'to']) if (f[k]) p.set(k, f[k]);
    return p.toString();
  }

  function active(f) { return !!(f.q || f.status || f.project || f.from || f.to); }

  function setControls() {
    ctl.q.value = filters.q;
    ctl.status.value = filters.status;
    noteProject(filters.project); // a link may name a project not seen yet
    ctl.project.value = filters.project;
    ctl.from.value = filters.from;
    ctl.to.value = filters.to;
    ctl.to.min = filters.from;
    ctl.from.max = filters.to;
    ui.clear.hidden = !active(filters);
  }

  function readControls() {
    return {
      q: ctl.q.value.trim(), status: ctl.status.value, project: ctl.project.value,
      from: F.isDate(ctl.from.value) ? ctl.from.value : '', to: F.isDate(ctl.to.value) ? ctl.to.value : '',
    };
  }

  // apply makes the controls' values the view: a history entry, then the
  // first page for them. Typing that refines the same search ("fla", then
  // "flaky") replaces its entry, so Back goes to the search before, not
  // to every pause in the typing.
  let typedEntry = null; // the q of the current entry, when typing made it
  function apply(f, typed) {
    if (queryOf(f) === queryOf(filters)) return;
    const others = (x) => queryOf(Object.assign({}, x, { q: '' }));
    const refine = typed && typedEntry !== null && others(f) === others(filters) &&
      (f.q.startsWith(typedEntry) || typedEntry.startsWith(f.q));
    filters = f;
    const qs = queryOf(f);
    const url = qs ? '?' + qs : location.pathname;
    if (refine) history.replaceState(null, '', url);
    else history.pushState(null, '', url);
    typedEntry = typed ? f.q : null;
    setControls();
    load('reset');
  }

  // ---- loading pages --------------------------------------------------------

  // The date inputs are the user's local days; the API takes instants.
  function localDay(ymd, plusDays) {
    const [y, m, d] = ymd.split('-').map(Number);
    return new Date(y, m - 1, d + plusDays).toISOString();
  }

  function apiQuery(after) {
    const p = new URLSearchParams();
    if (filters.q) p.set('q', filters.q);
    if (filters.status) p.set('status', filters.status);
    if (filters.project) p.set('project', filters.project);
    if (filters.from) p.set('from', localDay(filters.from, 0));
    if (filters.to) p.set('to', localDay(filters.to, 1)); // through the end of that day
    p.set('limit', String(PAGE));
    if (after) p.set('after', after);
    return p.toString();
  }

  // load fetches a page: 'reset' (new filters: first page, replaces all),
  // 'more' (the page after the last one), 'refresh' (the first page again,
  // after live news: replaces what is shown while only one page is).
  async function load(mode) {
    if (mode === 'reset') {
      gen++;
      for (const c of inflight) c.abort();
      inflight = new Set();
      ignored = new Map();
      checking = new Map();
      early = new Map();
      loaded = false;
      document.body.dataset.state = 'loading';
      schedule();
    }
    const my = gen;
    const ac = new AbortController();
    inflight.add(ac);
    const check = mode === 'refresh' ? checking : null;
    if (check) checking = new Map();
    let body;
    try {
      const res = await fetch('/api/sessions?' + apiQuery(mode === 'more' ? next : ''), {
        credentials: 'same-origin', headers: { Accept: 'application/json' }, signal: ac.signal,
      });
      if (res.status === 401) { checkAuth(); return; }
      if (my !== gen) return;
      const timing = /(?:^|,)\s*db;dur=([\d.]+)/.exec(res.headers.get('Server-Timing') || '');
      if (timing) document.body.dataset.serverMs = timing[1];
      if (!res.ok) {
        showError('Listing sessions failed: ' + await F.apiError(res) + '.');
        return;
      }
      body = await res.json();
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      if (my === gen) {
        showError('Listing sessions failed: the server did not answer (' + (e && e.message || e) + '). The page tries again when the live feed reconnects.');
        if (!loaded) retry = true;
      }
      return;
    } finally {
      inflight.delete(ac);
      if (mode === 'more') ui.more.disabled = false;
    }
    if (my !== gen) return;
    showError('');
    retry = false;
    const list = body && Array.isArray(body.sessions) ? body.sessions.filter((s) => s && typeof s.id === 'string') : [];
    if (mode === 'reset' || (mode === 'refresh' && pages <= 1)) {
      sessions.clear();
      pages = 0;
    }
    for (const s of list) {
      sessions.set(s.id, s);
      noteProject(s.project);
    }
    if (mode !== 'refresh' || pages === 0) {
      next = typeof body.next === 'string' ? body.next : '';
      pages++;
    }
    if (check) {
      for (const [id, status] of check) if (!sessions.has(id)) ignored.set(id, status);
    }
    loaded = true;
    const frames = early;
    early = new Map();
    for (const f of frames.values()) {
      const have = sessions.get(f.id);
      if (!have || timeKey(f) > timeKey(have)) onSession(f);
    }
    schedule();
  }

  function scheduleRefresh() {
    if (refreshTimer) return;
    refreshTimer = setTimeout(() => { refreshTimer = 0; load('refresh'); }, REFRESH_MS);
  }

  function showError(msg) {
    ui.error.textContent = msg;
    ui.error.hidden = !msg;
  }

  // ---- live updates ---------------------------------------------------------

  // matchesLocally checks the filters a page can check itself; only the
  // server knows what a search matches.
  function matchesLocally(s) {
    if (filters.status && stateOf(s) !== filters.status) return false;
    if (filters.project && s.project !== filters.project) return false;
    const created = Date.parse(s.created_at || '');
    if (filters.from && !(created >= Date.parse(localDay(filters.from, 0)))) return false;
    if (filters.to && !(created < Date.parse(localDay(filters.to, 1)))) return false;
    return true;
  }

  function onSession(s) {
    noteProject(s.project);
    if (!loaded) {
      // The page is on its way; it may be older than this frame.
      early.set(s.id, s);
      return;
    }
    if (sessions.has(s.id)) {
      if (matchesLocally(s)) sessions.set(s.id, s);
      else sessions.delete(s.id); // e.g. no longer running under "status: running"
      schedule();
      return;
    }
    if (!matchesLocally(s)) return;
    // Beyond the loaded pages: "Load more" brings it in order.
    const last = oldest();
    if (next && last && cmp(s, last) > 0) return;
    if (!filters.q) {
      sessions.set(s.id, s);
      schedule();
      return;
    }
    if (ignored.get(s.id) === s.status) return;
    ignored.delete(s.id);
    checking.set(s.id, s.status);
    scheduleRefresh();
  }

  let snapshots = 0;
  function connect() {
    const es = new EventSource('/api/stream');
    // pending.js (the approvals badge) listens to this feed too rather
    // than opening a second one.
    if (window.CRPending) window.CRPending.useFeed(es);
    es.addEventListener('open', () => { setConn('live', 'live'); document.body.dataset.live = '1'; });
    es.addEventListener('error', () => {
      setConn('down', 'reconnecting…');
      document.body.dataset.live = '0';
      if (es.readyState === EventSource.CLOSED) {
        // EventSource gives up on HTTP errors: a 401 means the login
        // expired (token rotated); anything else, try again later.
        checkAuth().then((ok) => { if (ok) setTimeout(connect, 5000); });
      }
    });
    es.addEventListener('session', (e) => {
      let s;
      try { s = JSON.parse(e.data); } catch (_) { return; }
      if (s && typeof s.id === 'string') onSession(s);
    });
    // After a reconnect the page may have missed news: read the first
    // page again (the feed resends only the newest sessions).
    es.addEventListener('snapshot', () => {
      if (retry) load('reset');
      else if (loaded && snapshots > 0) scheduleRefresh();
      snapshots++;
    });
  }

  // ---- rendering ------------------------------------------------------------

  // Newest first, as the server orders: updated_at, then ID, descending.
  // The times have nanoseconds, and two sessions can change within one
  // millisecond: Date.parse alone would tie them and disagree with the
  // server's order.
  function cmp(a, b) {
    const ka = timeKey(a), kb = timeKey(b);
    if (ka !== kb) return ka < kb ? 1 : -1;
    return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
  }

  const keys = new WeakMap();
  // timeKey is updated_at as a fixed-width string that sorts like the time:
  // whole seconds, then nine digits of fraction.
  function timeKey(s) {
    let k = keys.get(s);
    if (k === undefined) {
      const m = /^([^.]*?)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(s.updated_at || '');
      const secs = m ? Math.floor(Date.parse(m[1] + m[3]) / 1000) : NaN;
      k = isNaN(secs) ? '' : String(secs).padStart(12, '0') + (m[2] || '').padEnd(9, '0').slice(0, 9);
      keys.set(s, k);
    }
    return k;
  }

  function oldest() {
    let o = null;
    for (const s of sessions.values()) if (!o || cmp(s, o) > 0) o = s;
    return o;
  }

  function schedule() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(render);
  }

  function buildRow(s) {
    const tr = el('tr');
    tr.dataset.id = s.id;
    const href = '/sessions/' + encodeURIComponent(s.id);

    const title = el('td', 'title');
    const a = el('a', 'title-link' + (s.title ? '' : ' untitled'), s.title || s.id);
    a.href = href;
    a.title = s.title || s.id;
    title.appendChild(a);
    const ids = el('div', 'ids');
    if (s.title) ids.appendChild(el('code', 'sid', s.id));
    if (s.external_conversation_id) {
      if (s.title) ids.appendChild(document.createTextNode(' · '));
      const c = el('code', 'conv', s.external_conversation_id);
      c.title = 'Conversation ID (claude --resume)';
      ids.appendChild(c);
    }
    title.appendChild(ids);
    tr.appendChild(title);

    const proj = el('td', 'project', s.project ? F.basename(s.project) : '–');
    if (s.project) proj.title = s.project;
    tr.appendChild(proj);

    const src = el('td', 'source');
    if (s.source) src.appendChild(el('span', 'src src-' + (SOURCES[s.source] ? s.source : 'other'), SOURCES[s.source] || s.source));
    else src.textContent = '–';
    if (s.billed_to) {
      const billed = el('div', 'billed');
      billed.appendChild(document.createTextNode('billed to: '));
      const what = billed.appendChild(el('span', 'billed-to'));
      window.CR.fillBilled(what, s.billed_to);
      billed.title = 'where the latest run\'s credentials came from';
      src.appendChild(billed);
    }
    tr.appendChild(src);

    const st = el('td');
    const badge = el('span');
    setState(badge, s);
    st.appendChild(badge);
    tr.appendChild(st);

    const startedAt = s.started_at || s.created_at;
    const started = el('td', 'started');
    const time = el('time', null, F.relTime(startedAt));
    time.dateTime = startedAt || '';
    time.title = F.absTime(startedAt);
    started.appendChild(time);
    tr.appendChild(started);

    const dur = el('td', 'num', sessionDuration(s));
    tr.appendChild(dur);
    tr.appendChild(el('td', 'num', F.tokens(s.turns)));
    const tok = el('td', 'num', F.tokens(F.totalTokens(s.usage)));
    tok.title = tokensTitle(s.usage);
    tr.appendChild(tok);
    // A terminal run's cost is the CLI's own record, written when it exits.
    const costLater = s.source === 'terminal' && s.status === 'running' && !s.total_cost_usd;
    const cost = tr.appendChild(el('td', 'num cost', costLater ? '…' : F.usd(s.total_cost_usd)));
    if (costLater) cost.title = 'known when the terminal run ends';
    tr.appendChild(el('td', 'model', s.model || '–'));
    return { s, tr, dur, time, stale: isStale(s) };
  }

  function render() {
    scheduled = false;
    const list = Array.from(sessions.values()).sort(cmp);
    const trs = [];
    for (const s of list) {
      let r = rows.get(s.id);
      if (!r || r.s !== s) {
        r = buildRow(s);
        rows.set(s.id, r);
      }
      trs.push(r.tr);
    }
    for (const id of rows.keys()) if (!sessions.has(id)) rows.delete(id);
    // Touch only what changed: with thousands of rows loaded, a live
    // update moves or replaces one row, and "Load more" appends.
    let node = tbody.firstChild;
    for (const tr of trs) {
      if (node === tr) node = node.nextSibling;
      else tbody.insertBefore(tr, node);
    }
    while (node) {
      const after = node.nextSibling;
      node.remove();
      node = after;
    }
    renderState(list.length);
    renderProjects();
    // Tests and tools wait for this: the rows on screen are the answer.
    if (loaded) document.body.dataset.state = 'ready';
  }

  function renderState(n) {
    const any = active(filters);
    ui.loading.hidden = loaded;
    ui.empty.hidden = !loaded || n > 0 || any;
    ui.noMatch.hidden = !loaded || n > 0 || !any;
    if (!ui.noMatch.hidden) ui.noMatchWhat.textContent = describe(filters);
    ui.more.hidden = !loaded || !next;
    ui.count.textContent = !loaded || n === 0 ? '' : n === 1 ? '1 session' : F.tokens(n) + ' sessions' + (next ? ' shown' : '');
    const ms = document.body.dataset.serverMs;
    ui.count.title = ms ? 'the server answered the last page in ' + ms + ' ms' : '';
  }

  function describe(f) {
    const parts = [];
    if (f.q) parts.push('"' + f.q + '"');
    if (f.status) parts.push(f.status === 'stale' ? 'no news for ' + window.CR.STALE_MS / 60000 + ' minutes' : 'status ' + f.status);
    if (f.project) parts.push('project ' + F.basename(f.project));
    if (f.from && f.to) parts.push('started ' + f.from + ' to ' + f.to);
    else if (f.from) parts.push('started from ' + f.from);
    else if (f.to) parts.push('started until ' + f.to);
    return parts.join(', ');
  }

  // ---- the project filter ---------------------------------------------------

  function noteProject(p) {
    if (typeof p === 'string' && p && !projects.has(p)) {
      projects.add(p);
      schedule();
    }
  }

  // renderProjects lists every project seen (pages, the live feed, and the
  // last 90 days of usage), by name; a name two projects share shows the
  // full path.
  function renderProjects() {
    const key = Array.from(projects).sort().join('\n');
    if (key === projectsShown) return;
    projectsShown = key;
    ctl.project.replaceChildren(...F.projectOptions(projects));
    ctl.project.value = filters.project;
  }

  async function loadProjects() {
    const from = F.addDays(F.utcDate(new Date()), -90);
    try {
      const res = await fetch('/api/usage?from=' + from, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
      if (!res.ok) return; // the list works without it
      const body = await res.json();
      for (const r of (body && Array.isArray(body.rows) ? body.rows : [])) noteProject(r && r.project);
    } catch (_) { /* the list works without it */ }
  }

  // ---- controls -------------------------------------------------------------

  let typing = 0;
  ctl.q.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => apply(readControls(), true), DEBOUNCE_MS);
  });
  ctl.q.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') ctl.q.blur();
  });
  $('filters').addEventListener('submit', (e) => {
    e.preventDefault();
    clearTimeout(typing);
    apply(readControls());
  });
  for (const c of [ctl.status, ctl.project, ctl.from, ctl.to]) {
    c.addEventListener('change', () => { clearTimeout(typing); apply(readControls()); });
  }
  function clearAll() {
    clearTimeout(typing);
    apply({ q: '', status: '', project: '', from: '', to: '' });
  }
  ui.clear.addEventListener('click', clearAll);
  $('clear-empty').addEventListener('click', clearAll);
  ui.more.addEventListener('click', () => {
    if (!next) return;
    ui.more.disabled = true;
    load('more');
  });
  window.addEventListener('popstate', () => {
    clearTimeout(typing);
    typedEntry = null;
    filters = readURL();
    setControls();
    load('reset');
  });

  // "/" focuses the search box, unless the user is typing somewhere.
  document.addEventListener('keydown', (e) => {
    if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
    const t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    e.preventDefault();
    ctl.q.focus();
    ctl.q.select();
  });

  // A click anywhere on a row opens the session (the title is the link for
  // keyboards and new tabs); selecting text in a row does not.
  tbody.addEventListener('click', (e) => {
    if (e.target.closest('a, button') || String(window.getSelection() || '') !== '') return;
    const tr = e.target.closest('tr[data-id]');
    if (tr) location.href = '/sessions/' + encodeURIComponent(tr.dataset.id);
  });

  // Running sessions' durations tick; "started" times age; a running
  // session that has gone quiet for too long turns stale (under a status
  // filter it may then leave the list).
  let ticks = 0;
  setInterval(() => {
    ticks++;
    for (const [id, r] of rows) {
      if (r.s.status === 'running' && isStale(r.s) !== r.stale) {
        rows.delete(id); // rebuilt by render
        if (!matchesLocally(r.s)) sessions.delete(id);
        schedule();
        continue;
      }
      if (r.s.status === 'running') r.dur.textContent = sessionDuration(r.s);
      if (ticks % 30 === 0) r.time.textContent = F.relTime(r.time.dateTime);
    }
  }, 1000);

  setControls();
  load('reset');
  loadProjects();
  connect();
})();
