// Shared helpers of the dashboard pages. Everything that came from an event
// or a session is put into the page with textContent, never as HTML.
'use strict';

window.CR = (function () {
  // el makes an element with an optional class and text.
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function num(v) { return typeof v === 'number' && isFinite(v) ? v : 0; }

  function fmtTime(iso) {
    if (!iso) return '–';
    const d = new Date(iso);
    if (isNaN(d)) return '–';
    return d.toLocaleString();
  }

  function fmtClock(iso) {
    const d = new Date(iso);
    if (isNaN(d)) return '';
    return d.toLocaleTimeString();
  }

  function fmtDuration(ms) {
    if (!(ms >= 0)) return '–';
    const s = Math.round(ms / 1000);
    if (s < 60) return s + 's';
    const m = Math.floor(s / 60);
    if (m < 60) return m + 'm ' + (s % 60) + 's';
    return Math.floor(m / 60) + 'h ' + (m % 60) + 'm';
  }

  // sessionDuration is start to end, or to now while running (to its last
  // news when it has had none for long).
  function sessionDuration(s) {
    const start = Date.parse(s.started_at || s.created_at);
    if (isNaN(start)) return '–';
    let end = Date.parse(s.ended_at || '');
    if (isNaN(end)) end = s.status === 'running' && !isStale(s) ? Date.now() : Date.parse(s.updated_at);
    return fmtDuration(end - start);
  }

  // STALE_MS is the server's store.StaleAfter (35 minutes): a running
  // session with no event for that long is stale, shown as "no news since"
  // its last event. The server marks it (stale: true) when it answers; a
  // page left open marks it itself when the time comes.
  const STALE_MS = 35 * 60 * 1000;

  function isStale(s) {
    if (!s || s.status !== 'running') return false;
    if (s.stale === true) return true;
    const t = Date.parse(s.updated_at || '');
    return !isNaN(t) && Date.now() - t > STALE_MS;
  }

  // stateOf is what the list filters a session by: its status, or "stale".
  function stateOf(s) { return isStale(s) ? 'stale' : s.status; }

  // noNewsSince is "no news since 14:05" (with the date when not today).
  function noNewsSince(iso) {
    const d = new Date(iso || '');
    if (isNaN(d)) return 'no news';
    const today = new Date().toDateString() === d.toDateString();
    const opts = today ? { hour: '2-digit', minute: '2-digit' } : { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' };
    return 'no news since ' + d.toLocaleString(undefined, opts);
  }

  // setState shows a session's status, or "no news since …" for a stale one.
  function setState(node, s) {
    if (!isStale(s)) {
      setStatus(node, s && s.status);
      node.removeAttribute('title');
      return;
    }
    node.textContent = noNewsSince(s.updated_at);
    node.className = 'status stale';
    node.title = 'Running, but no event for over ' + STALE_MS / 60000 + ' minutes (last at ' + fmtTime(s.updated_at) + '): its helper probably died. ' +
      'The next start of claude-relay on that machine (or claude-relay spool flush) ends the run as failed.';
  }

  function fmtInt(n) { return num(n).toLocaleString(); }

  function totalTokens(u) {
    if (!u) return 0;
    return num(u.input_tokens) + num(u.output_tokens) + num(u.cache_read_input_tokens) + num(u.cache_creation_input_tokens);
  }

  function tokensTitle(u) {
    if (!u) return '';
    return 'input ' + fmtInt(u.input_tokens) + ', output ' + fmtInt(u.output_tokens) +
      ', cache read ' + fmtInt(u.cache_read_input_tokens) + ', cache write ' + fmtInt(u.cache_creation_input_tokens);
  }

  function fmtCost(c) { return '$' + num(c).toFixed(4); }

  // SOURCES name a session's source (store.Session.Source) for people.
  const SOURCES = { background: 'background', terminal: 'terminal', acp: 'ACP' };
  function fmtSource(s) { return SOURCES[s] || s; }

  // fillBilled writes where a session's runs are billed (the backend's
  // billed_to label: "API key ANTHROPIC_API_KEY", "subscription (Claude
  // Max)", …) into node, the source's name as code; an API key is marked,
  // since that is the bill people are warned about. Text only.
  function fillBilled(node, label) {
    node.textContent = '';
    node.classList.toggle('billed-key', /^API key /.test(label || ''));
    if (!label) { node.textContent = '–'; return; }
    const m = /^(API key|auth token) (\S+)$/.exec(label);
    if (!m) { node.textContent = label; return; }
    node.appendChild(document.createTextNode(m[1] + ' '));
    node.appendChild(el('code', null, m[2]));
  }

  function setStatus(node, status) {
    node.textContent = status || 'unknown';
    node.className = 'status ' + (status || 'unknown');
  }

  // copyText uses the async clipboard API and falls back to a hidden
  // textarea where it is unavailable (non-secure contexts).
  async function copyText(text) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (_) {
      const ta = el('textarea');
      ta.value = text;
      ta.setAttribute('readonly', '');
      ta.style.position = 'fixed';
      ta.style.opacity = '0';
      document.body.appendChild(ta);
      ta.select();
      let ok = false;
      try { ok = document.execCommand('copy'); } catch (_) { ok = false; }
      ta.remove();
      return ok;
    }
  }

  function setConn(state, text) {
    const c = document.getElementById('conn');
    if (!c) return;
    c.textContent = text;
    c.className = 'conn ' + state;
  }

  // checkAuth resolves false (and goes to the login page) when the cookie
  // no longer works, true otherwise.
  async function checkAuth() {
    try {
      const res = await fetch('/api/sessions?limit=1', { credentials: 'same-origin' });
      if (res.status === 401) {
        location.href = '/login?next=' + encodeURIComponent(location.pathname);
        return false;
      }
    } catch (_) { /* server unreachable: keep trying */ }
    return true;
  }

  // apiError reads {"error": "..."} from a failed answer, else its status.
  async function apiError(res) {
    try {
      const body = await res.json();
      if (body && typeof body.error === 'string') return body.error;
    } catch (_) { /* not JSON */ }
    return 'HTTP ' + res.status;
  }

  // policyNote says why an approval waits for the dashboard: the central
  // policy's rule that asked (approver "dashboard": no terminal or
  // extension may answer it), or null when no rule asked. The rule and
  // reason are the backend's config, still only ever text here.
  function policyNote(approver, rule, reason) {
    approver = typeof approver === 'string' ? approver : '';
    rule = typeof rule === 'string' ? rule : '';
    reason = typeof reason === 'string' ? reason : '';
    if (approver !== 'dashboard' && !rule) return null;
    const p = el('p', 'a-policy');
    p.appendChild(el('span', 'a-policy-badge', approver === 'dashboard' ? 'dashboard only' : 'policy'));
    p.appendChild(document.createTextNode(' ' + (approver === 'dashboard'
      ? 'Only the dashboard may decide: the team\'s central policy' : 'Asked by the team\'s central policy')));
    if (rule) {
      p.appendChild(document.createTextNode(' (rule '));
      p.appendChild(el('code', 'a-policy-rule', rule));
      p.appendChild(document.createTextNode((reason ? ': ' + reason : '') + ')'));
    } else if (reason) {
      p.appendChild(document.createTextNode(' (' + reason + ')'));
    }
    return p;
  }

  return { checkAuth, apiError, el, num, fmtTime, fmtClock, fmtDuration, sessionDuration, fmtInt, totalTokens, tokensTitle, fmtCost, SOURCES, fmtSource, fillBilled, setStatus, setState, isStale, stateOf, STALE_MS, copyText, setConn, policyNote };
})();
