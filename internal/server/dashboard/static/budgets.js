// Budgets panel (issue 26): GET /api/budgets, each budget's spend of its
// cap in its period as a bar, and a banner once one reaches its warning
// threshold. Pages that want it hold <section id="budgets">; it stays
// hidden when no budget is configured. Refreshed every 30 s: spend moves
// when runs report results, not faster.
'use strict';

(function () {
  const { el, num } = window.CR;
  const { usd } = window.CRFmt;
  const REFRESH_MS = 30000;

  function periodText(b) {
    const start = new Date(b.period_start), end = new Date(b.period_end);
    const opts = { timeZone: 'UTC', month: 'short', day: 'numeric' };
    const day = (d) => d.toLocaleDateString(undefined, opts);
    // Periods end at an exclusive UTC midnight: show the last day in it.
    const last = new Date(end.getTime() - 1);
    const span = b.period === 'day' ? day(start) : day(start) + ' – ' + day(last);
    const reset = el('time', 'budget-reset', 'resets ' + end.toLocaleString(undefined,
      { timeZone: 'UTC', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }) + ' UTC');
    reset.dateTime = end.toISOString().replace('.000Z', 'Z');
    const div = el('div', 'budget-period', b.period + ' · ' + span + ' (UTC) · ');
    div.append(reset);
    return div;
  }

  function row(b) {
    const li = el('li', 'budget budget-' + b.state);
    li.dataset.state = b.state;
    const head = el('div', 'budget-head');
    head.append(el('span', 'budget-project', b.project === '*' ? 'All projects' : b.project),
      el('span', 'budget-figures', usd(b.spent_usd) + ' / ' + usd(b.cap_usd)));
    const bar = el('div', 'budget-bar');
    bar.setAttribute('role', 'meter');
    bar.setAttribute('aria-valuemin', '0');
    bar.setAttribute('aria-valuemax', String(num(b.cap_usd)));
    bar.setAttribute('aria-valuenow', String(num(b.spent_usd)));
    bar.setAttribute('aria-label', 'spent of the ' + b.period + ' budget');
    const fill = el('div', 'budget-fill');
    // CSSOM, not a style attribute: the page's CSP allows only our own styles.
    fill.style.width = Math.min(100, (num(b.spent_usd) / Math.max(num(b.cap_usd), 1e-9)) * 100).toFixed(1) + '%';
    const mark = el('div', 'budget-warn-mark');
    mark.style.left = (num(b.warn_at) * 100).toFixed(1) + '%';
    bar.append(fill, mark);
    li.append(head, bar, periodText(b));
    return li;
  }

  function banner(list) {
    const hot = list.filter((b) => b.state !== 'ok');
    if (hot.length === 0) return null;
    const p = el('p', 'budget-banner');
    p.setAttribute('role', 'alert');
    p.dataset.state = hot.some((b) => b.state === 'exhausted') ? 'exhausted' : 'warning';
    p.textContent = hot.map((b) => {
      const who = b.project === '*' ? 'All projects' : b.project;
      return b.state === 'exhausted'
        ? who + ': the ' + b.period + ' budget of ' + usd(b.cap_usd) + ' is used up (' + usd(b.spent_usd) + '); new runs are refused until it resets.'
        : who + ': ' + Math.round(num(b.spent_usd) / num(b.cap_usd) * 100) + ' % of the ' + b.period + ' budget of ' + usd(b.cap_usd) + ' spent.';
    }).join(' ');
    return p;
  }

  async function load(section) {
    let body;
    try {
      const res = await fetch('/api/budgets', { credentials: 'same-origin', headers: { Accept: 'application/json' } });
      if (!res.ok) return;
      body = await res.json();
    } catch (e) {
      return; // the page's own feed reports a lost connection
    }
    const list = Array.isArray(body.budgets) ? body.budgets : [];
    section.hidden = list.length === 0;
    const ul = el('ul', 'budget-list');
    for (const b of list) ul.append(row(b));
    const parts = [el('h2', 'budget-title', 'Budgets')];
    const b = banner(list);
    if (b) parts.unshift(b);
    parts.push(ul);
    section.replaceChildren(...parts);
    section.dataset.loaded = 'true';
  }

  function start() {
    const section = document.getElementById('budgets');
    if (!section) return;
    load(section);
    setInterval(() => load(section), REFRESH_MS);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
