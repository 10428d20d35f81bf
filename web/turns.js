// The parts of an ACP agent's turn in a transcript (docs/agents.md §4), and the approval card
// of a pending permission (§5). Every string an agent sent goes in with textContent; agent
// text as Markdown goes through markdown.js (never HTML).

import { h } from './dom.js';
import { diffView, unifiedTextView } from './diff.js';
import {
  asksForFeedback, changesOf, commandOf, inputFields, onlyExit, optionLabel, orderedOptions, outputText, runEnd, shownStatus,
  statusWord, terminalText, unfenced, visible,
} from './present.js';

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

/** Fields of a tool call's input as a list of `key: value` rows, each value as text. */
function fieldsView(fields, testid) {
  if (!fields.length) return null;
  return h('dl', { class: 'input-fields', 'data-testid': testid },
    fields.map(([k, v]) => h('div', { class: 'input-field', 'data-testid': 'input-field', 'data-key': k },
      h('dt', { text: k }), h('dd', { text: v }))));
}

/**
 * A tool call's input as text: its whole command (an array joined shell-quoted), then every
 * other field (`cwd`, `workdir`, flags, …; nested values as compact JSON), each bounded, with
 * control and bidirectional characters shown (present.js `inputFields`).
 */
function inputView(rawInput) {
  const fields = inputFields(rawInput);
  if (!fields.length) return null;
  const hasCommand = commandOf(rawInput) !== null;
  const [command, rest] = hasCommand ? [fields[0][1], fields.slice(1)] : [null, fields];
  return h('div', { class: 'tool-section' },
    h('div', { class: 'tool-label', text: command !== null ? 'Command' : 'Input' }),
    command !== null ? h('pre', { class: 'tool-pre tool-input', 'data-testid': 'tool-input', text: command }) : null,
    fieldsView(rest, command !== null ? 'input-fields' : 'tool-input'));
}

function outputView(rawOutput) {
  // Only how a command ended (the `shell` agent's): the header and the terminal say it.
  if (rawOutput === undefined || rawOutput === null || onlyExit(rawOutput)) return null;
  const text = outputText(rawOutput);
  return h('div', { class: 'tool-section' },
    h('div', { class: 'tool-label', text: 'Output' }),
    h('pre', { class: 'tool-pre tool-output', 'data-testid': 'tool-output', text }));
}

/** One item of a tool call's content: text, a diff, or a terminal. */
function contentView(item) {
  switch (item?.type) {
    case 'diff':
      return diffView(item.path, item.oldText, item.newText, Number.isInteger(item.line) && item.line > 0 ? item.line : 1);
    case 'terminal':
      return terminalView(item);
    case 'text':
      // A command's output an agent wrapped in a code fence: the output, without the fence.
      return h('pre', { class: 'tool-pre tool-text', 'data-testid': 'tool-text', text: unfenced(str(item.text)) });
    default:
      return null;
  }
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

/**
 * The diffs of an edit's input changes (Codex's `changes`) that its content does not already
 * show as diffs: a new or deleted file as a diff, an update as the unified diff the agent sent.
 */
function changeDiffs(tool) {
  const changes = changesOf(tool.rawInput);
  if (!changes) return [];
  const shown = new Set(list(tool.content).filter((c) => c?.type === 'diff').map((c) => str(c.path)));
  return changes.filter((c) => !shown.has(c.path) && !(c.movePath && shown.has(c.movePath))).map((c) => {
    if (c.type === 'add') return diffView(c.path, null, c.content ?? '');
    if (c.type === 'delete') return diffView(c.path, c.content ?? '', '');
    return c.diff !== null ? unifiedTextView(c.movePath ? `${c.path} → ${c.movePath}` : c.path, c.diff) : null;
  }).filter(Boolean);
}

/**
 * The body of a tool call: input, locations, content, output. Output the content already
 * shows (an agent may send a command's output both as text content and as its raw output)
 * is shown once.
 */
export function toolBody(tool) {
  const texts = new Set(list(tool.content).filter((c) => c?.type === 'text').map((c) => unfenced(str(c.text)).trim()));
  const out = tool.rawOutput;
  const repeated = out !== undefined && out !== null && texts.has(outputText(out).trim());
  return [
    inputView(tool.rawInput),
    locationsView(tool.locations),
    ...list(tool.content).map(contentView),
    ...changeDiffs(tool),
    repeated ? null : outputView(out),
  ].filter(Boolean);
}

/**
 * A tool call as a card that expands to its content. `open` is the person's choice for it
 * (undefined: diffs open, the rest folded); `onToggle(open)` records a change.
 */
export function toolCard(tool, open, onToggle) {
  // A run whose terminal or output says it failed shows failed, whatever the agent reported.
  const status = shownStatus(tool);
  const kind = str(tool.kind) || 'other';
  const body = toolBody(tool);
  const hasDiff = list(tool.content).some((c) => c?.type === 'diff') || changesOf(tool.rawInput) !== null;
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
      h('span', { class: 'tool-status', 'data-testid': 'tool-status', text: statusWord(tool, status, STATUS_LABEL) })),
    body.length ? h('div', { class: 'tool-body' }, body) : h('p', { class: 'note tool-body', text: 'No details.' }),
  );
  card.addEventListener('toggle', () => onToggle?.(card.open));
  return card;
}

