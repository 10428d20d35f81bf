// One pane: a session's live transcript, its pending approvals and its composer.

import { h } from './dom.js';
import { splitWeights } from './layout.js';

const STATUS_LABEL = { idle: 'idle', pending: 'waiting for approval', busy: 'running' };
/** Approval buttons ignore clicks this long after what the pane shows changed or moved. */
export const ARM_MS = 500;

/**
 * @param {object} pane      layout pane {id, session, weight}
 * @param {object} ctx       {store, active, drafts, actions, count (panes in the layout)}
 */
export function renderPane(pane, ctx) {
  const { store, actions } = ctx;
  const session = pane.session ? store.sessions.get(pane.session) : null;
  const title = pane.session
    ? session?.title || (store.missing.has(pane.session) ? 'Session not found' : pane.session)
    : 'No session';
  const el = h('section', {
    class: `pane${ctx.active ? ' active' : ''}`,
    'data-testid': 'pane',
    'data-pane-id': pane.id,
    'data-session': pane.session ?? '',
    'data-active': ctx.active ? 'true' : 'false',
    'aria-label': `Pane: ${title}`,
    style: { flexGrow: String(pane.weight) },
  });
  el.addEventListener('pointerdown', () => actions.activate(pane.id), { capture: true });
  el.addEventListener('focusin', () => actions.activate(pane.id));

  const status = session?.status ?? null;
  el.append(
    h('header', { class: 'pane-head' },
      h('span', { class: `dot status-${status ?? 'none'}`, title: STATUS_LABEL[status] ?? '' }),
      h('h2', { class: 'pane-title', title: pane.session ?? '' , text: title }),
      status && status !== 'idle' ? h('span', { class: 'badge', text: STATUS_LABEL[status] }) : null,
      h('div', { class: 'pane-actions' },
        status === 'busy'
          ? h('button', { class: 'icon', type: 'button', title: 'Stop the running command', 'aria-label': 'Abort', onclick: () => actions.abort(pane.session), text: '■' })
          : null,
        h('button', { class: 'icon', type: 'button', title: 'Split right', 'aria-label': 'Split right', onclick: () => actions.split(pane.id, 'right'), text: '◫' }),
        h('button', { class: 'icon', type: 'button', title: 'Split down', 'aria-label': 'Split down', onclick: () => actions.split(pane.id, 'down'), text: '⬓' }),
        h('button', { class: 'icon', type: 'button', title: 'Close pane', 'aria-label': 'Close pane', onclick: () => actions.close(pane.id), text: '✕' }),
        // A narrow window shows only the active pane: this reaches the others.
        ctx.count > 1
          ? h('button', { class: 'icon narrow-only', type: 'button', title: 'Next pane (Alt+])', 'aria-label': 'Next pane', 'data-testid': 'next-pane', onclick: () => actions.focusNext(1), text: '⇥' })
          : null,
      ),
    ),
  );

  if (!pane.session) {
    el.append(h('div', { class: 'pane-empty' },
      h('p', { text: 'Pick a session in the sidebar, or start a new one.' }),
      h('button', { type: 'button', class: 'primary', onclick: () => actions.createInPane(pane.id), text: 'New session' })));
    return el;
  }

  const transcript = h('div', { class: 'transcript', role: 'log', 'aria-live': 'polite', 'data-testid': 'transcript' });
  fillTranscript(transcript, store.messages.get(pane.session));
  const approvals = h('div', { class: 'approvals', 'data-testid': 'approvals' });
  fillApprovals(approvals, store.pendingFor(pane.session), pane.session, actions, true);
  el.append(transcript, approvals, composer(pane, ctx));
  requestAnimationFrame(() => { transcript.scrollTop = transcript.scrollHeight; });
  return el;
}

/** The composers showing `session` other than `except`. */
function composersOf(session, except) {
  return [...document.querySelectorAll('[data-testid="composer-input"]')]
    .filter((el) => el !== except && el.dataset.session === session);
}

