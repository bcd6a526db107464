// The session page's cards: one DOM node per model entry, built on demand.
//
// Safety: event content reaches the page through textContent (CR.el),
// never as HTML. The one exception is the assistant's Markdown, which the
// server renders and sanitises (goldmark, then bluemonday); it is parsed
// into an inert document (DOMParser), checked once more here (no on*
// attribute, no URL but http, https, mailto and inline images), then
// adopted. The CSP (script-src 'self', no inline styles) is the last line
// behind all three.
'use strict';

window.CRView = (function () {
  const C = window.CR;
  const M = window.CRModel;
  const el = C.el;
  const str = M.str;

  const MAX_TEXT = 20000;  // characters shown before a "Show all" button
  const CHILD_CAP = 200;   // nested calls shown before a "Show more" button
  const DIFF_CAP = 400;    // diff lines shown before a "Show all" button
  const SAFE_HREF = /^(https?:|mailto:)/i;
  const SAFE_SRC = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+={0,2}$/;

  // ---- small blocks ----

  // showAll adds a button that replaces a clipped node's text with all of it.
  function showAll(node, text, fill) {
    const more = el('button', 'show-all', 'Show all (' + text.length.toLocaleString() + ' characters)');
    more.type = 'button';
    more.addEventListener('click', () => { fill(text); more.remove(); });
    return more;
  }

  // clipped puts text in node, cut after MAX_TEXT characters and ended with
  // more, then wrapped with a "Show all" button.
  function clipped(node, text, more) {
    text = String(text);
    if (text.length <= MAX_TEXT) {
      node.textContent = text;
      return node;
    }
    node.textContent = text.slice(0, MAX_TEXT) + more;
    const wrap = el('div', 'clipped');
    wrap.append(node, showAll(node, text, (t) => { node.textContent = t; }));
    return wrap;
  }

  function textBlock(cls, text) { return clipped(el('div', cls), text, '…'); }

  function preBlock(text) { return clipped(el('pre'), text, '\n…'); }

  // jsonText is data as indented JSON; for data that cannot be (cycles do
  // not come from JSON.parse, but a depth the engine refuses might), text.
  function jsonText(data) {
    try { return JSON.stringify(data, null, 2); } catch (err) { return String(err && err.message || err); }
  }

  // jsonDetails is a folded view of raw data, built only when opened.
  function jsonDetails(label, data) {
    const det = el('details', 'json');
    det.appendChild(el('summary', null, label));
    det.addEventListener('toggle', () => {
      if (det.open && det.childNodes.length === 1) det.appendChild(preBlock(jsonText(data)));
    });
    return det;
  }

  function permalink(cursor) {
    const a = el('a', 'permalink', '#');
    a.href = '#c' + cursor;
    a.title = 'Link to this event';
    return a;
  }

  function meta(label, time, cursor) {
    const m = el('div', 'meta');
    m.appendChild(el('span', 'kind', label));
    const t = el('time', null, C.fmtClock(time));
    if (time) t.dateTime = time;
    m.appendChild(t);
    if (cursor) m.appendChild(permalink(cursor));
    return m;
  }

  function images(urls) {
    const box = el('div', 'images');
    for (const u of urls) {
      if (!SAFE_SRC.test(u)) continue;
      const img = el('img');
      img.src = u;
      img.alt = 'image from the session';
      img.loading = 'lazy';
      img.addEventListener('click', () => img.classList.toggle('zoom'));
      box.appendChild(img);
    }
    return box;
  }

  // ---- Markdown ----

  // setMarkdown puts server-rendered, sanitised HTML into div. It is parsed
  // into a separate, inert document (DOMParser: no script runs, no handler
  // fires, nothing loads there), checked, and only then adopted into the
  // page. The check is a third layer: it drops what the server never sends.
  function setMarkdown(div, html) {
    const doc = new DOMParser().parseFromString('<!doctype html><body>' + String(html).trim(), 'text/html');
    for (const n of doc.body.querySelectorAll('*')) {
      const tag = n.localName;
      if (tag === 'script' || tag === 'iframe' || tag === 'object' || tag === 'embed' || tag === 'style' || tag === 'form') {
        n.remove();
        continue;
      }
      for (const a of Array.from(n.attributes)) {
        const name = a.name.toLowerCase();
        if (name.startsWith('on') || name === 'style' || name === 'srcdoc' ||
            (name === 'href' && !SAFE_HREF.test(a.value)) || (name === 'src' && !SAFE_SRC.test(a.value))) {
          n.removeAttribute(a.name);
        }
      }
      if (tag === 'a' && n.hasAttribute('href')) {
        n.target = '_blank';
        n.rel = 'nofollow noopener noreferrer';
      }
    }
    div.replaceChildren(...Array.from(doc.body.childNodes));
    div.classList.add('md');
  }

  // textEntry is assistant text: escaped at first, Markdown once the
  // server's rendering arrives (markdown(en, html)).
  function textEntry(en) {
    const div = el('div', 'text');
    if (typeof en.html === 'string' && en.html) setMarkdown(div, en.html);
    else return textBlock('text', en.text);
    return div;
  }

  // ---- diffs ----

  function diffBlock(before, after, label) {
    const box = el('div', 'diff');
    if (label) box.appendChild(el('div', 'diff-label', label));
    const lines = window.CRDiff.diff(before, after);
    const body = el('div', 'diff-lines');
    const add = (from, to) => {
      const frag = document.createDocumentFragment();
      for (let i = from; i < to; i++) {
        const l = lines[i];
        if (l.op === '…') {
          frag.appendChild(el('div', 'dl gap', l.clipped ? '… ' + l.count.toLocaleString() + ' more lines not compared' : '… ' + l.count.toLocaleString() + ' unchanged lines'));
          continue;
        }
        const cls = l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'ctx';
        const row = el('div', 'dl ' + cls);
        row.appendChild(el('span', 'sign', l.op));
        row.appendChild(document.createTextNode(l.text.length > MAX_TEXT ? l.text.slice(0, MAX_TEXT) + '…' : l.text));
        frag.appendChild(row);
      }
      body.appendChild(frag);
    };
    add(0, Math.min(lines.length, DIFF_CAP));
    box.appendChild(body);
    if (lines.length > DIFF_CAP) {
      const more = el('button', 'show-all', 'Show all (' + lines.length.toLocaleString() + ' lines)');
      more.type = 'button';
      more.addEventListener('click', () => { add(DIFF_CAP, lines.length); more.remove(); });
      box.appendChild(more);
    }
    const counts = { add: 0, del: 0 };
    for (const l of lines) { if (l.op === '+') counts.add++; else if (l.op === '-') counts.del++; }
    box.dataset.add = counts.add;
    box.dataset.del = counts.del;
    return box;
  }

  // ---- tools ----

  function toolBody(en, node) {
    const input = M.obj(en.input);
    switch (en.name) {
      case 'Bash':
        if (typeof input.command === 'string') { node.appendChild(preBlock('$ ' + input.command)); return; }
        break;
      case 'Edit':
        if (typeof input.old_string === 'string' || typeof input.new_string === 'string') {
          node.appendChild(diffBlock(str(input.old_string), str(input.new_string), input.replace_all === true ? 'every occurrence' : ''));
          return;
        }
        break;
      case 'MultiEdit':
        if (Array.isArray(input.edits)) {
          input.edits.forEach((e, i) => {
            const o = M.obj(e);
            node.appendChild(diffBlock(str(o.old_string), str(o.new_string), 'edit ' + (i + 1) + ' of ' + input.edits.length));
          });
          return;
        }
        break;
      case 'Write':
        if (typeof input.content === 'string') { node.appendChild(diffBlock('', input.content, 'new content')); return; }
        break;
      case 'TodoWrite':
        if (Array.isArray(input.todos)) {
          const ul = el('ul', 'todos');
          for (const t of input.todos) {
            const o = M.obj(t);
            const li = el('li', 'todo ' + (str(o.status) || 'pending'), str(o.content) || jsonText(t));
            ul.appendChild(li);
          }
          node.appendChild(ul);
          return;
        }
        break;
      case 'Task':
      case 'Agent': {
        if (str(input.subagent_type)) node.appendChild(el('div', 'agent-type', 'agent: ' + input.subagent_type));
        if (str(input.prompt)) {
          const det = el('details', 'agent-prompt');
          det.appendChild(el('summary', null, 'Prompt'));
          det.appendChild(textBlock('text', input.prompt));
          node.appendChild(det);
          return;
        }
        break;
      }
    }
    if (en.input !== undefined) node.appendChild(jsonDetails('Input', en.input));
  }

  function resultNode(en) {
    const r = en.result;
    const box = el('div', 'result-box');
    if (!r.text && r.images && r.images.length) {
      box.appendChild(images(r.images)); // an image is the whole output: shown, not folded
      return box;
    }
    const failed = toolOutcome(en) === 'error';
    const det = el('details', 'result' + (failed ? ' error' : ''));
    const lines = r.text ? r.text.split('\n').length : 0;
    const what = failed ? 'Error' : r.isError ? 'What the model was told' : 'Output';
    det.appendChild(el('summary', null, what + ' (' + lines + (lines === 1 ? ' line)' : ' lines)')));
    det.appendChild(preBlock(r.text || '(no output)'));
    det.open = failed; // folded unless it failed
    box.appendChild(det);
    if (r.images && r.images.length) box.appendChild(images(r.images));
    return box;
  }

  function toolState(en, ctx) {
    const st = en.node && en.node._state;
    if (!st) return;
    const r = en.result;
    if (!r) {
      st.textContent = ctx.over() ? 'no result' : 'running…';
      st.className = 'state';
      return;
    }
    const how = toolOutcome(en);
    st.textContent = how;
    st.className = 'state' + (how === 'error' ? ' error' : how === 'done' ? '' : ' stopped');
  }

  // The CLI's words for a tool call the user refused or stopped: not an
  // error of the tool.
  const REFUSED = /^The user doesn't want to proceed with this tool use/;

  // toolOutcome says how a call with a result ended: done, error, denied
  // (its approval said no) or stopped (the turn was interrupted under it).
  function toolOutcome(en) {
    const r = en.result;
    if (!r.isError) return 'done';
    const a = en.approval;
    if (a && a.state === 'resolved' && (a.decision === 'deny' || a.decision === 'keep_planning')) return 'denied';
    return REFUSED.test(r.text) ? 'stopped' : 'error';
  }

  function approvalNote(a) {
    if (!a) return null;
    return el('div', 'approval-note', 'Approval: ' + approvalOutcome(a));
  }

  function renderTool(en, node, ctx) {
    node.dataset.kind = en.info.kind;
    node.dataset.toolUseId = en.id || '';
    node.dataset.source = en.from || '';
    node.appendChild(meta('tool · ' + en.info.kind, en.time, en.cursor));
    const head = el('div', 'head');
    head.appendChild(el('span', 'badge', en.name || 'tool'));
    head.appendChild(el('span', 'title', en.info.title));
    const st = el('span', 'state');
    head.appendChild(st);
    node.appendChild(head);
    node._state = st;
    const body = el('div', 'body');
    toolBody(en, body);
    node.appendChild(body);
    node._body = body;
    const note = el('div', 'tool-note');
    node.appendChild(note);
    node._note = note;
    // A subagent's steps, then what it answered.
    if (en.children.length || en.info.kind === 'agent') {
      const kids = el('div', 'children');
      node.appendChild(kids);
      node._children = kids;
      for (const c of en.children.slice(0, CHILD_CAP)) kids.appendChild(render(c, ctx));
      if (en.children.length > CHILD_CAP) addMoreChildren(en, ctx);
    }
    const res = el('div', 'results');
    node.appendChild(res);
    node._results = res;
    fillTool(en, ctx);
  }

  function fillTool(en, ctx) {
    const node = en.node || null;
    if (!node) return;
    node._note.replaceChildren();
    const note = approvalNote(en.approval);
    if (note) node._note.appendChild(note);
    node._results.replaceChildren();
    if (en.result) node._results.appendChild(resultNode(en));
    toolState(en, ctx);
  }

  function addMoreChildren(en, ctx) {
    const kids = en.node._children;
    const shown = kids.querySelectorAll(':scope > .entry').length;
    const more = el('button', 'show-all', 'Show ' + (en.children.length - shown).toLocaleString() + ' more steps');
    more.type = 'button';
    more.addEventListener('click', () => {
      more.remove();
      for (const c of en.children.slice(shown)) kids.appendChild(render(c, ctx));
    });
    kids.appendChild(more);
  }

  // ---- turns, approvals, notices ----

  function turnStats(t, ctx) {
    const box = el('div', 'turn-stats');
    const status = t.status || (ctx.live(t) ? 'running' : '');
    if (status) {
      const s = el('span');
      C.setStatus(s, status);
      box.appendChild(s);
    }
    let dur = t.durationMs;
    if (dur === null && !ctx.live(t) && t.last > t.started) dur = t.last - t.started;
    if (dur !== null) box.appendChild(el('span', 'stat', C.fmtDuration(dur)));
    if (t.cost !== null) box.appendChild(el('span', 'stat', C.fmtCost(t.cost)));
    if (t.usage) {
      const tok = el('span', 'stat', C.fmtInt(C.totalTokens(t.usage)) + ' tokens');
      tok.title = C.tokensTitle(t.usage);
      box.appendChild(tok);
    }
    if (typeof t.numTurns === 'number') box.appendChild(el('span', 'stat', t.numTurns + (t.numTurns === 1 ? ' model turn' : ' model turns')));
    return box;
  }

  function fillTurn(t, node, ctx) {
    const shown = t.prompt + '\n' + t.images.length + '\n' + t.mode;
    if (node._stats && node._shown === shown) {
      // Only the numbers changed: keep the prompt as the reader left it
      // (a long one they unfolded stays unfolded).
      const stats = turnStats(t, ctx);
      node._stats.replaceWith(stats);
      node._stats = stats;
      return;
    }
    node.replaceChildren();
    node._shown = shown;
    const m = meta(t.n === 1 ? 'prompt' : 'turn ' + t.n, t.time, t.cursor);
    node._stats = turnStats(t, ctx);
    m.insertBefore(node._stats, m.children[1]);
    node.appendChild(m);
    if (t.prompt) {
      node.appendChild(textBlock('prompt', t.prompt));
    } else {
      node.appendChild(el('div', 'prompt missing', t.n === 1 && t.mode === 'terminal' ? 'Terminal session (the prompt is typed in the terminal)' :
        t.n === 1 ? 'No prompt text' : 'Follow-up (its message was not recorded)'));
    }
    if (t.images.length) node.appendChild(images(t.images));
  }

  const DECISIONS = { allow: 'Allowed', allow_always: 'Always allowed', deny: 'Denied', accept_edits: 'Plan accepted (accept edits)',
    default: 'Plan accepted (ask for each edit)', keep_planning: 'Keep planning' };

  function approvalOutcome(a) {
    if (a.state !== 'resolved') return 'waiting for a decision';
    let s = a.decision ? (DECISIONS[a.decision] || a.decision) : 'Ended';
    if (a.by) s += ' by ' + a.by + (a.decidedBy ? ' (' + a.decidedBy + ')' : '');
    if (a.reason) s += ': ' + a.reason;
    return s;
  }

  function fillApproval(a, node) {
    node.replaceChildren();
    // Classes apart from the approvals page's (.approval, .resolved), whose
    // stylesheet pending.js loads on every page.
    const target = node.classList.contains('target');
    node.className = 'entry approval-card ' + (a.state === 'resolved' ? 'is-resolved' : 'is-pending') + (a.decision === 'deny' ? ' is-denied' : '');
    if (target) node.classList.add('target');
    node.dataset.approvalId = a.id; // what #approval-<id> links to
    node.appendChild(meta('approval · ' + (a.kind || 'tool'), a.time, a.cursor));
    const head = el('div', 'head');
    if (a.toolName) head.appendChild(el('span', 'badge', a.toolName));
    head.appendChild(el('span', 'title', a.title || a.toolName || 'approval ' + a.id));
    node.appendChild(head);
    const policy = C.policyNote(a.approver, a.policyRule, a.policyReason);
    if (policy) node.appendChild(policy);
    const out = el('div', 'outcome');
    out.appendChild(el('span', 'what', approvalOutcome(a)));
    if (a.state !== 'resolved' && a.id) {
      const link = el('a', 'decide', 'Decide');
      link.href = '/approvals#' + encodeURIComponent(a.id);
      out.appendChild(link);
    }
    if (a.resolvedAt) {
      const t = el('time', null, C.fmtClock(a.resolvedAt));
      t.dateTime = a.resolvedAt;
      out.appendChild(t);
    }
    node.appendChild(out);
    if (a.input !== undefined) node.appendChild(jsonDetails('Input', a.input));
  }

  function renderRaw(en, node) {
    const ev = en.ev;
    const d = M.obj(ev.event_data);
    node.appendChild(meta(String(ev.event_type || 'event') + (ev.source ? ' · ' + ev.source : ''), ev.timestamp, ev.cursor));
    const text = M.pickText(d);
    if (text) node.appendChild(el('div', 'text raw-text', text.length > 300 ? text.slice(0, 300) + '…' : text));
    node.appendChild(jsonDetails('Event', ev));
  }

  // ---- entries ----

  // render returns en's node, building it the first time.
  function render(en, ctx) {
    if (en.node) return en.node;
    const node = el('div', 'entry ' + en.cls);
    en.node = node;
    if (ctx.owns(en)) node.id = 'c' + en.cursor;
    node.dataset.cursor = en.cursor;
    switch (en.type) {
      case 'turn':
        node.className = 'entry turn';
        node.dataset.turn = en.n;
        fillTurn(en, node, ctx);
        break;
      case 'text':
        node.appendChild(meta(en.label || (en.cls === 'assistant' ? 'assistant' : en.cls), en.time, en.cursor));
        node.appendChild(textEntry(en));
        if (en.images && en.images.length) node.appendChild(images(en.images));
        if (en.cls === 'assistant') ctx.wantMarkdown(en);
        break;
      case 'thinking': {
        node.appendChild(meta('thinking', en.time, en.cursor));
        const det = el('details', 'thinking-body');
        det.appendChild(el('summary', null, en.text.split('\n')[0].slice(0, 120) || 'Thinking'));
        det.appendChild(textBlock('text', en.text));
        node.appendChild(det);
        break;
      }
      case 'tool':
        renderTool(en, node, ctx);
        break;
      case 'approval':
        fillApproval(en, node);
        break;
      case 'raw':
        node.className = 'entry raw';
        renderRaw(en, node);
        break;
      default:
        node.appendChild(meta(en.label, en.time, en.cursor));
        if (en.text) node.appendChild(textBlock('text', en.text));
        if (en.images && en.images.length) node.appendChild(images(en.images));
        if (en.data && typeof en.data === 'object' && Object.keys(en.data).length) node.appendChild(jsonDetails('Details', en.data));
    }
    return node;
  }

  // update refreshes a rendered entry after the model changed it.
  function update(en, ctx) {
    const node = en.node;
    if (!node) return;
    switch (en.type) {
      case 'turn': fillTurn(en, node, ctx); break;
      case 'approval': fillApproval(en, node); break;
      case 'tool':
        if (node._body && node.dataset.source !== en.from) {
          node._body.replaceChildren();
          toolBody(en, node._body);
          node.querySelector('.head .title').textContent = en.info.title;
        }
        node.dataset.source = en.from;
        fillTool(en, ctx);
        break;
    }
  }

  // added shows a nested call under its rendered parent.
  function added(parent, child, ctx) {
    const node = parent.node;
    if (!node) return;
    if (!node._children) {
      node._children = el('div', 'children');
      node.insertBefore(node._children, node._results);
    }
    const shown = node._children.querySelectorAll(':scope > .entry').length;
    if (shown < CHILD_CAP) node._children.appendChild(render(child, ctx));
    else if (!node._children.querySelector(':scope > .show-all')) addMoreChildren(parent, ctx);
  }

  // markdown shows en's rendered Markdown once it arrived.
  function markdown(en) {
    if (!en.node) return;
    const old = en.node.querySelector(':scope > .text, :scope > .clipped');
    if (!old) return;
    const div = el('div', 'text');
    setMarkdown(div, en.html);
    old.replaceWith(div);
  }

  return { render, update, added, markdown, toolState, MAX_TEXT };
})();
