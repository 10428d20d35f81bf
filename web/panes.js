// One pane: a session's live transcript, its pending approvals and its composer.

import { h } from './dom.js';

const STATUS_LABEL = { idle: 'idle', pending: 'waiting for approval', busy: 'running' };

/**
 * @param {object} pane      layout pane {id, session, weight}
 * @param {object} ctx       {store, active, drafts, actions}
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
  fillApprovals(approvals, store.pendingFor(pane.session), pane.session, actions);
  el.append(transcript, approvals, composer(pane, ctx));
  requestAnimationFrame(() => { transcript.scrollTop = transcript.scrollHeight; });
  return el;
}

function composer(pane, { drafts, actions }) {
  const input = h('textarea', {
    class: 'composer-input',
    rows: 2,
    placeholder: 'Command for this session (Enter sends, Shift+Enter: new line)',
    'aria-label': 'Prompt',
    'data-testid': 'composer-input',
  });
  input.value = drafts.get(pane.id) ?? '';
  input.addEventListener('input', () => drafts.set(pane.id, input.value));
  const error = h('p', { class: 'composer-error', role: 'alert' });
  const form = h('form', { class: 'composer', 'data-testid': 'composer' },
    input, h('button', { type: 'submit', class: 'primary', text: 'Send' }), error);
  const submit = async () => {
    const text = input.value.trim();
    if (!text) return;
    error.textContent = '';
    try {
      await actions.prompt(pane.session, text);
      input.value = '';
      drafts.delete(pane.id);
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

export function fillApprovals(el, permissions, sessionId, actions) {
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
      onclick: () => actions.reply(sessionId, p.id, reply),
      text: label,
    }));
    el.append(h('div', { class: 'approval', role: 'group', 'aria-label': 'Approval needed', 'data-testid': 'approval' },
      h('p', { class: 'approval-title', text: 'The agent wants to run:' }),
      h('pre', { class: 'approval-command', text: p.command }),
      h('div', { class: 'approval-actions' }, buttons)));
  }
}
