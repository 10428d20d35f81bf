// Unit tests of the pure layout model's screen-tool parts (web/layout.js): the report, paneId
// addressing, presets and `arrange` under human priority. Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  GUARDED, QUIET_MS, STORAGE_KEY, applyCommand, arrange, busyReason, defaultLayout, describeCommand, layoutReport, presetSpec,
  restoreLayout, sanitizeSpec, savedSpec,
} from '../../web/layout.js';

const A = 'ses_a', B = 'ses_b', C = 'ses_c', D = 'ses_d';

function twoCols() {
  const l = defaultLayout();
  l.columns[0].panes[0].session = A;
  return applyCommand(l, { command: { kind: 'split', direction: 'right', sessionKey: B } }).layout;
}

test('the report lists panes in order with positions, sizes and the panels', () => {
  const l = applyCommand(twoCols(), { command: { kind: 'split', direction: 'down', sessionKey: C, paneId: 'p1' } }).layout;
  const r = layoutReport(l, 7);
  assert.equal(r.revision, 7);
  assert.deepEqual(r.panes.map((p) => [p.paneId, p.sessionId, p.column, p.row, p.active]),
    [['p1', A, 0, 0, false], ['p3', C, 0, 1, true], ['p2', B, 1, 0, false]]);
  assert.deepEqual(r.panes.map((p) => p.size), [0.25, 0.25, 0.5]);
  assert.deepEqual(r.terminal, { shown: false, dock: 'bottom' });
  assert.deepEqual(Object.keys(r).sort(), ['browser', 'panes', 'revision', 'sidebar', 'terminal']);
});

test('paneId names the pane; a missing one is reported, never another pane', () => {
  const l = twoCols();
  const f = applyCommand(l, { command: { kind: 'focus', paneId: 'p1' } });
  assert.equal(f.layout.active, 'p1');
  const n = applyCommand(l, { command: { kind: 'navigate', paneId: 'p1', sessionKey: C } });
  assert.deepEqual(n.layout.columns.map((c) => c.panes[0].session), [C, B]);
  assert.equal(n.layout.active, 'p2');
  const gone = applyCommand(l, { command: { kind: 'close-pane', paneId: 'p9' } });
  assert.equal(gone.outcome, 'ignored');
  assert.match(gone.reason, /no pane p9/);
  const closed = applyCommand(l, { command: { kind: 'close-pane', paneId: 'p2' } });
  assert.equal(closed.layout.columns.length, 1);
});

test('presets', () => {
  const l = twoCols();
  assert.deepEqual(presetSpec(l, 'focus'), { columns: [[B]], sidebar: false });
  assert.deepEqual(presetSpec(l, 'review', [A]), { columns: [[A]], terminal: { open: true, dock: 'right' } });
  assert.deepEqual(presetSpec(l, 'pair'), { columns: [[B], [A]] });
  assert.deepEqual(presetSpec(l, 'grid', [A, B, C, D]), { columns: [[A, C], [B, D]] });
  assert.deepEqual(presetSpec(l, 'grid', [A, B, C]), { columns: [[A, C], [B]] });
  assert.ok(presetSpec(defaultLayout(), 'pair').error);
  assert.ok(presetSpec(l, 'tiles').error);
});

test('arrange keeps pane IDs it can and follows the panels', () => {
  const l = twoCols();
  const r = arrange(l, presetSpec(l, 'grid', [A, B, C, D]), () => null);
  assert.equal(r.outcome, 'applied');
  assert.deepEqual(r.notApplied, []);
  assert.deepEqual(r.layout.columns.map((c) => c.panes.map((p) => [p.id, p.session])),
    [[['p1', A], ['p3', C]], [['p2', B], ['p4', D]]]);
  const review = arrange(l, presetSpec(l, 'review', [A]), () => null);
  assert.deepEqual(review.layout.panels.terminal, { open: true, dock: 'right' });
  assert.equal(review.layout.columns.length, 1);
  assert.equal(review.layout.active, 'p1');
});

test('a pane the person uses is never moved, closed or replaced', () => {
  const l = twoCols();
  const using = (p) => (p.id === 'p2' ? 'a draft in its composer' : null);
  // focus on A would close p2: the panes stay, the sidebar still hides, p2 is reported.
  const r = arrange(l, presetSpec(l, 'focus', [A]), using);
  assert.equal(r.outcome, 'applied');
  assert.equal(r.layout.columns.length, 2);
  assert.equal(r.layout.sidebar, false);
  assert.deepEqual(r.notApplied, [{ paneId: 'p2', reason: 'left as it is: a draft in its composer' }]);
  // Nothing else to change: ignored, with the pane said.
  const l2 = structuredClone(l);
  const pair = arrange(l2, presetSpec(l2, 'pair', [B, A]), using);
  assert.equal(pair.outcome, 'ignored');
  assert.equal(pair.layout, l2);
  assert.equal(pair.notApplied[0].paneId, 'p2');
  // A grid that keeps p2 where it is goes ahead.
  const grid = arrange(l, presetSpec(l, 'grid', [A, B, C]), using);
  assert.deepEqual(grid.notApplied, []);
  assert.equal(grid.layout.columns[1].panes[0].id, 'p2');
});

