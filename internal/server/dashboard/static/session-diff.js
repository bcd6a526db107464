// Line diffs for Edit, MultiEdit and Write cards: a longest-common-
// subsequence diff of the lines between the common prefix and suffix,
// bounded so a huge edit costs a fixed amount of work (past the bound the
// middle shows as all removed, then all added, which is still a correct
// diff, only not a minimal one).
'use strict';

window.CRDiff = (function () {
  const MAX_CELLS = 1000000; // LCS table cells; 1000 x 1000 lines
  const MAX_LINES = 5000;    // lines per side considered at all
  const CONTEXT = 3;         // unchanged lines kept around a change

  function split(s) {
    if (typeof s !== 'string' || s === '') return [];
    const lines = s.split('\n');
    if (lines[lines.length - 1] === '') lines.pop(); // a final newline ends a line, it adds none
    return lines;
  }

  // ops returns [{op: ' '|'-'|'+', text}] turning a into b.
  function ops(a, b) {
    const out = [];
    let pre = 0;
    while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
    let suf = 0;
    while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
    for (let i = 0; i < pre; i++) out.push({ op: ' ', text: a[i] });
    const x = a.slice(pre, a.length - suf);
    const y = b.slice(pre, b.length - suf);
    if (x.length * y.length > MAX_CELLS) {
      for (const t of x) out.push({ op: '-', text: t });
      for (const t of y) out.push({ op: '+', text: t });
    } else {
      lcs(x, y, out);
    }
    for (let i = a.length - suf; i < a.length; i++) out.push({ op: ' ', text: a[i] });
    return out;
  }

  // lcs appends the diff of x and y from a table of common-subsequence
  // lengths of their suffixes.
  function lcs(x, y, out) {
    const n = x.length, m = y.length, w = m + 1;
    const t = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        t[i * w + j] = x[i] === y[j] ? t[(i + 1) * w + j + 1] + 1 : Math.max(t[(i + 1) * w + j], t[i * w + j + 1]);
      }
    }
    let i = 0, j = 0;
    while (i < n && j < m) {
      if (x[i] === y[j]) { out.push({ op: ' ', text: x[i] }); i++; j++; }
      else if (t[(i + 1) * w + j] >= t[i * w + j + 1]) { out.push({ op: '-', text: x[i] }); i++; }
      else { out.push({ op: '+', text: y[j] }); j++; }
    }
    for (; i < n; i++) out.push({ op: '-', text: x[i] });
    for (; j < m; j++) out.push({ op: '+', text: y[j] });
  }

  // diff returns the lines of a diff from before to after, long unchanged
  // runs folded into {op: '…', count} markers.
  function diff(before, after) {
    let a = split(before), b = split(after);
    let clipped = 0;
    if (a.length > MAX_LINES || b.length > MAX_LINES) {
      clipped = Math.max(a.length, b.length) - MAX_LINES;
      a = a.slice(0, MAX_LINES);
      b = b.slice(0, MAX_LINES);
    }
    const all = ops(a, b);
    const out = [];
    let i = 0;
    while (i < all.length) {
      if (all[i].op !== ' ') { out.push(all[i++]); continue; }
      let j = i;
      while (j < all.length && all[j].op === ' ') j++;
      const run = j - i;
      const head = i === 0 ? 0 : CONTEXT;          // after a change
      const tail = j === all.length ? 0 : CONTEXT; // before a change
      if (run > head + tail + 1) {
        for (let k = i; k < i + head; k++) out.push(all[k]);
        out.push({ op: '…', count: run - head - tail });
        for (let k = j - tail; k < j; k++) out.push(all[k]);
      } else {
        for (let k = i; k < j; k++) out.push(all[k]);
      }
      i = j;
    }
    if (clipped > 0) out.push({ op: '…', count: clipped, clipped: true });
    return out;
  }

  return { diff, split, ops };
})();
