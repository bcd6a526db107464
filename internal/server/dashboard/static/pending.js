'use strict';
// Pending approvals on every page: the header badge, the tab title count and
// browser notifications. It also serves the approvals page (window.CRPending)
// so that page does not poll the same list a second time.
//
// What it asks the server, and how often:
//   - GET /api/approvals?state=pending when the session list feed
//     (/api/stream) says anything changed, throttled to one request a second,
//     and every 30 s as a safety net (a lost SSE frame, a sleeping laptop);
//   - one /api/stream per browser, not per tab: the tab holding a Web Lock
//     opens it and tells the others through a BroadcastChannel. HTTP/1.1
//     allows six connections per host, and every session page already holds
//     one stream of its own. A page that has its own /api/stream (the
//     session list) hands it over with CRPending.useFeed, and none more is
//     opened in that tab.
// An old backend (404, 405, 501) or an expired login (401) gets no badge and
// no error: the rest of the page works as before.
//
// Everything from an approval goes into the page with textContent.

(function () {
  const POLL_MS = 30000; // safety-net poll
  const MIN_GAP_MS = 1000; // at most one request a second
  const SEEN_KEY = 'claude-relay.notified-approvals';
  const SEEN_MAX = 500;
  const LOCK = 'claude-relay.approvals-stream';
  const CHANNEL = 'claude-relay.approvals';
  const BODY_MAX = 120;

  const listeners = [];
  let state = null; // last result: {ok, approvals} or {ok:false, status, error}
  let count = 0;
  let stopped = false; // the server has no approvals API
  let inflight = false;
  let again = false;
  let timer = 0;
  let lastStart = -Infinity;
  let leader = false;
  let baseline = null; // ids pending when the page loaded: not news
  let channel = null;
  let stream = null; // this tab's EventSource, when it leads
  let pageFeed = null; // the page's own /api/stream, from useFeed
  let badge = null;
  let enableBtn = null;

  const { el, apiError } = window.CR; // common.js, loaded first on every page

  // ---- polling -------------------------------------------------------------

  // refresh asks for the list soon: at once when the last request started
  // more than a second ago, else when that second is over. Calls in between
  // coalesce into one request.
  function refresh() {
    if (stopped || timer) return;
    if (inflight) { again = true; return; }
    const wait = Math.max(0, lastStart + MIN_GAP_MS - performance.now());
    timer = setTimeout(() => { timer = 0; poll(); }, wait);
  }

  async function poll() {
    if (stopped) return;
    inflight = true;
    lastStart = performance.now();
    let next;
    try {
      const res = await fetch('/api/approvals?state=pending', {
        credentials: 'same-origin', headers: { Accept: 'application/json' },
      });
      if (res.ok) {
        const body = await res.json();
        const list = body && Array.isArray(body.approvals) ? body.approvals.filter(valid) : [];
        next = { ok: true, approvals: list };
      } else {
        next = { ok: false, status: res.status, error: await apiError(res) };
        // No approvals API on this server: nothing to show, nothing to ask.
        if (res.status === 404 || res.status === 405 || res.status === 501) {
          stopped = true;
          if (stream) stream.close(); // the page's feed is not ours to close
        }
      }
    } catch (e) {
      next = { ok: false, status: 0, error: String(e && e.message || e) };
    }
    inflight = false;
    apply(next);
    if (again) { again = false; refresh(); }
  }

  function valid(a) { return a && typeof a.approval_id === 'string' && a.approval_id !== ''; }

  function apply(next) {
    state = next;
    if (next.ok) {
      // One decided already (here or elsewhere) waits for its run, not for
      // a person: it is not counted.
      count = next.approvals.filter((a) => !a.remote_decision).length;
      showBadge(true);
      notifyNew(next.approvals);
    } else if (next.status !== 0) {
      // 401 or no API: say nothing. A network error keeps the last count.
      count = 0;
      showBadge(false);
    }
    setTitle();
    document.body.dataset.pendingApprovals = next.ok ? String(count) : '';
    for (const fn of listeners) {
      try { fn(next); } catch (e) { setTimeout(() => { throw e; }); }
    }
  }

  // ---- the session list feed, one per browser ------------------------------

  function startFeed() {
    if (navigator.locks && typeof BroadcastChannel === 'function') {
      channel = new BroadcastChannel(CHANNEL);
      channel.onmessage = (e) => { if (e.data === 'changed') refresh(); };
      // Held until the tab goes away; then the next waiting tab opens the
      // stream.
      navigator.locks.request(LOCK, () => new Promise(() => {
        leader = true;
        openStream(0);
      })).catch(() => { /* lock refused: the broadcasts still arrive */ });
    } else {
      leader = true;
      openStream(0);
    }
  }

  // changed is news from a feed: fetch the list, and tell the other tabs
  // when this one holds the feed for the browser (they open none).
  function changed() {
    refresh();
    if (leader && channel) channel.postMessage('changed');
  }

  // openStream opens this tab's own feed, unless the page gave it one.
  function openStream(failures) {
    if (stopped || pageFeed) return;
    const es = new EventSource('/api/stream');
    stream = es;
    let opened = false;
    es.addEventListener('open', () => { opened = true; failures = 0; });
    es.addEventListener('session', changed);
    es.addEventListener('snapshot', changed);
    es.addEventListener('error', () => {
      // EventSource retries by itself after network errors; after an HTTP
      // error (401, 404) it gives up, and so do we for a while.
      if (es.readyState !== EventSource.CLOSED || stream !== es) return;
      const n = opened ? 0 : failures + 1;
      setTimeout(() => openStream(n), Math.min(POLL_MS, 2000 * 2 ** Math.min(n, 4)));
    });
  }

  // ---- badge, title, notifications ----------------------------------------

  function ensureStyles() {
    if (document.querySelector('link[href="/static/approvals.css"]')) return;
    const l = document.createElement('link');
    l.rel = 'stylesheet';
    l.href = '/static/approvals.css';
    document.head.appendChild(l);
  }

  // showBadge keeps "Approvals N" in the header: the page's own link to
  // /approvals when its header has one (the nav), else a link of ours.
  function showBadge(on) {
    const header = document.querySelector('header.top');
    if (!header) return;
    if (!badge) {
      if (!on) return;
      ensureStyles();
      const conn = header.querySelector('.conn');
      badge = header.querySelector('a[href="/approvals"]');
      if (badge) {
        badge.classList.add('in-nav');
      } else {
        badge = el('a', null, 'Approvals');
        badge.href = '/approvals';
        header.insertBefore(badge, conn);
      }
      badge.classList.add('approvals-badge');
      badge.id = 'approvals-badge';
      badge.append(document.createTextNode(' '), el('span', 'n', '0'));
      enableBtn = el('button', 'notify-enable', 'Enable notifications');
      enableBtn.type = 'button';
      enableBtn.id = 'notify-enable';
      enableBtn.title = 'Show a browser notification when Claude waits for an approval';
      enableBtn.hidden = true;
      enableBtn.addEventListener('click', askPermission);
      header.insertBefore(enableBtn, conn);
    }
    const n = badge.querySelector('.n');
    n.textContent = String(count);
    n.hidden = !on;
    badge.classList.toggle('has-pending', on && count > 0);
    badge.title = !on ? '' : count === 1 ? '1 approval is waiting for you' : count + ' approvals are waiting for you';
    if (!badge.classList.contains('in-nav')) badge.hidden = !on;
    enableBtn.hidden = !on || !canNotify() || Notification.permission !== 'default';
  }

  function canNotify() { return typeof window.Notification === 'function'; }

  // The browser asks only after a click: prompting on load is refused (and
  // rude).
  function askPermission() {
    if (!canNotify()) return;
    Promise.resolve(Notification.requestPermission())
      .catch(() => {})
      .then(() => showBadge(!!(state && state.ok)));
  }

  const prefix = /^\(\d+\) /;
  function setTitle() {
    const base = document.title.replace(prefix, '');
    const want = count > 0 ? '(' + count + ') ' + base : base;
    if (document.title !== want) document.title = want;
  }

  // A page that sets its own title (the session page does) loses the count;
  // put it back. setTitle writes only when the title differs, so this stops.
  function watchTitle() {
    const t = document.querySelector('title');
    if (!t || typeof MutationObserver !== 'function') return;
    new MutationObserver(setTitle).observe(t, { childList: true, characterData: true, subtree: true });
  }

  function loadSeen() {
    try {
      const v = JSON.parse(localStorage.getItem(SEEN_KEY) || 'null');
      return Array.isArray(v) ? v.filter((x) => typeof x === 'string') : null;
    } catch (_) { return null; }
  }

  function saveSeen(list) {
    try { localStorage.setItem(SEEN_KEY, JSON.stringify(list.slice(-SEEN_MAX))); } catch (_) { /* private mode */ }
  }

  // notifyNew raises one notification per approval that appeared while this
  // page was open: what was already waiting when it loaded is on the badge,
  // not news. Only the tab that owns the feed notifies, and the ids told
  // about are kept in localStorage, so several tabs, reloads and a new
  // leader tell about each approval once.
  function notifyNew(list) {
    if (!baseline) {
      baseline = new Set(list.map((a) => a.approval_id));
      return;
    }
    if (!leader) return;
    const seen = loadSeen() || [];
    const known = new Set(seen);
    const fresh = list.filter((a) => !known.has(a.approval_id) && !baseline.has(a.approval_id));
    if (fresh.length === 0) return;
    saveSeen(seen.concat(fresh.map((a) => a.approval_id)));
    if (!canNotify() || Notification.permission !== 'granted') return;
    // Oldest first. The server lists newest first, and sort is stable, so
    // reversing first keeps requests in the same millisecond in order.
    fresh.reverse().sort((x, y) => (Date.parse(x.requested_at) || 0) - (Date.parse(y.requested_at) || 0));
    if (fresh.length > 3) {
      show(fresh.length + ' approvals are waiting for you', fresh.map(shortTitle).slice(0, 3).join('\n'), '', 'claude-relay-approvals');
      return;
    }
    for (const a of fresh) show(titleOf(a), shortTitle(a), a.approval_id, a.approval_id);
  }

  function titleOf(a) {
    const tool = String(a.tool_name || 'a tool');
    if (a.kind === 'question') return 'Claude has a question for you';
    if (a.kind === 'plan') return 'Claude wants to leave plan mode';
    return 'Claude wants to run ' + tool;
  }

  // shortTitle is the approval's own title cut to one short line: a
  // notification may show on a lock screen, so never the full input.
  function shortTitle(a) {
    const t = String(a.title || a.tool_name || '').replace(/\s+/g, ' ').trim();
    const runes = Array.from(t);
    return runes.length > BODY_MAX ? runes.slice(0, BODY_MAX - 1).join('') + '…' : t;
  }

  function show(title, body, id, tag) {
    let n;
    try {
      n = new Notification(title, { body, tag });
    } catch (_) {
      return; // some browsers allow notifications only from a service worker
    }
    n.onclick = () => {
      window.focus();
      location.href = '/approvals' + (id ? '#' + encodeURIComponent(id) : '');
      if (typeof n.close === 'function') n.close();
    };
  }

  // ---- start ----------------------------------------------------------------

  window.CRPending = {
    // onUpdate calls fn with every list fetched ({ok: true, approvals}) or
    // failure ({ok: false, status, error}); at once with the last one.
    onUpdate(fn) {
      listeners.push(fn);
      if (state) fn(state);
    },
    refresh,
    // useFeed makes this tab listen to the page's own /api/stream (es)
    // instead of opening a second, identical one. The page owns es and its
    // reconnects: it calls useFeed again with each new EventSource. This
    // tab still takes part in the lock: holding it, it passes the page's
    // news to the other tabs and raises the notifications, as with a feed
    // of its own.
    useFeed(es) {
      if (!es || es === pageFeed) return;
      pageFeed = es;
      if (stream) { stream.close(); stream = null; }
      es.addEventListener('session', () => { if (pageFeed === es) changed(); });
      es.addEventListener('snapshot', () => { if (pageFeed === es) changed(); });
    },
    get leader() { return leader; },
  };

  watchTitle();
  startFeed();
  poll();
  setInterval(refresh, POLL_MS);
})();
