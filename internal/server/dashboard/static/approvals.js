'use strict';
// The approvals page: every pending approval as a card with what will run in
// full (the command, the path and a diff, the plan, the questions) and the
// buttons its options allow; below, the recently resolved ones with who
// decided what and why. The list comes from pending.js (window.CRPending),
// which refreshes it on the session feed and every 30 s.
//
// Everything from an approval goes into the page with textContent or value,
// never as HTML.

(function () {
  const { el, fmtTime, fmtClock, fmtDuration, setConn, checkAuth, policyNote } = window.CR;
  const P = window.CRPending;

  const RESOLVED_MAX = 20;
  const VERBS = {
    allow: 'Allowed',
    allow_always: 'Always allowed',
    deny: 'Denied',
    accept_edits: 'Plan accepted (auto-accept edits)',
    default: 'Plan accepted (ask before each edit)',
    keep_planning: 'Sent back to planning',
  };
  const LABELS = {
    allow: 'Allow',
    allow_always: 'Always',
    deny: 'Deny',
    accept_edits: 'Accept, auto-accept edits',
    default: 'Accept, ask before each edit',
    keep_planning: 'Keep planning',
  };
  const HINTS = {
    allow: 'Let this tool call run once',
    allow_always: 'Allow, and do not ask again for this in this run',
    deny: 'Refuse; the reason (if any) is told to Claude',
    accept_edits: 'Approve the plan; file edits then run without asking',
    default: 'Approve the plan; each file edit still asks',
    keep_planning: 'Refuse the plan; the reason (if any) is told to Claude',
  };
  const DENIALS = new Set(['deny', 'keep_planning']);

  const pendingBox = document.getElementById('pending');
  const resolvedBox = document.getElementById('resolved');
  const cards = new Map(); // approval_id -> card
  const sessions = new Map(); // session_id -> Promise<{title, project}>
  const leftPending = new Set(); // ids seen pending on this page that are gone now
  let me = null; // /api/whoami
  let canApprove = true; // until /api/whoami says otherwise; the server decides anyway
  let resolved = []; // last GET state=resolved
  let extra = null; // a deep-linked approval found neither pending nor recently resolved
  let havePending = false;
  let haveResolved = false;
  let hashDone = '';
  let seq = 0; // names radio groups apart

  // ---- who is looking --------------------------------------------------------

  async function whoami() {
    try {
      const res = await fetch('/api/whoami', { credentials: 'same-origin', headers: { Accept: 'application/json' } });
      if (res.status === 401) { await checkAuth(); return; }
      if (!res.ok) return; // an older server: show the buttons, it answers 403 if it must
      const w = await res.json();
      if (!w || !Array.isArray(w.scopes)) return;
      me = w;
      canApprove = w.scopes.includes('approve') || w.scopes.includes('admin');
      const who = document.getElementById('who');
      who.textContent = 'Logged in as ' + (w.name || 'an unnamed token') + ' · scopes: ' + (w.scopes.join(', ') || 'none');
      who.hidden = false;
      document.getElementById('readonly').hidden = canApprove;
    } catch (_) { /* unreachable: the list says so */ }
  }

  // ---- decisions -------------------------------------------------------------

  function verb(decision, kind) {
    if (kind === 'question' && decision === 'allow') return 'Answered';
    return VERBS[decision] || (decision ? 'Decided "' + decision + '"' : 'Decided');
  }

  // isMine tells decisions made with this login: /api/whoami says what a
  // decision of ours records ("dashboard:phone").
  function isMine(by) {
    if (!me || !by) return false;
    if (typeof me.by === 'string' && me.by !== '') return by === me.by;
    return !!me.name && by === 'dashboard:' + me.name;
  }

  // decider names who decided an approval: the remote decision's author when
  // it came through the dashboard, else the helper's by.
  function decider(a) {
    const r = a.remote_decision;
    if (r && r.by && (!a.by || a.by === 'dashboard')) return r.by;
    return a.by || (r && r.by) || 'someone';
  }

  function outcomeText(a) {
    if (a.by === 'timeout') return 'Timed out: denied';
    if (a.by === 'cancelled') return 'Cancelled';
    return verb(a.decision || (a.remote_decision && a.remote_decision.decision), a.kind) + ' by ' + decider(a);
  }

  async function decide(card, body) {
    const id = card.a.approval_id;
    // The digest of the input this card shows: the server refuses a
    // decision on any other input, and the helper checks it again.
    if (card.a.input_sha256) body.input_sha256 = card.a.input_sha256;
    card.sending = true;
    setStatus(card, 'busy', 'Sending…');
    syncButtons(card);
    let res;
    let data = {};
    try {
      res = await fetch('/api/approvals/' + encodeURIComponent(id) + '/decision', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', 'X-Claude-Relay': '1', Accept: 'application/json' },
        body: JSON.stringify(body),
      });
      try { data = await res.json(); } catch (_) { data = {}; }
    } catch (e) {
      card.sending = false;
      setStatus(card, 'error', 'Could not reach the server to send "' + body.decision + '" (' + (e && e.message || e) + '); check the connection and click again.');
      syncButtons(card);
      return;
    }
    card.sending = false;
    const err = data && typeof data.error === 'string' ? data.error : '';
    switch (res.status) {
      case 200:
        card.mine = body.decision;
        if (data && data.approval) card.a = data.approval;
        setDecided(card, verb(body.decision, card.a.kind) + ' by you', 'ok');
        P.refresh();
        return;
      case 409: {
        const a = data && data.approval ? data.approval : null;
        const r = a && a.remote_decision;
        const by = (r && r.by) || (a && a.by);
        const what = (r && r.decision) || (a && a.decision);
        card.conflict = true; // keep saying so: the user clicked and lost
        setDecided(card, by && what ? 'Already decided by ' + by + ': ' + what : (err || 'Already decided'), 'error');
        P.refresh();
        return;
      }
      case 401:
        setStatus(card, 'error', 'The login expired: log in again and decide.');
        checkAuth();
        break;
      case 403:
        setStatus(card, 'error', err || 'The server refused this decision (HTTP 403): this login may lack the approve scope.');
        break;
      case 404:
        setStatus(card, 'error', 'The server does not know approval ' + id + ' (HTTP 404): it may have been removed; reload the page.');
        P.refresh();
        break;
      default:
        setStatus(card, 'error', (err || 'The server answered HTTP ' + res.status) + ' (sending "' + body.decision + '"); try again.');
    }
    syncButtons(card);
  }

  function setDecided(card, text, cls) {
    card.decided = true;
    card.node.classList.add('decided');
    setStatus(card, cls, text);
    syncButtons(card);
  }

  function setStatus(card, cls, text) {
    card.status.className = 'a-status' + (cls ? ' ' + cls : '');
    card.status.textContent = text || '';
    card.status.hidden = !text;
  }

  function syncButtons(card) {
    card.actions.hidden = !canApprove || card.decided;
    if (card.edit) card.edit.hidden = card.edit.hidden || !canApprove || card.decided;
    for (const b of card.node.querySelectorAll('button')) b.disabled = card.sending;
  }

  // ---- cards -----------------------------------------------------------------

  function inputOf(a) {
    return a.input && typeof a.input === 'object' && !Array.isArray(a.input) ? a.input : {};
  }

  function str(v) { return typeof v === 'string' ? v : ''; }

  function kindOf(a) { return ['tool', 'plan', 'question'].includes(a.kind) ? a.kind : 'tool'; }

  function buildCard(a) {
    const node = el('article', 'approval kind-' + kindOf(a));
    node.dataset.approvalId = a.approval_id;
    const card = { a, node, mine: null, decided: false, conflict: false, sending: false, edit: null };

    const head = el('div', 'a-head');
    head.appendChild(el('span', 'a-kind', kindOf(a)));
    head.appendChild(el('span', 'a-tool', a.tool_name || 'unknown tool'));
    const sess = el('a', 'a-session', a.session_id || '');
    sess.href = '/sessions/' + encodeURIComponent(a.session_id || '') + '#approval-' + encodeURIComponent(a.approval_id);
    head.appendChild(el('span', null, 'in'));
    head.appendChild(sess);
    sessionInfo(a.session_id).then((s) => {
      if (s.title) { sess.textContent = s.title; sess.title = a.session_id; }
      if (s.project) sess.title = a.session_id + ' · ' + s.project;
    });
    card.wait = el('time', 'a-wait');
    head.appendChild(card.wait);
    node.appendChild(head);
    const policy = policyNote(a.approver, a.policy_rule, a.policy_reason);
    if (policy) node.appendChild(policy);

    node.appendChild(body(card));

    card.actions = el('div', 'a-actions');
    buildActions(card);
    node.appendChild(card.actions);
    card.status = el('p', 'a-status');
    card.status.hidden = true;
    node.appendChild(card.status);
    tick(card);
    update(card, a);
    return card;
  }

  // body shows what the approval lets happen, in full.
  function body(card) {
    const a = card.a;
    const input = inputOf(a);
    const box = el('div', 'a-body');
    const kind = kindOf(a);
    if (kind === 'plan') {
      box.appendChild(el('p', 'a-title', 'Claude proposes this plan:'));
      box.appendChild(el('pre', 'a-plan', str(input.plan) || a.title || JSON.stringify(input, null, 2)));
      return box;
    }
    if (kind === 'question') {
      box.appendChild(questions(card, input));
      return box;
    }
    switch (a.tool_name) {
      case 'Bash': {
        box.appendChild(el('pre', 'a-cmd', str(input.command) || a.title || ''));
        if (str(input.description)) box.appendChild(el('p', 'a-desc', input.description));
        if (input.run_in_background === true) box.appendChild(el('p', 'a-note', 'runs in the background'));
        return box;
      }
      case 'Edit':
        box.appendChild(el('p', 'a-path', str(input.file_path) || a.title || ''));
        if (input.replace_all === true) box.appendChild(el('p', 'a-note', 'replaces every occurrence'));
        box.appendChild(diffView(str(input.old_string), str(input.new_string)));
        return box;
      case 'MultiEdit': {
        box.appendChild(el('p', 'a-path', str(input.file_path) || a.title || ''));
        const edits = Array.isArray(input.edits) ? input.edits : [];
        edits.forEach((e, i) => {
          if (edits.length > 1) box.appendChild(el('p', 'a-note', 'edit ' + (i + 1) + ' of ' + edits.length + (e && e.replace_all === true ? ', every occurrence' : '')));
          box.appendChild(diffView(str(e && e.old_string), str(e && e.new_string)));
        });
        return box;
      }
      case 'Write':
        box.appendChild(el('p', 'a-path', str(input.file_path) || a.title || ''));
        box.appendChild(el('p', 'a-note', 'writes the whole file'));
        box.appendChild(diffView('', str(input.content)));
        return box;
      case 'NotebookEdit':
        box.appendChild(el('p', 'a-path', str(input.notebook_path) || a.title || ''));
        box.appendChild(diffView('', str(input.new_source)));
        return box;
    }
    box.appendChild(el('p', 'a-title', a.title || a.tool_name || ''));
    if (Object.keys(input).length > 0) box.appendChild(el('pre', 'a-input', JSON.stringify(input, null, 2)));
    return box;
  }

  function questions(card, input) {
    const wrap = el('div', 'a-questions');
    const qs = Array.isArray(input.questions) ? input.questions : [];
    card.questions = [];
    if (qs.length === 0) {
      wrap.appendChild(el('p', 'a-title', card.a.title || 'Claude asks a question, but it could not be read.'));
      return wrap;
    }
    qs.forEach((q, qi) => {
      if (!q || typeof q !== 'object') return;
      const multi = q.multiSelect === true;
      const name = 'q' + (++seq) + '-' + qi;
      const fs = el('fieldset', 'a-question');
      const legend = el('legend');
      if (str(q.header)) legend.appendChild(el('span', 'q-header', q.header));
      legend.appendChild(el('span', 'q-text', str(q.question)));
      fs.appendChild(legend);
      if (multi) fs.appendChild(el('p', 'a-note', 'choose any'));
      const inputs = [];
      for (const o of Array.isArray(q.options) ? q.options : []) {
        if (!o || typeof o !== 'object') continue;
        const label = el('label');
        const box = el('input');
        box.type = multi ? 'checkbox' : 'radio';
        box.name = name;
        box.value = str(o.label);
        label.appendChild(box);
        label.appendChild(el('span', 'opt-label', str(o.label)));
        if (str(o.description)) label.appendChild(el('span', 'opt-desc', o.description));
        fs.appendChild(label);
        inputs.push(box);
      }
      const other = el('div', 'other');
      const otherBox = el('input');
      otherBox.type = multi ? 'checkbox' : 'radio';
      otherBox.name = name;
      otherBox.setAttribute('aria-label', 'Other');
      const otherText = el('input');
      otherText.type = 'text';
      otherText.placeholder = 'Other: your own answer';
      otherText.addEventListener('input', () => { otherBox.checked = otherText.value.trim() !== ''; });
      other.appendChild(otherBox);
      other.appendChild(otherText);
      fs.appendChild(other);
      wrap.appendChild(fs);
      card.questions.push({ question: str(q.question), multi, inputs, otherBox, otherText });
    });
    return wrap;
  }

  // answers maps each question's text to the chosen labels (", "-joined
  // when several, as the terminal does) or the user's own words.
  function answers(card) {
    const out = {};
    const missing = [];
    for (const q of card.questions || []) {
      const picked = q.inputs.filter((i) => i.checked).map((i) => i.value);
      const own = q.otherBox.checked ? q.otherText.value.trim() : '';
      if (own) picked.push(own);
      const answer = q.multi ? picked.join(', ') : (own || picked[0] || '');
      if (answer === '') missing.push(q.question);
      else out[q.question] = answer;
    }
    return { out, missing };
  }

  function buildActions(card) {
    const a = card.a;
    const options = Array.isArray(a.options) ? a.options.filter((o) => typeof o === 'string') : [];
    const reason = el('input', 'reason');
    reason.type = 'text';
    reason.placeholder = 'Reason (optional, told to Claude)';
    const buttons = [];
    for (const opt of options) {
      let label = LABELS[opt] || opt;
      if (opt === 'allow' && kindOf(a) === 'question') label = 'Submit answers';
      const b = el('button', DENIALS.has(opt) ? 'deny' : (opt === 'allow' || opt === 'accept_edits' ? 'allow' : 'other'), label);
      b.type = 'button';
      b.dataset.decision = opt;
      if (HINTS[opt]) b.title = HINTS[opt];
      b.addEventListener('click', () => choose(card, opt, reason));
      buttons.push(b);
    }
    if (a.tool_name === 'Bash' && kindOf(a) === 'tool' && options.includes('allow')) {
      const eb = el('button', 'edit', 'Edit');
      eb.type = 'button';
      eb.title = 'Change the command, then allow it';
      eb.addEventListener('click', () => toggleEdit(card));
      const at = buttons.findIndex((b) => DENIALS.has(b.dataset.decision));
      buttons.splice(at < 0 ? buttons.length : at, 0, eb);
    }
    for (const b of buttons) card.actions.appendChild(b);
    if (options.some((o) => DENIALS.has(o))) card.actions.appendChild(reason);
  }

  function choose(card, opt, reason) {
    const body = { decision: opt };
    if (DENIALS.has(opt)) {
      const r = reason.value.trim();
      if (r) body.reason = r;
    }
    if (opt === 'allow' && kindOf(card.a) === 'question' && card.questions && card.questions.length > 0) {
      const { out, missing } = answers(card);
      if (missing.length > 0) {
        setStatus(card, 'error', 'Answer every question first (or Deny): "' + missing[0] + '" has no answer.');
        return;
      }
      body.answers = out;
    }
    decide(card, body);
  }

  function toggleEdit(card) {
    if (!card.edit) {
      const input = inputOf(card.a);
      const box = el('div', 'a-edit');
      const ta = el('textarea');
      ta.value = str(input.command);
      ta.setAttribute('aria-label', 'Command to run instead');
      ta.spellcheck = false;
      const row = el('div', 'row');
      const ok = el('button', 'allow', 'Allow edited');
      ok.type = 'button';
      ok.addEventListener('click', () => {
        if (ta.value.trim() === '') {
          setStatus(card, 'error', 'The edited command is empty: type the command to run, or Deny.');
          return;
        }
        decide(card, { decision: 'allow', updated_input: Object.assign({}, inputOf(card.a), { command: ta.value }) });
      });
      const cancel = el('button', null, 'Cancel');
      cancel.type = 'button';
      cancel.addEventListener('click', () => { box.hidden = true; });
      row.append(ok, cancel);
      box.append(ta, row);
      card.edit = box;
      card.node.insertBefore(box, card.status);
      ta.focus();
      return;
    }
    card.edit.hidden = !card.edit.hidden;
    if (!card.edit.hidden) card.edit.querySelector('textarea').focus();
  }

  // update applies a newer copy of a pending approval: a decision someone
  // made (here, in another tab, on a phone) shows until the run applies it.
  function update(card, a) {
    card.a = a;
    const r = a.remote_decision;
    if (r && r.decision && !card.sending && !card.conflict) {
      const who = card.mine || isMine(r.by) ? 'you' : (r.by || 'someone');
      setDecided(card, verb(r.decision, a.kind) + ' by ' + who + ' · waiting for the run to apply it', 'ok');
    }
    syncButtons(card);
  }

  function tick(card) {
    const t = Date.parse(card.a.requested_at);
    if (isNaN(t)) { card.wait.textContent = ''; return; }
    const ms = Date.now() - t;
    card.wait.dateTime = card.a.requested_at;
    card.wait.title = 'asked ' + fmtTime(card.a.requested_at);
    card.wait.textContent = ms < 1000 ? 'waiting since just now' : 'waiting ' + fmtDuration(ms);
  }

  function sessionInfo(id) {
    if (!id) return Promise.resolve({});
    if (!sessions.has(id)) {
      sessions.set(id, fetch('/api/sessions/' + encodeURIComponent(id), { credentials: 'same-origin', headers: { Accept: 'application/json' } })
        .then((r) => (r.ok ? r.json() : {}))
        .then((s) => ({ title: s && typeof s.title === 'string' ? s.title : '', project: s && typeof s.project === 'string' ? s.project : '' }))
        .catch(() => ({})));
    }
    return sessions.get(id);
  }

  // ---- line diff ---------------------------------------------------------------

  // lineOps returns [op, line] pairs (op ' ', '-' or '+') turning a into b,
  // from session-diff.js's LCS (CRDiff.ops, not CRDiff.diff: diff stops at
  // 5000 lines and an approval must show everything). The lines are split
  // here rather than with CRDiff.split, which drops a final empty line: a
  // change that only adds or removes the trailing newline must still show.
  function lineOps(a, b) {
    const lines = (s) => (s === '' ? [] : s.split('\n'));
    return window.CRDiff.ops(lines(a), lines(b)).map((o) => [o.op, o.text]);
  }

  const CONTEXT = 3;

  // diffView shows a diff with long unchanged stretches folded.
  function diffView(a, b) {
    const box = el('div', 'a-diff');
    const ops = lineOps(a, b);
    if (ops.length === 0) {
      box.appendChild(el('div', 'dl fold', a === b ? '(no change)' : '(empty)'));
      return box;
    }
    const keep = ops.map((o) => o[0] !== ' ');
    const near = ops.map((_, i) => {
      for (let k = Math.max(0, i - CONTEXT); k <= Math.min(ops.length - 1, i + CONTEXT); k++) if (keep[k]) return true;
      return false;
    });
    const cls = { ' ': 'ctx', '-': 'del', '+': 'add' };
    for (let i = 0; i < ops.length;) {
      if (near[i]) {
        box.appendChild(el('div', 'dl ' + cls[ops[i][0]], ops[i][0] + ' ' + ops[i][1]));
        i++;
        continue;
      }
      let k = i;
      while (k < ops.length && !near[k]) k++;
      box.appendChild(el('div', 'dl fold', '⋯ ' + (k - i) + ' unchanged line' + (k - i === 1 ? '' : 's')));
      i = k;
    }
    box.setAttribute('aria-label', 'changes: lines starting with - are removed, + are added');
    return box;
  }

  // ---- lists -----------------------------------------------------------------

  // byNewest orders by request time; ties (Date keeps milliseconds, the
  // server nanoseconds) keep the server's order, which is newest first.
  function byNewest(x, y) {
    return (Date.parse(y.requested_at) || 0) - (Date.parse(x.requested_at) || 0);
  }

  function renderPending(list) {
    havePending = true;
    document.getElementById('loading').hidden = true;
    const ids = new Set();
    list = list.slice().sort(byNewest);
    for (const a of list) {
      ids.add(a.approval_id);
      const card = cards.get(a.approval_id);
      if (card) update(card, a);
      else cards.set(a.approval_id, buildCard(a));
    }
    for (const [id, card] of cards) {
      if (ids.has(id)) continue;
      card.node.remove();
      cards.delete(id);
      leftPending.add(id);
    }
    // Put the cards in order, moving only those out of place (moving a node
    // would take the focus from a half-typed reason).
    let prev = null;
    for (const a of list) {
      const node = cards.get(a.approval_id).node;
      const want = prev ? prev.nextSibling : pendingBox.firstChild;
      if (node !== want) pendingBox.insertBefore(node, want);
      prev = node;
    }
    document.getElementById('none').hidden = list.length > 0;
    document.getElementById('pending-count').textContent = list.length > 0 ? '(' + list.length + ')' : '';
    applyHash();
  }

  let resolvedBusy = false;
  let resolvedAgain = false;

  async function loadResolved() {
    if (resolvedBusy) { resolvedAgain = true; return; }
    resolvedBusy = true;
    try {
      const res = await fetch('/api/approvals?state=resolved&limit=' + RESOLVED_MAX, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
      if (res.ok) {
        const b = await res.json();
        resolved = b && Array.isArray(b.approvals) ? b.approvals.filter((a) => a && typeof a.approval_id === 'string') : [];
        renderResolved();
      }
    } catch (_) { /* the pending poll reports the connection */ }
    resolvedBusy = false;
    if (resolvedAgain) { resolvedAgain = false; loadResolved(); }
  }

  function resolvedAt(a) { return Date.parse(a.resolved_at || a.requested_at) || 0; }

  function renderResolved() {
    haveResolved = true;
    const list = resolved.slice().sort((x, y) => resolvedAt(y) - resolvedAt(x)).slice(0, RESOLVED_MAX);
    if (extra && !list.some((a) => a.approval_id === extra.approval_id)) list.unshift(extra);
    const frag = document.createDocumentFragment();
    for (const a of list) frag.appendChild(resolvedItem(a));
    resolvedBox.replaceChildren(frag);
    document.getElementById('none-resolved').hidden = list.length > 0;
    applyHash();
  }

  // shortTime is the time of day for today, else the date and time.
  function shortTime(iso) {
    const d = new Date(iso);
    if (isNaN(d)) return '–';
    return d.toDateString() === new Date().toDateString() ? fmtClock(iso) : fmtTime(iso);
  }

  function resolvedItem(a) {
    const li = el('li');
    li.dataset.approvalId = a.approval_id;
    if (leftPending.has(a.approval_id)) li.classList.add('fresh');
    const when = el('time', 'r-when', a.resolved_at ? shortTime(a.resolved_at) : '–');
    if (a.resolved_at) when.title = fmtTime(a.resolved_at);
    if (a.resolved_at) when.dateTime = a.resolved_at;
    li.appendChild(when);
    const what = el('span', 'r-what');
    what.appendChild(el('span', 'r-tool', a.tool_name || kindOf(a)));
    what.appendChild(el('span', 'r-title', a.title || ''));
    what.title = a.title || '';
    li.appendChild(what);
    const dec = a.decision || (a.remote_decision && a.remote_decision.decision) || '';
    const outcome = el('span', 'r-outcome ' + (DENIALS.has(dec) || a.by === 'timeout' || a.by === 'cancelled' ? 'deny' : 'allow'), outcomeText(a));
    li.appendChild(outcome);
    const why = el('span', 'r-reason');
    if (a.reason) why.appendChild(document.createTextNode(a.reason + ' · '));
    const link = el('a', null, 'session');
    link.href = '/sessions/' + encodeURIComponent(a.session_id || '') + '#approval-' + encodeURIComponent(a.approval_id);
    why.appendChild(link);
    li.appendChild(why);
    return li;
  }

  // ---- deep links: /approvals#<approval_id> ---------------------------------

  function hashId() {
    const h = location.hash.slice(1);
    try { return decodeURIComponent(h); } catch (_) { return h; }
  }

  function findNode(id) {
    const card = cards.get(id);
    if (card) return card.node;
    for (const li of resolvedBox.children) if (li.dataset.approvalId === id) return li;
    return null;
  }

  function applyHash() {
    const id = hashId();
    if (!id || hashDone === id) return;
    const node = findNode(id);
    if (node) {
      hashDone = id;
      for (const t of document.querySelectorAll('.target')) t.classList.remove('target');
      node.classList.add('target');
      node.scrollIntoView({ block: 'center' });
      return;
    }
    if (havePending && haveResolved) {
      hashDone = id;
      lookup(id);
    }
  }

  // lookup fetches a linked approval that is in neither list (resolved long
  // ago, or just now between two polls).
  async function lookup(id) {
    const missing = document.getElementById('missing');
    try {
      const res = await fetch('/api/approvals/' + encodeURIComponent(id), { credentials: 'same-origin', headers: { Accept: 'application/json' } });
      if (res.status === 404) {
        missing.textContent = 'Approval ' + id + ' is not known to this server: the link may be for another backend, or mistyped.';
        missing.hidden = false;
        return;
      }
      if (!res.ok) {
        missing.textContent = 'Could not look up approval ' + id + ' (HTTP ' + res.status + ').';
        missing.hidden = false;
        return;
      }
      const b = await res.json();
      const a = b && b.approval ? b.approval : b;
      if (!a || typeof a.approval_id !== 'string') return;
      if (a.state === 'pending') {
        hashDone = '';
        P.refresh();
        return;
      }
      extra = a;
      hashDone = '';
      renderResolved();
    } catch (_) { /* offline: the list says so */ }
  }

  window.addEventListener('hashchange', () => { hashDone = ''; applyHash(); });

  // ---- start -----------------------------------------------------------------

  function onList(s) {
    const banner = document.getElementById('api-error');
    if (s.ok) {
      banner.hidden = true;
      setConn('live', 'live');
      renderPending(s.approvals);
      loadResolved();
      return;
    }
    if (s.status === 0) {
      setConn('down', 'offline: retrying');
      return;
    }
    setConn('down', 'not available');
    if (s.status === 401) { checkAuth(); return; }
    document.getElementById('loading').hidden = true;
    banner.textContent = s.status === 404 || s.status === 405 || s.status === 501
      ? 'This server has no approvals API (GET /api/approvals answered HTTP ' + s.status + '): update claude-relay on the server to decide approvals here.'
      : 'Could not list the pending approvals: ' + s.error + ' (HTTP ' + s.status + '); retrying.';
    banner.hidden = false;
  }

  setInterval(() => { for (const c of cards.values()) tick(c); }, 1000);
  // The buttons wait for /api/whoami, so a read-only login never sees them.
  whoami().then(() => { P.onUpdate(onList); });
})();