function composer(pane, { drafts, actions }) {
  // The session this composer was made for: its draft and its prompt go there, whatever the
  // pane shows later.
  const session = pane.session;
  const input = h('textarea', {
    class: 'composer-input',
    rows: 2,
    placeholder: 'Command for this session (Enter sends, Shift+Enter: new line)',
    'aria-label': 'Prompt',
    'data-testid': 'composer-input',
    'data-session': session,
  });
  input.value = drafts.get(session) ?? '';
  input.addEventListener('input', () => {
    if (input.value) drafts.set(session, input.value);
    else drafts.delete(session);
    for (const other of composersOf(session, input)) other.value = input.value;
  });
  const error = h('p', { class: 'composer-error', role: 'alert' });
  const form = h('form', { class: 'composer', 'data-testid': 'composer' },
    input, h('button', { type: 'submit', class: 'primary', text: 'Send' }), error);
  const submit = async () => {
    const text = input.value.trim();
    if (!text) return;
    error.textContent = '';
    try {
      await actions.prompt(session, text);
      input.value = '';
      drafts.delete(session);
      for (const other of composersOf(session, input)) other.value = '';
    } catch (e) {
      error.textContent = e.message;
    }
  };
  form.addEventListener('submit', (ev) => { ev.preventDefault(); submit(); });
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      submit();
    }
  });
  return form;
}

export function fillTranscript(el, messages) {
  const nearBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
  el.replaceChildren();
  if (!messages) {
    el.append(h('p', { class: 'muted', text: 'Loading…' }));
    return;
  }
  if (messages.length === 0) {
    el.append(h('p', { class: 'muted', text: 'No messages yet. Send a command below; it runs after you approve it.' }));
  }
  for (const m of messages) {
    const body = h('div', { class: 'msg-body' });
    for (const part of m.parts ?? []) body.append(renderPart(part));
    el.append(h('article', { class: `msg role-${m.role}`, 'data-testid': 'message' },
      h('div', { class: 'msg-role', text: m.role === 'user' ? 'You' : 'Agent' }), body));
  }
  if (nearBottom) el.scrollTop = el.scrollHeight;
}

function renderPart(part) {
  switch (part?.type) {
    case 'text':
      return h('pre', { class: 'part-text', text: part.text });
    case 'file':
      return h('span', { class: 'chip', text: `📎 ${part.path}` });
    case 'output':
      return h('span', { class: `part-output ${part.stream}`, text: part.text });
    case 'truncated':
      return h('p', { class: 'note', text: `… output truncated (${part.droppedBytes} bytes dropped)` });
    case 'exit':
      if (part.signal !== undefined && part.signal !== null) return h('p', { class: 'note bad', text: `killed by signal ${part.signal}` });
      return h('p', { class: `note ${part.code === 0 ? 'ok' : 'bad'}`, text: `exit ${part.code}` });
    case 'rejected':
      return h('p', { class: 'note bad', text: 'rejected: nothing ran' });
    case 'aborted':
      return h('p', { class: 'note bad', text: 'aborted' });
    case 'interrupted':
      return h('p', { class: 'note bad', text: 'interrupted by a restart' });
    default:
      return h('span', { class: 'muted', text: '' });
  }
}

/**
 * The pending approvals of one session in its pane. A click that lands within ARM_MS of the
 * approvals changing (or of the pane being drawn anew, e.g. after the layout moved) is ignored
 * and said so: the pointer may rest where another approval's button just appeared.
 * `fresh` says the pane was just drawn.
 */
