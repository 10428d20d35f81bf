// One pane: a session's live transcript, its pending approvals and its composer.

import { imageLabel } from './attach.js';
import { copyButton, messageText } from './copy.js';
import { h, syncChildren } from './dom.js';
import { splitWeights } from './layout.js';
import { agentOf, sessionTitle, usageText } from './present.js';
import { sendLabel } from './queue.js';
import { pendingFor } from './sessions.js';
import { fillQueue } from './queueview.js';
import { approvalCard, AUTH_HELP, noticeView, permissionView, planView, runView, thoughtView, toolCard } from './turns.js';

const STATUS_LABEL = { idle: 'idle', pending: 'waiting for approval', busy: 'running', needs_auth: 'needs sign-in' };
/** Approval buttons ignore clicks this long after what the pane shows changed or moved. */
export const ARM_MS = 500;
/** A pane's approvals element -> the pane's ID (the inbox's approvals are in no pane). */
const approvalsPane = new WeakMap();

/**
 * One pane, drawn anew. Returns its view: the element (`el`) and the parts of it the page
 * redraws, held by reference: `head` (paneHead), `transcript`, `approvals`, `queue`, `send`
 * (the composer's button) and `input` (its text box); null where the pane has none (an empty
 * pane, or a read-only session's).
 * @param {object} pane      layout pane {id, session, weight}
 * @param {object} ctx       {store, active, drafts, actions, count (panes in the layout),
 *                           view (the Markdown renderer and what the person folded, app.js)}
 */
export function renderPane(pane, ctx) {
  const { store, actions } = ctx;
  const session = pane.session ? store.sessions.get(pane.session) : null;
  const title = titleOf(pane, session, store);
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

  const head = paneHead(pane, session, ctx);
  el.append(head);
  const view = { el, head, transcript: null, approvals: null, queue: null, send: null, input: null };
  if (!pane.session) {
    el.append(h('div', { class: 'pane-empty' },
      h('p', { text: 'Pick a session in the sidebar, or start a new one.' }),
      h('button', { type: 'button', class: 'primary', onclick: () => actions.createInPane(pane.id), text: 'New session' })));
    return view;
  }

  const transcript = h('div', { class: 'transcript', role: 'log', 'aria-live': 'polite', 'data-testid': 'transcript' });
  fillTranscript(transcript, store.messages.get(pane.session), ctx.view, pane.session);
  const approvals = h('div', { class: 'approvals', 'data-testid': 'approvals' });
  approvalsPane.set(approvals, pane.id);
  fillApprovals(approvals, pendingFor(store, pane.session), pane.session, actions, true, session);
  // The prompts waiting for the running turn (queueview.js), right above the composer.
  const queued = h('div', { class: 'queue', 'data-testid': 'queue', 'data-session': pane.session, 'aria-label': 'Queued prompts' });
  if (ctx.queues) fillQueue(queued, ctx.queues.get(pane.session), session, pane.session, actions, ctx.queueEdits);
  else queued.hidden = true;
  // Through a hub, a session of a machine that is away is shown as last seen: no prompt can
  // reach it (docs/hub.md §4).
  const form = session?.readOnly
    ? { form: h('p', { class: 'readonly-note muted', 'data-testid': 'readonly-note', role: 'note',
      text: `${session.machine ?? 'Its machine'} is offline: this is the session as last seen, read-only until the machine is back.` }) }
    : composer(pane, ctx, session);
  el.append(transcript, approvals, queued, form.form);
  requestAnimationFrame(() => { transcript.scrollTop = transcript.scrollHeight; });
  return { ...view, transcript, approvals, queue: queued, send: form.send ?? null, input: form.input ?? null };
}

/** Seconds as "12 s" or "3 min 04 s". */
export function formatDuration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

/** When the session's running turn started: its last message (the agent's reply, or the
 *  prompt while the reply is not there yet). */
function turnStart(messages) {
  const last = messages?.[messages.length - 1];
  return Number.isFinite(last?.created) ? last.created : null;
}

/**
 * The pane's header: the session's state (a spinner and the elapsed time while it works),
 * its agent, Stop while it works, the layout buttons; below, the agent's modes, a standing
 * "always" with Revoke, and what to do when the agent needs to sign in.
 */
