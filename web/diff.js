// A unified line diff of an edit (oldText → newText), computed in the page and shown as text:
// every line goes in with textContent, coloured by a class.

import { h } from './dom.js';

/** Lines of context around each change. */
const CONTEXT = 3;
/** Above this many cells (changed old lines × changed new lines) no LCS is computed: the
 *  changed middle is shown as removed, then added. */
const MAX_CELLS = 4_000_000;
/** Lines shown before a "show all" button. */
const SHOWN_LINES = 400;

function lines(text) {
  if (typeof text !== 'string' || text === '') return [];
  const out = text.split('\n');
  if (out[out.length - 1] === '') out.pop();
  return out;
}

/** The edit as operations: [' ' | '-' | '+', line]. */
export function diffLines(oldText, newText) {
  const a = lines(oldText);
  const b = lines(newText);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start += 1;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA -= 1;
    endB -= 1;
  }
  const ops = a.slice(0, start).map((l) => [' ', l]);
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const n = midA.length;
  const m = midB.length;
  if (n > 0 && m > 0 && n * m <= MAX_CELLS) {
    // LCS lengths of the suffixes, then one walk forward.
    const w = m + 1;
    const len = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i -= 1) {
      for (let j = m - 1; j >= 0; j -= 1) {
        len[i * w + j] = midA[i] === midB[j]
          ? len[(i + 1) * w + j + 1] + 1
          : Math.max(len[(i + 1) * w + j], len[i * w + j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (midA[i] === midB[j]) {
        ops.push([' ', midA[i]]);
        i += 1;
        j += 1;
      } else if (len[(i + 1) * w + j] >= len[i * w + j + 1]) {
        ops.push(['-', midA[i]]);
        i += 1;
      } else {
        ops.push(['+', midB[j]]);
        j += 1;
      }
    }
    for (; i < n; i += 1) ops.push(['-', midA[i]]);
    for (; j < m; j += 1) ops.push(['+', midB[j]]);
  } else {
    for (const l of midA) ops.push(['-', l]);
    for (const l of midB) ops.push(['+', l]);
  }
  for (const l of a.slice(endA)) ops.push([' ', l]);
  return ops;
}

/**
 * The unified diff's lines: hunk headers ('@') and the changed lines with context. `first` is
 * the line of the file `oldText` starts at (an agent may send only the edited part of a file,
 * with its start line, docs/control-ui.md §3), so hunks are numbered as in the file.
 */
export function unifiedLines(oldText, newText, first = 1) {
  const ops = diffLines(oldText, newText);
  const changed = ops.map(([op]) => op !== ' ');
  const keep = ops.map((_, k) => {
    for (let d = -CONTEXT; d <= CONTEXT; d += 1) if (changed[k + d]) return true;
    return false;
  });
  const out = [];
  const start = Number.isInteger(first) && first > 0 ? first : 1;
  let oldNo = start;
  let newNo = start;
  let k = 0;
  while (k < ops.length) {
    if (!keep[k]) {
      if (ops[k][0] !== '+') oldNo += 1;
      if (ops[k][0] !== '-') newNo += 1;
      k += 1;
      continue;
    }
    let end = k;
    while (end < ops.length && keep[end]) end += 1;
    const hunk = ops.slice(k, end);
    const oldLen = hunk.filter(([op]) => op !== '+').length;
    const newLen = hunk.filter(([op]) => op !== '-').length;
    out.push(['@', `@@ -${oldLen ? oldNo : oldNo - 1},${oldLen} +${newLen ? newNo : newNo - 1},${newLen} @@`]);
    for (const [op, l] of hunk) {
      out.push([op, l]);
      if (op !== '+') oldNo += 1;
      if (op !== '-') newNo += 1;
    }
    k = end;
  }
  return out;
}

const CLASS = { '@': 'diff-hunk', '-': 'diff-del', '+': 'diff-add', ' ': 'diff-ctx' };

/**
 * A coloured unified diff of one file (`oldText` null or absent: a new file); `first` is the
 * file's line `oldText` starts at.
 */
export function diffView(path, oldText, newText, first = 1) {
  const rows = unifiedLines(oldText ?? '', newText ?? '', first);
  const added = rows.filter(([op]) => op === '+').length;
  const removed = rows.filter(([op]) => op === '-').length;
  const head = h('div', { class: 'diff-head' },
    h('span', { class: 'diff-path', text: String(path ?? '') }),
    h('span', { class: 'diff-stat' },
      oldText === null || oldText === undefined ? h('span', { class: 'muted', text: 'new file ' }) : null,
      h('span', { class: 'diff-add-n', text: `+${added}` }), ' ',
      h('span', { class: 'diff-del-n', text: `−${removed}` })));
  const pre = h('pre', { class: 'diff', 'data-testid': 'diff' });
  const show = (count) => {
    pre.replaceChildren(...rows.slice(0, count).map(([op, l]) => h('span', {
      class: `diff-line ${CLASS[op]}`,
      text: `${op === '@' ? '' : op}${l}\n`,
    })));
  };
  show(SHOWN_LINES);
  const box = h('div', { class: 'diff-box' }, head, pre);
  if (rows.length > SHOWN_LINES) {
    const more = h('button', { type: 'button', class: 'small', text: `Show all ${rows.length} lines` });
    more.addEventListener('click', () => {
      show(rows.length);
      more.remove();
    });
    box.append(more);
  }
  if (rows.length === 0) pre.append(h('span', { class: 'diff-line diff-ctx', text: '(no change)' }));
  return box;
}

/**
 * A unified diff the agent sent as text (Codex's `unified_diff`) for one file: each line as
 * text, coloured by its first character.
 */
export function unifiedTextView(path, text) {
  const rows = String(text ?? '').split('\n');
  if (rows.length && rows[rows.length - 1] === '') rows.pop();
  const op = (l) => (l.startsWith('@@') ? '@' : l.startsWith('+') && !l.startsWith('+++') ? '+' : l.startsWith('-') && !l.startsWith('---') ? '-' : ' ');
  const added = rows.filter((l) => op(l) === '+').length;
  const removed = rows.filter((l) => op(l) === '-').length;
  const pre = h('pre', { class: 'diff', 'data-testid': 'diff' },
    rows.slice(0, SHOWN_LINES).map((l) => h('span', { class: `diff-line ${CLASS[op(l)]}`, text: `${l}\n` })));
  return h('div', { class: 'diff-box' },
    h('div', { class: 'diff-head' },
      h('span', { class: 'diff-path', text: String(path ?? '') }),
      h('span', { class: 'diff-stat' },
        h('span', { class: 'diff-add-n', text: `+${added}` }), ' ',
        h('span', { class: 'diff-del-n', text: `−${removed}` }))),
    pre,
    rows.length > SHOWN_LINES ? h('p', { class: 'note', text: `… ${rows.length - SHOWN_LINES} more lines not shown` }) : null);
}
