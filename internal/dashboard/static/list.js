// Session list: fed entirely by the /api/stream SSE feed, which sends every
// session on connect and again whenever one changes.
'use strict';

(function () {
  const { el, fmtTime, sessionDuration, fmtInt, totalTokens, tokensTitle, fmtCost, setStatus, setConn } = window.CR;
  const sessions = new Map();
  const tbody = document.querySelector('#sessions tbody');
  const empty = document.getElementById('empty');
  let scheduled = false;
  let snapshotSeen = false;

  function schedule() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(render);
  }

  function row(s) {
    const tr = el('tr');
    tr.dataset.id = s.id;
    const st = el('td');
    st.appendChild(setStatusSpan(s.status));
    tr.appendChild(st);
    const sid = el('td', 'sid');
    const a = el('a', null, s.id);
    a.href = '/sessions/' + encodeURIComponent(s.id);
    sid.appendChild(a);
    tr.appendChild(sid);
    const conv = el('td', 'conv');
    conv.appendChild(el('code', null, s.external_conversation_id || '–'));
    tr.appendChild(conv);
    tr.appendChild(el('td', null, fmtTime(s.started_at || s.created_at)));
    tr.appendChild(el('td', 'num', sessionDuration(s)));
    tr.appendChild(el('td', 'num', fmtInt(s.event_count)));
    const tok = el('td', 'num', fmtInt(totalTokens(s.usage)));
    tok.title = tokensTitle(s.usage);
    tr.appendChild(tok);
    tr.appendChild(el('td', 'num', fmtCost(s.total_cost_usd)));
    return tr;
  }

  function setStatusSpan(status) {
    const span = el('span');
    setStatus(span, status);
    return span;
  }

  function render() {
    scheduled = false;
    const list = Array.from(sessions.values());
    list.sort((a, b) => (Date.parse(b.updated_at) || 0) - (Date.parse(a.updated_at) || 0));
    const frag = document.createDocumentFragment();
    for (const s of list) frag.appendChild(row(s));
    tbody.replaceChildren(frag);
    empty.hidden = !snapshotSeen || list.length > 0;
  }

  function connect() {
    const es = new EventSource('/api/stream');
    es.addEventListener('open', () => setConn('live', 'live'));
    es.addEventListener('error', () => {
      setConn('down', 'reconnecting…');
      if (es.readyState === EventSource.CLOSED) {
        // EventSource gives up on HTTP errors: a 401 means the login
        // expired (token rotated); anything else, try again later.
        window.CR.checkAuth().then((ok) => { if (ok) setTimeout(connect, 5000); });
      }
    });
    es.addEventListener('session', (e) => {
      let s;
      try { s = JSON.parse(e.data); } catch (_) { return; }
      if (s && typeof s.id === 'string') {
        sessions.set(s.id, s);
        schedule();
      }
    });
    es.addEventListener('snapshot', () => { snapshotSeen = true; schedule(); });
  }

  // Running sessions' durations tick.
  setInterval(() => {
    for (const s of sessions.values()) {
      if (s.status === 'running') { schedule(); return; }
    }
  }, 1000);

  connect();
})();
