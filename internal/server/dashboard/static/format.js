// Number, time and path formatting shared by the session list and the cost
// page (window.CRFmt), and the project filter both have. Pure functions but
// projectOptions, which makes elements (with window.CR.el) for the caller
// to place: nothing here touches the page.
'use strict';

window.CRFmt = (function () {
  // num, totalTokens and apiError are common.js's (loaded first on every
  // page), still offered here for the pages that read them from CRFmt.
  const { num, totalTokens, apiError } = window.CR;
  const ints = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
  const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 });
  // Dollars with 2 decimals, and up to 4 below $1 where cents hide the
  // differences that matter (one turn costs a few hundredths of a cent).
  const usdBig = new Intl.NumberFormat(undefined, { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 2 });
  const usdSmall = new Intl.NumberFormat(undefined, { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 4 });

  function usd(v) {
    v = num(v);
    return (Math.abs(v) >= 1 ? usdBig : usdSmall).format(v);
  }

  // usdAxis is for axis labels: short, whole cents at most.
  function usdAxis(v) {
    v = num(v);
    if (v >= 1000) return '$' + compact.format(v);
    return usdBig.format(v);
  }

  function tokens(v) { return ints.format(num(v)); }
  function tokensShort(v) { return compact.format(num(v)); }

  // basename of a working directory ("/work/app/" → "app"); Windows paths too.
  function basename(p) {
    if (!p) return '';
    const parts = String(p).split(/[\\/]+/).filter(Boolean);
    return parts.length ? parts[parts.length - 1] : String(p);
  }

  const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto', style: 'short' });
  const dayFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

  // relTime is "5 min. ago", "yesterday", or the date for anything older
  // than a week.
  function relTime(iso, now) {
    const t = Date.parse(iso || '');
    if (isNaN(t)) return '–';
    const s = Math.round((t - (now || Date.now())) / 1000);
    const a = Math.abs(s);
    if (a < 45) return 'just now';
    if (a < 3600) return rtf.format(Math.round(s / 60), 'minute');
    if (a < 86400) return rtf.format(Math.round(s / 3600), 'hour');
    if (a < 7 * 86400) return rtf.format(Math.round(s / 86400), 'day');
    return dayFmt.format(new Date(t));
  }

  function absTime(iso) {
    const d = new Date(iso || '');
    return isNaN(d) ? '' : d.toLocaleString();
  }

  // Dates as the API and the date inputs spell them (YYYY-MM-DD), in UTC:
  // the usage rows are UTC days.
  function utcDate(d) { return d.toISOString().slice(0, 10); }
  function addDays(ymd, n) {
    const d = new Date(ymd + 'T00:00:00Z');
    d.setUTCDate(d.getUTCDate() + n);
    return utcDate(d);
  }
  function isDate(s) { return /^\d{4}-\d{2}-\d{2}$/.test(s || '') && !isNaN(Date.parse(s + 'T00:00:00Z')); }

  // projectOptions is the project filter's options: "All projects" (value
  // ""), then every project path in projects (a Set) by its name, sorted by
  // name; a name two projects share shows the full path. Every title is the
  // path.
  function projectOptions(projects) {
    const el = window.CR.el;
    const list = Array.from(projects).sort((a, b) => basename(a).localeCompare(basename(b)) || a.localeCompare(b));
    const names = new Map();
    for (const p of list) names.set(basename(p), (names.get(basename(p)) || 0) + 1);
    const all = el('option', null, 'All projects');
    all.value = '';
    const opts = [all];
    for (const p of list) {
      const o = el('option', null, names.get(basename(p)) > 1 ? p : basename(p));
      o.value = p;
      o.title = p;
      opts.push(o);
    }
    return opts;
  }

  return { num, usd, usdAxis, tokens, tokensShort, totalTokens, basename, relTime, absTime, utcDate, addDays, isDate, projectOptions, apiError };
})();