/**
 * A `shell` session's command (its `execute` call) as the shell's runs always showed, under
 * the person's message that already says the command: the terminal's output as text, not
 * folded, then how it ended, once (`exit N`, `killed by signal S`, `aborted`), `nothing ran`
 * for a call that failed before it ran (rejected), and why a call that could not start failed
 * (its text). No card header: while the call is open a first line says so (`running`).
 * Another agent's call with a terminal stays a card ({@link toolCard}).
 */
export function runView(tool) {
  const status = shownStatus(tool);
  const end = runEnd(tool);
  const body = [];
  if (status === 'pending' || status === 'in_progress') {
    body.push(h('div', { class: 'tool-head run-head' },
      statusMark(status),
      h('span', { class: 'tool-status', 'data-testid': 'tool-status', text: STATUS_LABEL[status] })));
  }
  for (const c of list(tool.content)) {
    if (c?.type === 'terminal') {
      const dropped = Number.isInteger(c.droppedBytes) && c.droppedBytes > 0 ? c.droppedBytes : 0;
      if (dropped) body.push(h('p', { class: 'note', 'data-testid': 'run-dropped', text: `… output truncated (${dropped} bytes dropped)` }));
      const text = terminalText(str(c.output));
      if (text) {
        body.push(h('pre', {
          class: 'part-output stdout run-output', 'data-testid': 'run-output', 'data-terminal-id': str(c.terminalId), text,
        }));
      }
    } else if (c?.type === 'text') {
      body.push(h('p', { class: 'note bad', 'data-testid': 'run-note', text: unfenced(str(c.text)) }));
    }
  }
  if (end) body.push(h('p', { class: `note ${end.ok ? 'ok' : 'bad'}`, 'data-testid': 'run-exit', text: end.text }));
  else if (status === 'failed' && !body.length) body.push(h('p', { class: 'note', 'data-testid': 'run-note', text: 'nothing ran' }));
  return h('div', {
    class: `shell-run status-${status}`,
    'data-testid': 'tool-call',
    'data-run': 'true',
    'data-status': status,
    'data-kind': str(tool.kind) || 'execute',
    'data-tool-call-id': str(tool.toolCallId),
  }, body);
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

/** The option a permission was answered with, by its id, as its button said it. */
function optionName(part, optionId) {
  const o = list(part.options).find((x) => x?.optionId === optionId);
  return o ? optionLabel(o) : str(optionId);
}

/** The mark of a permission in the transcript: how it was answered, or `?` while it waits. */
const PERMISSION_MARK = { allowed: '✓', rejected: '✗', cancelled: '⊘', pending: '?' };

/** A permission request as it stands in the transcript: what was asked and the answer. */
export function permissionView(part) {
  const outcome = part.outcome ?? {};
  const state = str(outcome.state) || 'pending';
  const title = str(part.toolCall?.title) || 'a tool call';
  let what;
  let answer = state === 'cancelled' ? 'cancelled' : 'pending';
  if (state === 'selected') {
    const allowed = String(outcome.kind).startsWith('allow');
    answer = allowed ? 'allowed' : 'rejected';
    what = h('span', { class: allowed ? 'ok' : 'bad', 'data-testid': 'permission-answer', text: `${answer}: “${optionName(part, outcome.optionId)}”` });
  } else if (state === 'cancelled') {
    what = h('span', { class: 'bad', 'data-testid': 'permission-answer', text: 'cancelled (no answer)' });
  } else {
    what = h('span', { class: 'warn', text: 'waiting for your answer (below)' });
  }
  return h('div', { class: `permission-line state-${state} answer-${answer}`, 'data-testid': 'permission', 'data-state': state, 'data-answer': answer },
    h('span', { class: 'permission-icon', 'data-testid': 'permission-icon', 'aria-hidden': 'true', text: PERMISSION_MARK[answer] }),
    h('span', { class: 'notice-label', text: 'Approval' }),
    what,
    h('span', { class: 'permission-title', text: visible(title) }));
}

// ---- the approval card ------------------------------------------------------------------

const KIND_CLASS = { allow_once: 'primary', allow_always: '', reject_once: 'danger', reject_always: 'danger' };
const KIND_WORDS = { allow_once: 'allow once', allow_always: 'allow always', reject_once: 'reject once', reject_always: 'reject always' };
/** What an approval asks to do, by tool kind. */
const KIND_VERB = {
  read: 'read', edit: 'edit', delete: 'delete', move: 'move', search: 'search', execute: 'run',
  think: 'think', fetch: 'fetch', switch_mode: 'switch the mode', other: 'use a tool',
};

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

/** What the `shell` agent's "always" option (named `name`) covers, in words. */
export function shellAlways(name) {
  return `With “${name}”, every later command of this session runs without asking you again, this one included, `
    + 'until you revoke it in the session header.';
}

/**
 * The card of one pending permission: the whole request (the full command with its
 * newlines and every other field of the input, the diff of an edit, the paths, the files a
 * command gets), the agent's options by their own names in the order allow once, allow
 * always, reject once, reject always (allow once the primary one; an "always" never is), and
 * what "always" covers (for the `shell` agent: every later command of the session).
 * `button(reply, label, cls, feedback, optionId)` makes a guarded answer button; `feedback`
 * marks an option that asks the person to tell the agent what to do instead; `optionId` is the
 * exact option the answer names (the agent may offer several of one kind, docs/agents.md §5).
 */
export function approvalCard(p, session, button) {
  const tool = isObject(p.toolCall) ? p.toolCall : { title: str(p.command) };
  const shell = !!session && (!session.agent || session.agent === 'shell');
  const agent = session?.agent && !shell ? session.agent : 'the agent';
  const card = h('div', { class: 'approval', role: 'group', 'aria-label': 'Approval needed', 'data-testid': 'approval' });
  const kind = str(tool.kind) || 'other';
  const title = str(tool.title) || 'a tool call';
  // The files a command gets (the `shell` agent's) show as chips, not again as a field.
  const attachments = Array.isArray(p.attachments) ? p.attachments.filter((a) => typeof a === 'string') : null;
  const fields = inputFields(tool.rawInput).filter(([k]) => !(attachments && k === 'attachments'));
  const hasCommand = commandOf(tool.rawInput) !== null;
  const who = agent === 'the agent' ? 'The agent' : agent;
  card.append(
    h('p', { class: 'approval-title', 'data-testid': 'approval-title' },
      h('span', { text: `${who} wants to ${KIND_VERB[kind] ?? 'use a tool'}:` }),
      h('span', { class: `tool-kind kind-${kind}`, text: KIND_LABEL[kind] ?? 'Tool' })),
    // The title may itself hold the whole command: kept whole, newlines and all.
    h('pre', { class: 'approval-command', 'data-testid': 'approval-command', text: hasCommand ? fields[0][1] : visible(title) }),
  );
  if (hasCommand && commandOf(tool.rawInput) !== title) {
    card.append(h('p', { class: 'muted approval-subtitle', text: visible(title) }));
  }
  const details = [
    attachments?.length
      ? h('div', { class: 'approval-attachments', 'data-testid': 'approval-attachments' },
        h('span', { class: 'muted', text: 'With the files:' }),
        attachments.map((a) => h('span', { class: 'chip', 'data-testid': 'approval-attachment', text: visible(a) })))
      : null,
    fieldsView(hasCommand ? fields.slice(1) : fields, 'approval-input'),
    locationsView(tool.locations),
    ...list(tool.content).map(contentView),
    ...changeDiffs(tool),
  ].filter(Boolean);
  if (details.length) card.append(h('div', { class: 'approval-details' }, details));
  const options = orderedOptions(p.options);
  const words = options.map((o) => (shell && o.kind === 'allow_always'
    ? shellAlways(optionLabel(o))
    : alwaysWords(o.kind, optionLabel(o), title, agent))).filter(Boolean);
  for (const w of words) card.append(h('p', { class: 'approval-always', 'data-testid': 'approval-always', text: w }));
  card.append(h('div', { class: 'approval-actions' },
    options.map((o, i) => {
      const feedback = o.kind.startsWith('reject') && asksForFeedback(o);
      // One primary button: the first allow once (an "always" never is).
      const cls = o.kind === 'allow_once' && i > 0 ? '' : KIND_CLASS[o.kind];
      const b = button(o.kind, optionLabel(o), cls, feedback, str(o.optionId) || undefined);
      b.dataset.optionId = str(o.optionId);
      b.title = feedback ? `${KIND_WORDS[o.kind]}, then write what to do instead` : KIND_WORDS[o.kind];
      if (feedback) b.dataset.feedback = 'true';
      return b;
    })));
  return card;
}
