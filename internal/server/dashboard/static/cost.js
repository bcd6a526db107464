// Cost page: GET /api/usage (rows per UTC day, model and project, summed in
// SQL, plus totals) drawn as a stacked bar chart per day and two tables.
// The chart is plain SVG made with DOM calls; every label from the data is
// text (textContent or an SVG <title>), never markup. The range, project
// and metric live in the URL query, so links and Back work.
'use strict';

(function () {
  const { el, setConn, checkAuth } = window.CR;
  const F = window.CRFmt;
  const NS = 'http://www.w3.org/2000/svg';
  const COLORS = 8; // .m0 … .m7 in cost.css
  const DEFAULT_DAYS = 30;
  const MAX_DAYS = 3660; // a chart of ten years is the most that still means anything

  const $ = (id) => document.getElementById(id);
  const ctl = { from: $('from'), to: $('to'), project: $('project') };
  const dayLabel = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
  const dayLong = new Intl.DateTimeFormat(undefined, { weekday: 'short', year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });

  let state = readURL();
  let data = null; // the last answer: {rows, totals}
  let projects = new Set();
  let gen = 0;

  // ---- the URL is the state -------------------------------------------------

  function defaults() {
    const to = F.utcDate(new Date());
    return { from: F.addDays(to, -(DEFAULT_DAYS - 1)), to };
  }

  function readURL() {
    const p = new URLSearchParams(location.search);
    const d = defaults();
    const s = {
      from: F.isDate(p.get('from')) ? p.get('from') : d.from,
      to: F.isDate(p.get('to')) ? p.get('to') : d.to,
      project: p.get('project') || '',
      metric: p.get('metric') === 'tokens' ? 'tokens' : 'cost',
    };
    if (s.from > s.to) s.from = s.to;
    return s;
  }

  function queryOf(s) {
    const d = defaults();
    const p = new URLSearchParams();
    if (s.from !== d.from || s.to !== d.to) { p.set('from', s.from); p.set('to', s.to); }
    if (s.project) p.set('project', s.project);
    if (s.metric !== 'cost') p.set('metric', s.metric);
    return p.toString();
  }

  function go(s, fetchAgain) {
    state = s;
    const qs = queryOf(s);
    if (location.search !== (qs ? '?' + qs : '')) history.pushState(null, '', qs ? '?' + qs : location.pathname);
    setControls();
    if (fetchAgain) load();
    else render();
  }

  function setControls() {
    ctl.from.value = state.from;
    ctl.to.value = state.to;
    ctl.from.max = state.to;
    ctl.to.min = state.from;
    noteProject(state.project);
    renderProjects();
    for (const b of document.querySelectorAll('.metric button')) b.setAttribute('aria-pressed', String(b.dataset.metric === state.metric));
    $('chart-title').textContent = state.metric === 'cost' ? 'Spend by day' : 'Tokens by day';
  }

  // ---- loading --------------------------------------------------------------

  async function fetchUsage(params) {
    const res = await fetch('/api/usage?' + params, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
    if (res.status === 401) { checkAuth(); return null; }
    if (!res.ok) throw new Error(await F.apiError(res));
    return res.json();
  }

  async function load() {
    const my = ++gen;
    document.body.dataset.state = 'loading';
    const p = new URLSearchParams({ from: state.from, to: state.to });
    const all = p.toString();
    if (state.project) p.set('project', state.project);
    let body;
    try {
      // With a project chosen, the other projects of the range still
      // belong in the select: ask for the range without it too.
      const [mine, everyone] = await Promise.all([
        fetchUsage(p.toString()),
        state.project ? fetchUsage(all).catch(() => null) : Promise.resolve(null),
      ]);
      if (my !== gen || !mine) return;
      body = mine;
      for (const r of rowsOf(everyone)) noteProject(r.project);
    } catch (e) {
      if (my !== gen) return;
      showError('Reading usage failed: ' + (e && e.message || e) + '.');
      document.body.dataset.state = 'error';
      return;
    }
    showError('');
    data = { rows: rowsOf(body), totals: (body && body.totals) || {} };
    for (const r of data.rows) noteProject(r.project);
    renderProjects();
    render();
    setConn('', 'as of ' + new Date().toLocaleTimeString());
    document.body.dataset.state = 'ready';
  }

  function rowsOf(body) {
    return body && Array.isArray(body.rows) ? body.rows.filter((r) => r && typeof r.day === 'string') : [];
  }

  function showError(msg) {
    $('api-error').textContent = msg;
    $('api-error').hidden = !msg;
  }

  // ---- aggregation (the rows are SQL's; this only regroups them) ------------

  function value(r, metric) { return metric === 'cost' ? F.num(r.total_cost_usd) : F.totalTokens(r.usage); }

  function addUsage(a, u) {
    a.input_tokens += F.num(u && u.input_tokens);
    a.output_tokens += F.num(u && u.output_tokens);
    a.cache_read_input_tokens += F.num(u && u.cache_read_input_tokens);
    a.cache_creation_input_tokens += F.num(u && u.cache_creation_input_tokens);
  }

  function group(rows, key) {
    const m = new Map();
    for (const r of rows) {
      const k = key(r);
      let g = m.get(k);
      if (!g) {
        g = { key: k, cost: 0, results: 0, usage: { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 } };
        m.set(k, g);
      }
      g.cost += F.num(r.total_cost_usd);
      g.results += F.num(r.results);
      addUsage(g.usage, r.usage);
    }
    return Array.from(m.values()).sort((a, b) => b.cost - a.cost || F.totalTokens(b.usage) - F.totalTokens(a.usage) || a.key.localeCompare(b.key));
  }

  function daysOf(from, to) {
    const out = [];
    for (let d = from; d <= to && out.length < MAX_DAYS; d = F.addDays(d, 1)) out.push(d);
    return out;
  }

  const modelName = (m) => m || '(model not reported)';

  // ---- rendering ------------------------------------------------------------

  function render() {
    if (!data) return;
    const rows = data.rows;
    const t = data.totals;
    const byModel = group(rows, (r) => r.model || '');
    const byProject = group(rows, (r) => r.project || '');
    // Colours follow spend, so the biggest model keeps the first colour
    // whichever metric is shown.
    const color = new Map(byModel.map((g, i) => [g.key, 'm' + (i % COLORS)]));
    const days = daysOf(state.from, state.to);
    const empty = rows.length === 0;

    $('loading').hidden = true;
    $('totals').hidden = false;
    $('t-cost').textContent = F.usd(t.total_cost_usd);
    $('t-perday').textContent = F.usd(F.num(t.total_cost_usd) / Math.max(1, days.length)) + ' a day over ' + days.length + (days.length === 1 ? ' day' : ' days');
    $('t-tokens').textContent = F.tokens(F.totalTokens(t.usage));
    const u = t.usage || {};
    $('t-tokens-sub').textContent = F.tokens(u.input_tokens) + ' in · ' + F.tokens(u.output_tokens) + ' out · ' +
      F.tokens(u.cache_read_input_tokens) + ' cache read · ' + F.tokens(u.cache_creation_input_tokens) + ' cache write';
    $('t-turns').textContent = F.tokens(t.results);
    $('t-models').textContent = byModel.length === 1 ? '1 model' : byModel.length + ' models';

    $('chart-panel').hidden = empty;
    $('tables').hidden = empty;
    $('empty').hidden = !empty;
    $('empty-range').textContent = state.from + ' and ' + state.to + (state.project ? ' in ' + F.basename(state.project) : '');
    if (empty) {
      $('chart').replaceChildren();
      return;
    }
    $('chart').replaceChildren(chart(rows, days, byModel.map((g) => g.key), color, state.metric));
    legend(byModel, color);
    modelTable(byModel, t);
    projectTable(byProject, t);
  }

  function svg(tag, attrs, cls) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (cls) e.setAttribute('class', cls);
    return e;
  }

  function svgText(x, y, text, cls, anchor) {
    const e = svg('text', { x, y, 'text-anchor': anchor || 'middle' }, cls);
    e.textContent = text;
    return e;
  }

  function titled(node, text) {
    const t = svg('title', {});
    t.textContent = text;
    node.appendChild(t);
    return node;
  }

  // niceTicks returns round steps from 0 that reach max.
  function niceTicks(max, n) {
    if (!(max > 0)) return [0, 1];
    const raw = max / n;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) || 10 * mag;
    const out = [];
    for (let v = 0; v < max + step / 2; v += step) out.push(v);
    if (out[out.length - 1] < max) out.push(out[out.length - 1] + step);
    return out;
  }

  function describeDay(day, rows) {
    let cost = 0;
    let tok = 0;
    let turns = 0;
    for (const r of rows) {
      cost += F.num(r.total_cost_usd);
      tok += F.totalTokens(r.usage);
      turns += F.num(r.results);
    }
    return dayLong.format(new Date(day + 'T00:00:00Z')) + ': ' + F.usd(cost) + ', ' + F.tokens(tok) + ' tokens, ' +
      F.tokens(turns) + (turns === 1 ? ' turn' : ' turns');
  }

  // chart draws one stacked bar per day, a segment per model.
  function chart(rows, days, models, color, metric) {
    const W = 1000, H = 300, L = 70, R = 12, T = 14, B = 40;
    const pw = W - L - R, ph = H - T - B;
    const byDay = new Map(days.map((d) => [d, new Map()]));
    const dayRows = new Map(days.map((d) => [d, []]));
    for (const r of rows) {
      const m = byDay.get(r.day);
      if (!m) continue; // outside the range asked for
      m.set(r.model || '', (m.get(r.model || '') || 0) + value(r, metric));
      dayRows.get(r.day).push(r);
    }
    let max = 0;
    for (const m of byDay.values()) {
      let sum = 0;
      for (const v of m.values()) sum += v;
      max = Math.max(max, sum);
    }
    const ticks = niceTicks(max, 5);
    const top = ticks[ticks.length - 1];
    const y = (v) => T + ph - (v / top) * ph;
    const fmt = metric === 'cost' ? F.usdAxis : F.tokensShort;
    const fmtFull = metric === 'cost' ? F.usd : (v) => F.tokens(v) + ' tokens';

    const root = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', preserveAspectRatio: 'xMidYMid meet' }, 'chart');
    root.setAttribute('aria-label', (metric === 'cost' ? 'Spend' : 'Tokens') + ' by day from ' + days[0] + ' to ' + days[days.length - 1] + ', stacked by model');
    const grid = svg('g', {}, 'grid');
    for (const v of ticks) {
      grid.appendChild(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v) }));
      grid.appendChild(svgText(L - 8, y(v) + 4, fmt(v), 'tick', 'end'));
    }
    root.appendChild(grid);
    root.appendChild(titled(svgText(14, T + ph / 2, metric === 'cost' ? 'USD' : 'tokens', 'axis-title', 'middle'), metric === 'cost' ? 'Spend in US dollars' : 'Input, output and cache tokens'));
    root.lastChild.setAttribute('transform', 'rotate(-90 14 ' + (T + ph / 2) + ')');

    const slot = pw / days.length;
    const bw = Math.max(1, Math.min(48, slot * 0.72));
    const every = Math.ceil(days.length / 12);
    const bars = svg('g', {}, 'bars');
    days.forEach((day, i) => {
      const x = L + i * slot + (slot - bw) / 2;
      const g = svg('g', {}, 'day');
      g.setAttribute('data-day', day);
      // The whole column answers hover with the day's totals.
      g.appendChild(titled(svg('rect', { x: L + i * slot, y: T, width: slot, height: ph }, 'hit'), describeDay(day, dayRows.get(day))));
      let acc = 0;
      for (const model of models) {
        const v = byDay.get(day).get(model) || 0;
        if (!(v > 0)) continue;
        const y0 = y(acc + v);
        const h = Math.max(0.5, y(acc) - y0);
        const seg = svg('rect', { x, y: y0, width: bw, height: h }, 'bar ' + color.get(model));
        seg.setAttribute('data-model', model);
        seg.setAttribute('data-value', String(v));
        g.appendChild(titled(seg, day + ' · ' + modelName(model) + ': ' + fmtFull(v)));
        acc += v;
      }
      bars.appendChild(g);
      if (i % every === 0) root.appendChild(svgText(L + i * slot + slot / 2, H - B + 16, dayLabel.format(new Date(day + 'T00:00:00Z')), 'tick'));
    });
    root.appendChild(bars);
    root.appendChild(svg('line', { x1: L, x2: W - R, y1: T + ph, y2: T + ph }, 'baseline'));
    root.appendChild(svgText(L + pw / 2, H - 4, 'day (UTC)', 'axis-title'));
    return root;
  }

  function legend(byModel, color) {
    const items = byModel.map((g) => {
      const li = el('li');
      li.dataset.model = g.key;
      li.appendChild(el('span', 'swatch ' + color.get(g.key)));
      li.appendChild(el('span', 'name', modelName(g.key)));
      li.appendChild(el('span', 'amount', F.usd(g.cost)));
      return li;
    });
    $('legend').replaceChildren(...items);
  }

  function share(part, whole) {
    return whole > 0 ? (100 * part / whole).toFixed(part / whole < 0.1 ? 1 : 0) + '%' : '–';
  }

  function modelTable(groups, t) {
    const total = F.num(t.total_cost_usd);
    const tr = (name, g, cls) => {
      const row = el('tr', cls);
      row.appendChild(el('td', 'name', name));
      row.appendChild(el('td', 'num cost', F.usd(g.cost)));
      row.appendChild(el('td', 'num', share(g.cost, total)));
      for (const k of ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens']) row.appendChild(el('td', 'num', F.tokens(g.usage[k])));
      row.appendChild(el('td', 'num', F.tokens(g.results)));
      return row;
    };
    const tbody = document.querySelector('#by-model tbody');
    tbody.replaceChildren(...groups.map((g) => {
      const row = tr(modelName(g.key), g);
      row.dataset.model = g.key;
      return row;
    }));
    const u = t.usage || {};
    document.querySelector('#by-model tfoot').replaceChildren(tr('Total', {
      cost: total, results: F.num(t.results),
      usage: { input_tokens: u.input_tokens, output_tokens: u.output_tokens, cache_read_input_tokens: u.cache_read_input_tokens, cache_creation_input_tokens: u.cache_creation_input_tokens },
    }, 'total'));
  }

  function projectTable(groups, t) {
    const total = F.num(t.total_cost_usd);
    const tbody = document.querySelector('#by-project tbody');
    tbody.replaceChildren(...groups.map((g) => {
      const row = el('tr');
      row.dataset.project = g.key;
      const name = el('td', 'name');
      if (g.key) {
        // The name filters the page to that project.
        const a = el('a', null, F.basename(g.key));
        a.href = '?' + queryOf(Object.assign({}, state, { project: g.key }));
        a.title = g.key;
        a.addEventListener('click', (e) => {
          e.preventDefault();
          go(Object.assign({}, state, { project: g.key }), true);
        });
        name.appendChild(a);
      } else {
        name.textContent = '(no project)';
      }
      row.appendChild(name);
      row.appendChild(el('td', 'num cost', F.usd(g.cost)));
      row.appendChild(el('td', 'num', share(g.cost, total)));
      const tok = el('td', 'num', F.tokens(F.totalTokens(g.usage)));
      tok.title = 'input ' + F.tokens(g.usage.input_tokens) + ', output ' + F.tokens(g.usage.output_tokens) +
        ', cache read ' + F.tokens(g.usage.cache_read_input_tokens) + ', cache write ' + F.tokens(g.usage.cache_creation_input_tokens);
      row.appendChild(tok);
      row.appendChild(el('td', 'num', F.tokens(g.results)));
      return row;
    }));
    const foot = el('tr', 'total');
    foot.appendChild(el('td', 'name', 'Total'));
    foot.appendChild(el('td', 'num cost', F.usd(total)));
    foot.appendChild(el('td', 'num', ''));
    foot.appendChild(el('td', 'num', F.tokens(F.totalTokens(t.usage))));
    foot.appendChild(el('td', 'num', F.tokens(t.results)));
    document.querySelector('#by-project tfoot').replaceChildren(foot);
  }

  // ---- the project select ---------------------------------------------------

  function noteProject(p) { if (typeof p === 'string' && p) projects.add(p); }

  function renderProjects() {
    ctl.project.replaceChildren(...F.projectOptions(projects));
    ctl.project.value = state.project;
  }

  // ---- controls -------------------------------------------------------------

  function rangeChanged() {
    let from = F.isDate(ctl.from.value) ? ctl.from.value : state.from;
    let to = F.isDate(ctl.to.value) ? ctl.to.value : state.to;
    if (from > to) [from, to] = [to, from];
    go(Object.assign({}, state, { from, to }), true);
  }
  ctl.from.addEventListener('change', rangeChanged);
  ctl.to.addEventListener('change', rangeChanged);
  ctl.project.addEventListener('change', () => go(Object.assign({}, state, { project: ctl.project.value }), true));
  $('range').addEventListener('submit', (e) => { e.preventDefault(); rangeChanged(); });
  for (const b of document.querySelectorAll('.presets button')) {
    b.addEventListener('click', () => {
      const to = F.utcDate(new Date());
      go(Object.assign({}, state, { from: F.addDays(to, -(Number(b.dataset.days) - 1)), to }), true);
    });
  }
  for (const b of document.querySelectorAll('.metric button')) {
    b.addEventListener('click', () => go(Object.assign({}, state, { metric: b.dataset.metric }), false));
  }
  window.addEventListener('popstate', () => {
    state = readURL();
    setControls();
    load();
  });

  setControls();
  load();
})();
