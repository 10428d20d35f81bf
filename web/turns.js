// The parts of an ACP agent's turn in a transcript (docs/agents.md §4), and the approval card
// of a pending permission (§5). Every string an agent sent goes in with textContent; agent
// text as Markdown goes through markdown.js (never HTML).

import { h } from './dom.js';
import { diffView } from './diff.js';

const KIND_LABEL = {
  read: 'Read', edit: 'Edit', delete: 'Delete', move: 'Move', search: 'Search', execute: 'Run',
  think: 'Think', fetch: 'Fetch', switch_mode: 'Mode', other: 'Tool',
};
const STATUS_LABEL = {
  pending: 'pending', in_progress: 'running', completed: 'done', failed: 'failed', cancelled: 'cancelled',
};
const NOTICE_ICON = { usage: '∑', mode: '⇄', auth: '🔑', error: '⚠', stop: '■', info: 'ℹ' };
const NOTICE_LABEL = { usage: 'Usage', mode: 'Mode', auth: 'Sign-in needed', error: 'Error', stop: 'Stopped', info: 'Note' };
const PLAN_MARK = { pending: '☐', in_progress: '◐', completed: '☑' };

const str = (v) => (typeof v === 'string' ? v : '');
const list = (v) => (Array.isArray(v) ? v : []);

/** A status mark: a spinner while open, ✓ / ✗ / ⊘ when done. */
export function statusMark(status) {
  if (status === 'pending' || status === 'in_progress') {
    return h('span', { class: 'spinner', role: 'img', 'aria-label': STATUS_LABEL[status] });
  }
  const mark = { completed: '✓', failed: '✗', cancelled: '⊘' }[status] ?? '•';
  return h('span', { class: `mark mark-${status}`, 'aria-hidden': 'true', text: mark });
}

/** The command of a tool call's input, if it has one (the whole of it, newlines kept). */
function commandOf(rawInput) {
  if (typeof rawInput === 'string') return rawInput;
  if (rawInput && typeof rawInput === 'object') {
    for (const k of ['command', 'cmd']) {
      const v = rawInput[k];
      if (typeof v === 'string') return v;
      if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v.join(' ');
    }
  }
  return null;
}

/** A tool call's input as text: its command, else the JSON the agent sent. */
function inputView(rawInput) {
  if (rawInput === undefined || rawInput === null) return null;
  const command = commandOf(rawInput);
  const text = command ?? JSON.stringify(rawInput, null, 2);
  return h('div', { class: 'tool-section' },
    h('div', { class: 'tool-label', text: command !== null ? 'Command' : 'Input' }),
    h('pre', { class: 'tool-pre tool-input', 'data-testid': 'tool-input', text }));
}

function outputView(rawOutput) {
  if (rawOutput === undefined || rawOutput === null) return null;
  const text = typeof rawOutput === 'string' ? rawOutput : JSON.stringify(rawOutput, null, 2);
  return h('div', { class: 'tool-section' },
    h('div', { class: 'tool-label', text: 'Output' }),
    h('pre', { class: 'tool-pre tool-output', 'data-testid': 'tool-output', text }));
}

/** One item of a tool call's content: text, a diff, or a terminal. */
function contentView(item) {
  switch (item?.type) {
    case 'diff':
      return diffView(item.path, item.oldText, item.newText);
    case 'terminal':
      return terminalView(item);
    case 'text':
      return h('pre', { class: 'tool-pre tool-text', 'data-testid': 'tool-text', text: str(item.text) });
    default:
      return null;
  }
}

/**
 * Terminal output as plain text: escape sequences (colours included) are removed, a `\r`
 * overwrites its line from the start, a backspace removes a character. Never markup.
 */
export function terminalText(raw) {
  // CSI (ESC [ … final), OSC (ESC ] … BEL or ESC \), and two-character escapes.
  const plain = raw
    .replace(/\x1b\[[0-?]*[ -\/]*[@-~]/g, '')
    .replace(/\x1b\][^\x07\x1b]*(\x07|\x1b\\)?/g, '')
    .replace(/\x1b[@-_]/g, '')
    .replace(/[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]/g, '');
  return plain.split('\n').map((line) => {
    const parts = line.split('\r');
    // The last non-empty overwrite wins, with what it did not cover (as a terminal shows it).
    let shown = '';
    for (const p of parts) shown = p + shown.slice(p.length);
    return shown;
  }).join('\n');
}