export function paneHead(pane, session, ctx) {
  const { actions } = ctx;
  const status = session?.status ?? null;
  const working = status === 'busy' || status === 'pending';
  const since = working ? turnStart(ctx.store.messages.get(pane.session)) : null;
  const head = h('header', { class: 'pane-head' },
    h('div', { class: 'pane-head-row' },
      h('span', { class: `dot status-${status ?? 'none'}`, title: STATUS_LABEL[status] ?? '' }),
      h('h2', { class: 'pane-title', title: pane.session ?? '', text: titleOf(pane, session, ctx.store) }),
      session
        ? h('span', { class: 'agent-name', 'data-testid': 'session-agent', title: `This session's agent: ${session.agent || 'shell'}`, text: session.agent || 'shell' })
        : null,
      usageMeter(session),
      status && status !== 'idle' ? h('span', { class: 'badge', 'data-testid': 'status-badge', text: STATUS_LABEL[status] ?? status }) : null,
      working ? h('span', { class: 'spinner', role: 'img', 'aria-label': 'working', 'data-testid': 'busy-spinner' }) : null,
      working && since
        ? h('span', { class: 'elapsed', 'data-testid': 'elapsed', 'data-since': String(since), title: 'Time since the prompt was sent', text: formatDuration(Date.now() - since) })
        : null,
      h('div', { class: 'pane-actions' },
        working
          ? h('button', { class: 'danger small', type: 'button', 'data-testid': 'abort', title: 'Stop the running turn (answers open approvals “cancelled”)', 'aria-label': 'Abort', onclick: () => actions.abort(pane.session), text: '■ Stop' })
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
  const bar = session ? sessionBar(session, actions) : null;
  if (bar) head.append(bar);
  return head;
}

/** A pane's title: its session's (a readable placeholder until the session has one). */
export function titleOf(pane, session, store) {
  if (!pane.session) return 'No session';
  if (session) return sessionTitle(session);
  return store.missing.has(pane.session) ? 'Session not found' : pane.session;
}

/**
 * The session's latest usage as a compact meter (`ctx 12.3k/200k 6% · $0.04`,
 * `agentState.usage`), or null while the agent reported none.
 */
export function usageMeter(session) {
  const usage = session?.agentState?.usage;
  const text = usageText(usage);
  if (!text) return null;
  const detail = [`Context: ${usage.used} of ${usage.size ?? '?'} tokens`];
  if (Number.isFinite(usage.cost?.amount)) detail.push(`Cost so far: ${usage.cost.amount} ${usage.cost.currency ?? ''}`.trim());
  return h('span', { class: 'usage-meter', 'data-testid': 'usage-meter', title: detail.join('\n'), text });
}

const REVOKE_SHELL = 'Revoke: every later command asks for approval again.';
const REVOKE_ACP = 'Revoke forgets these answers and restarts the agent, which then reopens this session and asks again. '
  + 'Rules an agent saved in its own settings files stay there.';

/** The session's mode switch, a standing "always" with Revoke, sign-in help; null if none. */
function sessionBar(session, actions) {
  const agent = session.agent || 'shell';
  const modes = session.agentState?.modes;
  const standing = Array.isArray(session.standing) ? session.standing : [];
  const bar = h('div', { class: 'pane-bar', 'data-testid': 'session-bar' });
  if (modes && Array.isArray(modes.available) && modes.available.length) {
    const select = h('select', { class: 'mode-select', 'data-testid': 'mode-select', 'aria-label': 'Agent mode', title: 'The agent’s mode' },
      modes.available.map((m) => {
        const o = h('option', { value: String(m.id), text: String(m.name || m.id) });
        if (typeof m.description === 'string') o.title = m.description;
        if (m.id === modes.current) o.selected = true;
        return o;
      }));
    select.addEventListener('change', () => actions.setMode(session.id, select.value));
    bar.append(h('label', { class: 'mode' }, h('span', { class: 'muted', text: 'Mode' }), select));
  }
  if (standing.length) {
    const titles = standing.map((g) => String(g?.title ?? ''));
    const summary = titles.length === 1 ? `Always allowed: ${titles[0]}` : `Always allowed: ${titles.length} answers`;
    bar.append(h('span', { class: 'standing', 'data-testid': 'standing' },
      h('details', {},
        h('summary', { title: titles.join('\n'), text: summary }),
        h('ul', { class: 'standing-list' }, standing.map((g) => h('li', {},
          h('span', { text: String(g?.title ?? '') }),
          Number.isFinite(g?.granted) ? h('span', { class: 'muted', text: ` (since ${new Date(g.granted).toLocaleTimeString()})` }) : null))),
        h('p', { class: 'muted', text: agent === 'shell' ? REVOKE_SHELL : REVOKE_ACP })),
      h('button', {
        type: 'button', class: 'small danger', 'data-testid': 'revoke-standing',
        title: 'Forget these answers: the agent asks again', onclick: () => actions.revokeStanding(session.id), text: 'Revoke',
      })));
  }
  if (session.status === 'needs_auth') {
    const methods = Array.isArray(session.agentState?.authMethods) ? session.agentState.authMethods : [];
    bar.append(h('div', { class: 'needs-auth', 'data-testid': 'needs-auth', role: 'alert' },
      h('strong', { text: `${agent} needs you to sign in before it can work.` }),
      methods.length
        ? h('ul', {}, methods.map((m) => h('li', {},
          h('span', { class: 'auth-name', text: String(m.name ?? m.id ?? '') }),
          typeof m.description === 'string' ? h('span', { class: 'muted', text: ` — ${m.description}` }) : null)))
        : null,
      h('p', { class: 'notice-help', text: AUTH_HELP })));
  }
  return bar.children.length ? bar : null;
}
/**
 * Every composer drawn, by reference: `{ input, paneId, session, shown }`. One that was on the
 * page and left it (its pane drawn anew) is dropped the next time the list is read.
 */
const composers = new Set();

/** The text boxes of the composers on the page for `session`, in the order they were drawn. */
function composerBoxes(session) {
  const out = [];
  for (const c of composers) {
    if (c.input.isConnected) c.shown = true;
    else if (c.shown) composers.delete(c);
    if (c.input.isConnected && c.session === session) out.push(c);
  }
  return out;
}

/** The composers showing `session` other than `except`. */
function composersOf(session, except) {
  return composerBoxes(session).map((c) => c.input).filter((el) => el !== except);
}

/** The composer's placeholder: it names the session's agent (shell: a command). */
export function placeholderFor(session) {
  const agent = agentOf(session);
  return agent === 'shell'
    ? 'Command for this session (Enter sends, Shift+Enter: new line)'
    : `Ask ${agent}… (Enter sends, Shift+Enter: new line)`;
}

/** Sessions whose composer asks for feedback, until their next prompt is sent. */
const feedbackAsked = new Set();

/** What the composer says after the person chose an option that asks for feedback. */
export function feedbackPlaceholder(session) {
  return `Tell ${agentOf(session) === 'shell' ? 'the agent' : agentOf(session)} what to do differently (Enter sends)`;
}

/** The composer of a pane: `{ form, input, send }`. */
function composer(pane, { drafts, actions, attachments, queues }, sessionInfo) {
  // The session this composer was made for: its draft and its prompt go there, whatever the
  // pane shows later.
  const session = pane.session;
  const input = h('textarea', {
    class: 'composer-input',
    rows: 2,
    placeholder: feedbackAsked.has(session) ? feedbackPlaceholder(sessionInfo) : placeholderFor(sessionInfo),
    'aria-label': 'Prompt',
    'data-testid': 'composer-input',
    'data-session': session,
    'data-feedback': feedbackAsked.has(session) ? 'true' : null,
  });
  composers.add({ input, paneId: pane.id, session, shown: false });
  input.value = drafts.get(session) ?? '';
  input.addEventListener('input', () => {
    if (input.value) drafts.set(session, input.value);
    else drafts.delete(session);
    for (const other of composersOf(session, input)) other.value = input.value;
  });
  const error = h('p', { class: 'composer-error', role: 'alert' });
  // Files picked with `@` and pasted or dropped images (attachments.js).
  const chips = h('div', { class: 'composer-chips', 'data-testid': 'composer-chips', 'data-session': session });
  attachments?.fill(chips, session);
  const send = h('button', {
    type: 'submit', class: 'primary', 'data-testid': 'composer-send', 'data-session': session,
    title: 'While a turn runs the prompt is queued, and sent when the turn ends',
    text: sendLabel(sessionInfo, queues?.get(session)),
  });
  const form = h('form', { class: 'composer', 'data-testid': 'composer' }, chips, input, send, error);
  const submit = async () => {
    const text = input.value.trim();
    if (!text) return;
    error.textContent = '';
    try {
      await actions.prompt(session, text, attachments?.parts(session, text));
      attachments?.clear(session);
      input.value = '';
      drafts.delete(session);
      feedbackAsked.delete(session);
      for (const other of composersOf(session, input)) {
        other.value = '';
        other.placeholder = placeholderFor(sessionInfo);
        delete other.dataset.feedback;
      }
      input.placeholder = placeholderFor(sessionInfo);
      delete input.dataset.feedback;
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
  return { form, input, send };
}

const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

/**
 * Draws a session's transcript into `el`. Each message keeps its element, and each part its
 * element until the part changes (a part changes by being replaced, see turn.js): a streaming
 * turn redraws only what moved, and a card the person opened stays open. `view` is the page's
 * {md, open, store} (app.js); without it (a test drawing a bare transcript) agent
 * text shows as plain text.
 */
export function fillTranscript(el, messages, view, sessionId) {
  const nearBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
  const session = sessionId ? view?.store?.sessions.get(sessionId) : null;
  const acp = session && session.agent && session.agent !== 'shell';
  // A `shell` session's command shows as its run, not as a folded card.
  const runs = !!session && !acp;
  if (!messages) {
    syncChildren(el, [h('p', { class: 'muted', text: 'Loading…' })]);
    return;
  }
  const kept = el.partNodes ?? new WeakMap();
  el.partNodes = kept;
  const articles = el.messageNodes ?? new Map();
  el.messageNodes = articles;
  const nodes = [];
  if (messages.length === 0) {
    nodes.push(h('p', { class: 'muted', text: acp ? `No messages yet. Write to ${session.agent} below.` : 'No messages yet. Send a command below; it runs after you approve it.' }));
  }
  const working = session && (session.status === 'busy' || session.status === 'pending');
  const seen = new Set();
  messages.forEach((m, mi) => {
    seen.add(m.id);
    let entry = articles.get(m.id);
    if (!entry) {
      const body = h('div', { class: 'msg-body' });
      const article = h('article', { class: `msg role-${m.role}`, 'data-testid': 'message', 'data-message-id': m.id }, h('div'), body);
      entry = { article, body, metaKey: null };
      articles.set(m.id, entry);
    }
    const live = working && mi === messages.length - 1 && m.role === 'assistant';
    const metaKey = `${live}|${session?.agent ?? ''}|${m.ended ?? ''}`;
    if (entry.metaKey !== metaKey) {
      // The copy button reads the message as it is when clicked (a reload replaces the object).
      const current = () => view?.store?.messages.get(sessionId)?.find((x) => x.id === m.id) ?? m;
      entry.article.firstChild.replaceWith(turnMeta(m, live, session, current, view?.toast));
      entry.metaKey = metaKey;
    }
    syncChildren(entry.body, (m.parts ?? []).map((part, pi) => {
      let node = part && typeof part === 'object' ? kept.get(part) : null;
      // Drawn before the session's agent was known: a command drawn again as its run.
      if (node && part.type === 'tool_call' && (node.dataset.run === 'true') !== (runs && part.kind === 'execute')) node = null;
      // Agent text shown before its Markdown arrived is drawn again once it has.
      if (!node || node.dataset.rendered === 'plain' || node.dataset.rendered === 'partial') {
        node = renderPart(part, m, pi, view, sessionId, runs);
        if (part && typeof part === 'object') kept.set(part, node);
      }
      return node;
    }));
    nodes.push(entry.article);
  });
  for (const id of articles.keys()) if (!seen.has(id)) articles.delete(id);
  syncChildren(el, nodes);
  if (nearBottom) el.scrollTop = el.scrollHeight;
}

/** Who wrote a message, when, and for a finished turn of an agent how long it took. */
function turnMeta(m, live, session, current = () => m, toast = undefined) {
  const who = m.role === 'user' ? 'You' : (session?.agent && session.agent !== 'shell' ? session.agent : 'Agent');
  const meta = h('div', { class: 'msg-role' }, h('span', { text: who }));
  if (Number.isFinite(m.created)) {
    meta.append(h('time', { class: 'msg-time', dateTime: new Date(m.created).toISOString(), title: new Date(m.created).toLocaleString(), text: ` · ${clock(m.created)}` }));
  }
  if (m.role === 'assistant') {
    if (live) {
      meta.append(' · ', h('span', { class: 'spinner small', role: 'img', 'aria-label': 'working' }), ' ',
        h('span', { class: 'elapsed', 'data-testid': 'turn-elapsed', 'data-since': String(m.created), text: formatDuration(Date.now() - m.created) }));
    } else {
      // The stored end (`ended`): loaded with the message, or live from `message.ended`.
      if (Number.isFinite(m.ended)) {
        meta.append(h('span', {
          class: 'turn-duration',
          'data-testid': 'turn-duration',
          title: `ended ${new Date(m.ended).toLocaleString()}`,
          text: ` · took ${formatDuration(Math.max(0, m.ended - m.created))} · ended ${clock(m.ended)}`,
        }));
      }
    }
  }
  const runs = !!session && agentOf(session) === 'shell';
  meta.append(copyButton(() => messageText(current(), runs), 'message', toast));
  return meta;
}

/** An image of a person's message: a named chip, with a thumbnail once its bytes came
 *  (`view.image`, from GET /session/{id}/message/{mid}/image/{index}). */
function imagePart(part, message, view, sessionId) {
  const img = h('img', { class: 'thumb', alt: imageLabel(part), 'data-testid': 'image-thumb', hidden: true });
  const el = h('span', { class: 'chip image-chip', 'data-testid': 'image-part' }, img, imageLabel(part));
  view?.image?.(sessionId, message.id, part.index).then((url) => {
    if (!url) return;
    img.src = url;
    img.hidden = false;
  });
  return el;
}

function renderPart(part, message, index, view, sessionId, runs = false) {
  const key = `${message.id}/${index}`;
  const remember = (what) => (open) => view?.open.set(`${message.id}/${what}`, open);
  switch (part?.type) {
    case 'text':
      if (message.role === 'assistant' && view?.md) {
        return view.md.element(`${sessionId}|${key}`, String(part.text ?? ''));
      }
      return h('pre', { class: 'part-text', text: part.text });
    case 'file':
      return h('span', { class: 'chip', 'data-testid': 'file-part', text: `📎 ${part.path}` });
    case 'image':
      return imagePart(part, message, view, sessionId);
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
    case 'thought': {
      const el = thoughtView(part);
      const open = view?.open.get(`${message.id}/thought${index}`);
      if (open !== undefined) el.open = open;
      el.addEventListener('toggle', () => remember(`thought${index}`)(el.open));
      return el;
    }
    case 'tool_call':
      if (runs && part.kind === 'execute') return runView(part);
      return toolCard(part, view?.open.get(`${message.id}/tool:${part.toolCallId}`), remember(`tool:${part.toolCallId}`));
    case 'plan':
      return planView(part);
    case 'permission':
      return permissionView(part);
    case 'notice':
      // Usage is the meter in the pane header, not a line per report (§5).
      if (part.kind === 'usage') return h('span', { hidden: true, 'data-part': 'usage' });
      return noticeView(part);
    default:
      return h('span', { class: 'muted', text: '' });
  }
}

/**
 * The pending approvals of one session in its pane. A click that lands within ARM_MS of the
 * approvals changing (or of the pane being drawn anew, e.g. after the layout moved) is ignored
 * and said so: the pointer may rest where another approval's button just appeared.
 * `fresh` says the pane was just drawn; `session` (optional) names the agent in the card.
 */
export function fillApprovals(el, permissions, sessionId, actions, fresh = false, session = null) {
  const signature = permissions.map((p) => p.id).join(',');
  const changed = fresh || el.dataset.signature !== signature;
  if (changed) {
    el.dataset.signature = signature;
    const shownAt = performance.now();
    el.dataset.shownAt = String(shownAt);
    el.dataset.armed = 'false';
    setTimeout(() => {
      if (el.dataset.shownAt === String(shownAt)) el.dataset.armed = 'true';
    }, ARM_MS);
  }
  // The same approvals: keep the cards (and how far the person scrolled in them).
  if (!changed && el.children.length === permissions.length) return;
  el.replaceChildren();
  for (const p of permissions) {
    const button = (reply, label, cls, feedback = false, optionId = undefined) => h('button', {
      type: 'button',
      class: cls,
      'data-testid': `approve-${reply}`,
      onclick: async () => {
        if (performance.now() - Number(el.dataset.shownAt) < ARM_MS) {
          actions.toast('Click ignored: this approval just appeared or moved. Read it, then click again.');
          return;
        }
        // The pane may be drawn anew while the answer travels: find its composer first.
        const pane = approvalsPane.get(el) ?? null;
        const answered = await actions.reply(sessionId, p.id, reply, optionId);
        if (!answered || !feedback) return;
        // Answered from the approvals inbox: it opens the session's composer (watch.js).
        if (actions.feedbackFor) actions.feedbackFor(sessionId, session);
        else askFeedback(pane, sessionId, session);
      },
      text: label,
    });
    el.append(approvalCard(p, session, button));
  }
}

/**
 * After an option that asks the person what the agent should do instead: the composer of the
 * pane (or of any pane showing the session) takes the focus and says so; what the person
 * writes there goes to the agent as the next prompt. False when no composer shows the session.
 */
export function askFeedback(paneId, sessionId, session) {
  // Kept until the next prompt goes: a composer drawn anew asks for the feedback too.
  feedbackAsked.add(sessionId);
  const boxes = composerBoxes(sessionId);
  const box = (boxes.find((c) => c.paneId === paneId) ?? boxes[0])?.input;
  if (!box) return false;
  box.placeholder = feedbackPlaceholder(session);
  box.dataset.feedback = 'true';
  box.focus();
  return true;
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