test('saved specs round-trip and bad ones are refused', () => {
  const l = twoCols();
  const spec = sanitizeSpec(JSON.parse(JSON.stringify(savedSpec(l))));
  const r = arrange(defaultLayout(), spec, () => null);
  assert.deepEqual(r.layout.columns.map((c) => c.panes.map((p) => p.session)), [[A], [B]]);
  assert.deepEqual(r.layout.columns.map((c) => c.weight), [0.5, 0.5]);
  assert.equal(sanitizeSpec({ columns: [] }), null);
  assert.equal(sanitizeSpec({ columns: [[1]] }), null);
  assert.equal(sanitizeSpec('x'), null);
});

/** A person with nothing under their hands at time 10 000 ms, changed by `extra`. */
function person(extra = {}) {
  return {
    pickerOpen: false, inboxOpen: false, hasDraft: () => false, hasApproval: () => false, inputAt: new Map(), now: 10_000,
    ...extra,
  };
}

test('human priority: picker, inbox, drafts, approvals and recent input, in that order', () => {
  const pa = { id: 'p1', session: A }, pb = { id: 'p2', session: B }, empty = { id: 'p3', session: null };
  assert.equal(busyReason([pa, pb], [pa, pb], person()), null);
  assert.equal(busyReason([pa], [pa], person({ pickerOpen: true, inboxOpen: true })), 'the person is choosing the agent of a new session');
  assert.equal(busyReason([], [], person({ inboxOpen: true })), 'the person is answering approvals in the inbox');
  const drafts = person({ hasDraft: (s) => s === B, hasApproval: (s) => s === A });
  assert.equal(busyReason([pa, pb], [pa, pb], drafts), `the pane showing ${B} has a draft in its composer`,
    'a draft anywhere among the drafted panes comes before an approval');
  assert.equal(busyReason([pa, pb], [pa], drafts), `the pane showing ${A} shows an approval`,
    'a draft outside `drafted` does not count');
  const recent = person({ inputAt: new Map([['p3', 10_000 - QUIET_MS + 1], ['p1', 10_000 - QUIET_MS]]) });
  assert.equal(busyReason([pa], [pa], recent), null, 'input exactly QUIET_MS ago is quiet again');
  assert.equal(busyReason([pa, empty], [pa, empty], recent), 'the person used pane p3 in the last 1.5 s');
  assert.deepEqual([...GUARDED].sort(), ['close-pane', 'focus', 'navigate', 'split']);
});

test('an agent\'s layout command is worded for the toast', () => {
  assert.equal(describeCommand({ kind: 'split', direction: 'right' }), 'split right');
  assert.equal(describeCommand({ kind: 'close-pane' }), 'close pane');
  assert.equal(describeCommand({ kind: 'focus' }), 'focus');
  assert.equal(describeCommand({ kind: 'navigate', sessionKey: A }), 'open session');
  assert.equal(describeCommand({ kind: 'sidebar', visible: false }), 'hide sidebar');
  assert.equal(describeCommand({ kind: 'panel', panel: 'terminal', open: true, dock: 'right' }), 'show terminal (right)');
  assert.equal(describeCommand({ kind: 'panel', panel: 'browser', open: false }), 'hide browser');
  assert.equal(describeCommand({ kind: 'dance' }), 'dance');
  assert.equal(describeCommand(undefined), 'undefined');
});

/** A Storage-like object holding `layout` (a value, or raw text) under the layout key. */
function storage(layout) {
  return { getItem: (key) => (key === STORAGE_KEY && layout !== undefined ? (typeof layout === 'string' ? layout : JSON.stringify(layout)) : null) };
}

test('a tab opens with its own layout, else the last one saved, else the default', () => {
  const own = twoCols();
  const other = defaultLayout();
  other.columns[0].panes[0].session = C;
  assert.deepEqual(restoreLayout(storage(own), storage(other), false), { layout: own, fresh: false });
  assert.deepEqual(restoreLayout(storage(), storage(other), false), { layout: other, fresh: false });
  assert.deepEqual(restoreLayout(storage(), storage(), false), { layout: defaultLayout(), fresh: true });
  // Unreadable storage, text that is not JSON, a layout that is not one: passed over or reset.
  const broken = { getItem: () => { throw new Error('disabled'); } };
  assert.deepEqual(restoreLayout(broken, storage(other), false).layout, other);
  assert.deepEqual(restoreLayout(storage('{not json'), storage(), false), { layout: defaultLayout(), fresh: true });
  assert.deepEqual(restoreLayout(storage({ version: 9 }), storage(other), false), { layout: defaultLayout(), fresh: false },
    'a stored layout that is not one is the default, not the next storage');
});

test('a narrow window opens on the pane, unless the tab itself left the sidebar open', () => {
  const open = twoCols();
  assert.equal(open.sidebar, true);
  assert.equal(restoreLayout(storage(open), storage(), true).layout.sidebar, true, 'the tab\'s own choice stays');
  assert.equal(restoreLayout(storage(), storage(open), true).layout.sidebar, false);
  assert.equal(restoreLayout(storage(), storage(), true).layout.sidebar, false);
  assert.equal(restoreLayout(storage(), storage(open), false).layout.sidebar, true);
});