export function fillApprovals(el, permissions, sessionId, actions, fresh = false) {
  const signature = permissions.map((p) => p.id).join(',');
  if (fresh || el.dataset.signature !== signature) {
    el.dataset.signature = signature;
    const shownAt = performance.now();
    el.dataset.shownAt = String(shownAt);
    el.dataset.armed = 'false';
    setTimeout(() => {
      if (el.dataset.shownAt === String(shownAt)) el.dataset.armed = 'true';
    }, ARM_MS);
  }
  el.replaceChildren();
  for (const p of permissions) {
    const buttons = [
      ['once', 'Allow once', 'primary'],
      ['always', 'Always allow', ''],
      ['reject', 'Reject', 'danger'],
    ].map(([reply, label, cls]) => h('button', {
      type: 'button',
      class: cls,
      'data-testid': `approve-${reply}`,
      onclick: () => {
        if (performance.now() - Number(el.dataset.shownAt) < ARM_MS) {
          actions.toast('Click ignored: this approval just appeared or moved. Read it, then click again.');
          return;
        }
        actions.reply(sessionId, p.id, reply);
      },
      text: label,
    }));
    const attachments = Array.isArray(p.attachments)
      ? p.attachments.filter((a) => typeof a === 'string')
      : [];
    el.append(h('div', { class: 'approval', role: 'group', 'aria-label': 'Approval needed', 'data-testid': 'approval' },
      h('p', { class: 'approval-title', text: 'The agent wants to run:' }),
      h('pre', { class: 'approval-command', text: p.command }),
      attachments.length
        ? h('div', { class: 'approval-attachments', 'data-testid': 'approval-attachments' },
          h('span', { class: 'muted', text: 'With the files:' }),
          attachments.map((a) => h('span', { class: 'chip', 'data-testid': 'approval-attachment', text: a })))
        : null,
      h('div', { class: 'approval-actions' }, buttons)));
  }
}

/** Arrow keys move a focused splitter by this many pixels. */
const SPLITTER_STEP = 32;

/**
 * A splitter between two neighbours: columns (`kind` 'col', dragged sideways) or panes in a
 * column ('row', dragged up and down). Dragging (pointer events, captured) or the arrow keys
 * resize the elements on either side live; `onCommit(growA, growB)` gets their new weights
 * once the drag ends. `weights()` gives the pair's weights now, `min` their smallest size.
 */
export function splitter({ kind, label, weights, onCommit, min }) {
  const vertical = kind === 'col';
  const el = h('div', {
    class: `splitter splitter-${kind}`,
    role: 'separator',
    tabindex: 0,
    'aria-orientation': vertical ? 'vertical' : 'horizontal',
    'aria-label': label,
    title: `${label} (drag, or arrow keys)`,
    'data-testid': 'splitter',
    'data-kind': kind,
  });
  const size = (node) => {
    const r = node.getBoundingClientRect();
    return vertical ? r.width : r.height;
  };
  const pair = () => [el.previousElementSibling, el.nextElementSibling];
  let drag = null;
  const move = (delta) => {
    const [a, b] = pair();
    if (!a || !b) return null;
    const [wa, wb] = weights();
    const [na, nb] = splitWeights(wa, wb, drag?.sizeA ?? size(a), drag?.sizeB ?? size(b), delta, min);
    a.style.flexGrow = String(na);
    b.style.flexGrow = String(nb);
    return [na, nb];
  };
  el.addEventListener('pointerdown', (ev) => {
    if (ev.button !== 0) return;
    const [a, b] = pair();
    if (!a || !b) return;
    ev.preventDefault();
    el.setPointerCapture(ev.pointerId);
    drag = { start: vertical ? ev.clientX : ev.clientY, sizeA: size(a), sizeB: size(b), last: null };
    el.dataset.dragging = 'true';
  });
  el.addEventListener('pointermove', (ev) => {
    if (!drag) return;
    drag.last = move((vertical ? ev.clientX : ev.clientY) - drag.start);
  });
  const end = () => {
    if (!drag) return;
    const last = drag.last;
    drag = null;
    delete el.dataset.dragging;
    if (last) onCommit(...last);
  };
  el.addEventListener('pointerup', end);
  el.addEventListener('pointercancel', end);
  el.addEventListener('keydown', (ev) => {
    const keys = vertical ? { ArrowLeft: -1, ArrowRight: 1 } : { ArrowUp: -1, ArrowDown: 1 };
    const dir = keys[ev.key];
    if (!dir) return;
    ev.preventDefault();
    const done = move(dir * SPLITTER_STEP);
    if (done) onCommit(...done);
  });
  return el;
}