/** A terminal's card section: its state, and its output as text. */
function terminalView(item) {
  const exit = isObject(item.exit) ? item.exit : null;
  let state = 'running';
  if (exit) state = typeof exit.signal === 'string' ? `killed by ${exit.signal}` : Number.isInteger(exit.exitCode) ? `exit ${exit.exitCode}` : 'ended';
  const dropped = Number.isInteger(item.droppedBytes) && item.droppedBytes > 0 ? item.droppedBytes : 0;
  return h('div', { class: 'tool-section', 'data-testid': 'tool-terminal', 'data-terminal-id': str(item.terminalId), 'data-state': exit ? 'exited' : 'running' },
    h('div', { class: 'tool-label', text: `Terminal ${str(item.terminalId)} · ${state}` }),
    dropped ? h('p', { class: 'note', text: `… ${dropped} earlier bytes not kept` }) : null,
    h('pre', { class: 'tool-pre tool-terminal-output', 'data-testid': 'tool-terminal-output', text: terminalText(str(item.output)) }));
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Where a tool call works (paths, with a line when given). */
function locationsView(locations) {
  const items = list(locations).filter((l) => typeof l?.path === 'string');
  if (!items.length) return null;
  return h('div', { class: 'tool-locations' },
    items.map((l) => h('span', { class: 'chip', text: Number.isInteger(l.line) ? `${l.path}:${l.line}` : l.path })));
}

/** The body of a tool call: input, locations, content, output. */
export function toolBody(tool) {
  return [
    inputView(tool.rawInput),
    locationsView(tool.locations),
    ...list(tool.content).map(contentView),
    outputView(tool.rawOutput),
  ].filter(Boolean);
}

/**
 * A tool call as a card that expands to its content. `open` is the person's choice for it
 * (undefined: diffs open, the rest folded); `onToggle(open)` records a change.
 */
export function toolCard(tool, open, onToggle) {
  const status = str(tool.status) || 'pending';
  const kind = str(tool.kind) || 'other';
  const body = toolBody(tool);
  const hasDiff = list(tool.content).some((c) => c?.type === 'diff');
  const card = h('details', {
    class: `tool-card status-${status}`,
    'data-testid': 'tool-call',
    'data-status': status,
    'data-kind': kind,
    'data-tool-call-id': str(tool.toolCallId),
  });
  card.open = open ?? hasDiff;
  const title = str(tool.title) || str(tool.toolCallId) || 'tool call';
  card.append(
    h('summary', { class: 'tool-head' },
      statusMark(status),
      h('span', { class: `tool-kind kind-${kind}`, text: KIND_LABEL[kind] ?? 'Tool' }),
      h('span', { class: 'tool-title', text: title }),
      h('span', { class: 'tool-status', 'data-testid': 'tool-status', text: STATUS_LABEL[status] ?? status })),
    body.length ? h('div', { class: 'tool-body' }, body) : h('p', { class: 'note tool-body', text: 'No details.' }),
  );
  card.addEventListener('toggle', () => onToggle?.(card.open));
  return card;
}

/** The agent's plan as a checklist. */
export function planView(part) {
  const entries = list(part.entries);
  const done = entries.filter((e) => e?.status === 'completed').length;
  return h('div', { class: 'plan', 'data-testid': 'plan' },
    h('div', { class: 'plan-head' }, h('span', { text: 'Plan' }), h('span', { class: 'muted', text: `${done}/${entries.length}` })),
    h('ul', { class: 'plan-list' }, entries.map((e) => {
      const status = str(e?.status) || 'pending';
      return h('li', { class: `plan-entry plan-${status}`, 'data-testid': 'plan-entry', 'data-status': status },
        h('span', { class: 'plan-mark', 'aria-label': STATUS_LABEL[status] ?? status, text: PLAN_MARK[status] ?? '☐' }),
        h('span', { class: 'plan-text', text: str(e?.content) }),
        e?.priority === 'high' ? h('span', { class: 'badge', text: 'high' }) : null);
    })));
}

/** A notice: usage, mode, sign-in needed (with what to do), errors, a stop reason. */
export function noticeView(part) {
  const kind = str(part.kind) || 'info';
  const el = h('div', { class: `notice notice-${kind}`, 'data-testid': 'notice', 'data-kind': kind, role: kind === 'error' ? 'alert' : null },
    h('span', { class: 'notice-icon', 'aria-hidden': 'true', text: NOTICE_ICON[kind] ?? 'ℹ' }),
    h('span', { class: 'notice-label', text: NOTICE_LABEL[kind] ?? 'Note' }),
    h('span', { class: 'notice-text', text: str(part.message) }));
  if (kind === 'auth') el.append(h('p', { class: 'notice-help', text: AUTH_HELP }));
  return el;
}

/** What to do when an agent needs authentication (there is no interactive login). */
export const AUTH_HELP = 'Sign the agent in outside ax-code (its own login command), or give it its key through '
  + '`env = { … }` under [agents.NAME] in ~/.config/ax-code/config.toml and restart the backend; then send the prompt again.';

/** The thought, dimmed and folded. */
export function thoughtView(part) {
  return h('details', { class: 'thought', 'data-testid': 'thought' },
    h('summary', { text: 'Thinking' }),
    h('div', { class: 'thought-text', text: str(part.text) }));
}

/** The option a permission was answered with, by its id. */
function optionName(part, optionId) {
  return list(part.options).find((o) => o?.optionId === optionId)?.name ?? optionId;
}

/** A permission request as it stands in the transcript. */
export function permissionView(part) {
  const outcome = part.outcome ?? {};
  const state = str(outcome.state) || 'pending';
  const title = str(part.toolCall?.title) || 'a tool call';
  let what;
  if (state === 'selected') {
    const allowed = String(outcome.kind).startsWith('allow');
    what = h('span', { class: allowed ? 'ok' : 'bad', text: `${allowed ? 'allowed' : 'rejected'}: “${optionName(part, outcome.optionId)}”` });
  } else if (state === 'cancelled') {
    what = h('span', { class: 'bad', text: 'cancelled (no answer)' });
  } else {
    what = h('span', { class: 'warn', text: 'waiting for your answer (below)' });
  }
  return h('div', { class: `permission-line state-${state}`, 'data-testid': 'permission', 'data-state': state },
    h('span', { class: 'permission-icon', 'aria-hidden': 'true', text: '?' }),
    h('span', { class: 'notice-label', text: 'Approval' }),
    what,
    h('span', { class: 'permission-title', text: title }));
}

// ---- the approval card ------------------------------------------------------------------

/** Option kinds in the order the card shows them. */
const KIND_ORDER = ['allow_once', 'allow_always', 'reject_once', 'reject_always'];
const KIND_CLASS = { allow_once: 'primary', allow_always: '', reject_once: 'danger', reject_always: 'danger' };

/** What an "always" option covers, in words. */
export function alwaysWords(kind, name, title, agent) {
  if (kind === 'allow_always') {
    return `“${name}” also allows later requests that ${agent} counts as the same as this one (“${title}”) `
      + 'for the rest of this session, without asking you again. What counts as the same is the agent’s own rule. '
      + 'The session header shows it; Revoke there ends it.';
  }
  if (kind === 'reject_always') {
    return `“${name}” refuses this request and later ones that ${agent} counts as the same, without asking you again.`;
  }
  return null;
}

/** The words for the `shell` agent's "Always allow". */
export const SHELL_ALWAYS = 'Always allow runs this command, and every later command of this session, without asking '
  + 'you again, until you revoke it in the session header.';

/**
 * The card of one pending permission: the whole request (the full command with its
 * newlines, the diff of an edit, the paths), the agent's options by their own names, and what
 * "always" covers. `button(reply, label, cls)` makes a guarded answer button.
 */
export function approvalCard(p, session, button) {
  const tool = p.toolCall;
  const agent = session?.agent && session.agent !== 'shell' ? session.agent : 'the agent';
  const card = h('div', { class: 'approval', role: 'group', 'aria-label': 'Approval needed', 'data-testid': 'approval' });
  if (!tool) {
    // The `shell` agent: the command line and the files it gets.
    const attachments = list(p.attachments).filter((a) => typeof a === 'string');
    card.append(
      h('p', { class: 'approval-title', text: 'The agent wants to run:' }),
      h('pre', { class: 'approval-command', 'data-testid': 'approval-command', text: str(p.command) }),
      attachments.length
        ? h('div', { class: 'approval-attachments', 'data-testid': 'approval-attachments' },
          h('span', { class: 'muted', text: 'With the files:' }),
          attachments.map((a) => h('span', { class: 'chip', 'data-testid': 'approval-attachment', text: a })))
        : null,
      h('p', { class: 'approval-always', 'data-testid': 'approval-always', text: SHELL_ALWAYS }),
      h('div', { class: 'approval-actions' },
        button('once', 'Allow once', 'primary'),
        button('always', 'Always allow', ''),
        button('reject', 'Reject', 'danger')),
    );
    return card;
  }
  const kind = str(tool.kind) || 'other';
  const title = str(tool.title) || 'a tool call';
  const command = commandOf(tool.rawInput);
  card.append(
    h('p', { class: 'approval-title' },
      h('span', { text: `${agent === 'the agent' ? 'The agent' : agent} asks to ` }),
      h('span', { class: `tool-kind kind-${kind}`, text: KIND_LABEL[kind] ?? 'Tool' })),
    // The title may itself hold the whole command: kept whole, newlines and all.
    h('pre', { class: 'approval-command', 'data-testid': 'approval-command', text: command ?? title }),
  );
  if (command !== null && command !== title) {
    card.append(h('p', { class: 'muted approval-subtitle', text: title }));
  }
  const details = [
    command === null ? inputView(tool.rawInput) : null,
    locationsView(tool.locations),
    ...list(tool.content).map(contentView),
  ].filter(Boolean);
  if (details.length) card.append(h('div', { class: 'approval-details' }, details));
  const options = list(p.options)
    .filter((o) => KIND_ORDER.includes(o?.kind))
    .sort((a, b) => KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind));
  const words = options.map((o) => alwaysWords(o.kind, str(o.name), title, agent)).filter(Boolean);
  for (const w of words) card.append(h('p', { class: 'approval-always', 'data-testid': 'approval-always', text: w }));
  card.append(h('div', { class: 'approval-actions' },
    options.map((o) => {
      const b = button(o.kind, str(o.name) || o.kind, KIND_CLASS[o.kind]);
      b.dataset.optionId = str(o.optionId);
      b.title = `${o.kind.replace('_', ' ')} (option “${str(o.optionId)}”)`;
      return b;
    })));
  return card;
}
