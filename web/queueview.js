// The queued prompts of a session, between its approvals and its composer (docs/control-ui.md
// §6): in order, each editable, cancellable and "send now"; a paused queue says why and offers
// Resume. What to show comes from queue.js; this only draws it and wires the buttons.

import { h, syncChildren } from './dom.js';
import { editedParts, queueHeading, queueRows, routeFor } from './queue.js';

/**
 * Fills `el` with `queue` of session `sessionId`. `edits` (id -> text being edited, shared by
 * every pane, app.js) keeps an edit open across redraws; a row being edited keeps its element,
 * so its caret stays. `actions`: queueEdit, queueCancel, queueSendNow, queueResume,
 * refreshQueue (draws the session's queues again), toast.
 */
export function fillQueue(el, queue, session, sessionId, actions, edits) {
  const rows = queueRows(queue);
  const heading = queueHeading(queue, session);
  el.hidden = rows.length === 0;
  el.dataset.paused = queue?.paused ? 'true' : 'false';
  const kept = el.rowNodes ?? new Map();
  el.rowNodes = kept;
  const nodes = [];
  if (heading) {
    nodes.push(h('div', { class: `queue-head${queue.paused ? ' paused' : ''}`, 'data-testid': 'queue-head' },
      h('span', { class: 'queue-heading', 'data-testid': queue.paused ? 'queue-paused' : 'queue-count', text: heading }),
      queue.paused
        ? h('button', {
          type: 'button', class: 'small primary', 'data-testid': 'queue-resume',
          title: 'Let the queue flow again: its next prompt is sent when the session is free',
          onclick: () => actions.queueResume(sessionId), text: 'Resume',
        })
        : null));
  }
  const seen = new Set();
  for (const row of rows) {
    seen.add(row.id);
    const item = queue.items[row.place - 1];
    const key = `${row.place}|${item.updated}|${edits.has(row.id)}`;
    let entry = kept.get(row.id);
    // A row being edited is never drawn anew: the person's caret and text stay.
    if (!entry || (entry.key !== key && !(entry.editing && edits.has(row.id)))) {
      entry = { key, editing: edits.has(row.id), node: rowNode(row, item, sessionId, actions, edits, () => actions.refreshQueue(sessionId)) };
      kept.set(row.id, entry);
    }
    nodes.push(entry.node);
  }
  // A prompt sent or cancelled while being edited: its edit goes with it.
  for (const id of kept.keys()) {
    if (!seen.has(id)) {
      kept.delete(id);
      edits.delete(id);
    }
  }
  syncChildren(el, nodes);
}

function rowNode(row, item, sessionId, actions, edits, redraw) {
  const li = h('div', { class: 'queue-item', 'data-testid': 'queue-item', 'data-queue-id': row.id, 'data-place': String(row.place) });
  const place = h('span', { class: 'queue-place', 'aria-label': `queued, number ${row.place}`, text: `${row.place}.` });
  if (edits.has(row.id)) {
    const box = h('textarea', { class: 'queue-edit', rows: 2, 'data-testid': 'queue-edit-input', 'aria-label': `Edit queued prompt ${row.place}` });
    box.value = edits.get(row.id);
    box.addEventListener('input', () => edits.set(row.id, box.value));
    const save = async () => {
      const parts = editedParts(item.prompt, box.value);
      if (!parts) {
        actions.toast('An empty prompt is not queued: cancel it instead.');
        return;
      }
      if (await actions.queueEdit(sessionId, row.id, parts)) {
        edits.delete(row.id);
        redraw();
      }
    };
    const stop = () => {
      edits.delete(row.id);
      redraw();
    };
    box.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        save();
      } else if (ev.key === 'Escape') {
        ev.preventDefault();
        ev.stopPropagation();
        stop();
      }
    });
    li.append(place, box, h('span', { class: 'queue-buttons' },
      h('button', { type: 'button', class: 'small primary', 'data-testid': 'queue-save', onclick: save, text: 'Save' }),
      h('button', { type: 'button', class: 'small', 'data-testid': 'queue-edit-cancel', onclick: stop, text: 'Keep as it was' })));
    requestAnimationFrame(() => { if (box.isConnected && document.activeElement !== box) box.focus(); });
    return li;
  }
  const edit = () => {
    edits.set(row.id, row.text);
    redraw();
  };
  li.append(place,
    h('span', { class: 'queue-text', 'data-testid': 'queue-text', title: row.text, text: row.text },
      ...row.extras.map((x) => h('span', { class: 'chip', text: x }))),
    h('span', { class: 'badge queue-badge', text: row.edited ? 'queued · edited' : 'queued' }),
    h('span', { class: 'queue-buttons' },
      h('button', {
        type: 'button', class: 'small', 'data-testid': 'queue-send-now',
        title: 'Stop the running turn and send this prompt next', onclick: () => actions.queueSendNow(sessionId, row.id), text: 'Send now',
      }),
      h('button', { type: 'button', class: 'icon', 'data-testid': 'queue-edit', title: 'Edit this prompt', 'aria-label': `Edit queued prompt ${row.place}`, onclick: edit, text: '✎' }),
      h('button', {
        type: 'button', class: 'icon', 'data-testid': 'queue-cancel', title: 'Cancel this prompt: it is not sent',
        'aria-label': `Cancel queued prompt ${row.place}`, onclick: () => actions.queueCancel(sessionId, row.id), text: '✕',
      })));
  return li;
}

/**
 * The composer's `prompt` and the queue's buttons, over the page's API (`ui`: {api, queues
 * (QueueBook), sessionOf(id), connId() (the gateway connection, or null), toast(text),
 * refreshQueue(id)}). A prompt takes the route queue.js `routeFor` says; a direct prompt the
 * backend refused with 409 because a turn started meanwhile goes to the queue instead. Every
 * change shows through the `queue.updated` event that follows, never through the answer (an
 * answer may be older than an event, QueueBook).
 */
export function queueActions(ui) {
  const act = async (what, run) => {
    try {
      await run();
      return true;
    } catch (e) {
      ui.toast(`${what} failed: ${e.message}`);
      return false;
    }
  };
  return {
    async prompt(sessionId, text, parts) {
      const body = parts ?? [{ type: 'text', text }];
      const client = ui.connId();
      if (routeFor(ui.sessionOf(sessionId), ui.queues.get(sessionId)) === 'queue') {
        return ui.api.queuePrompt(sessionId, body, client);
      }
      try {
        return await ui.api.prompt(sessionId, text, client, body);
      } catch (e) {
        if (e.status !== 409) throw e;
        return ui.api.queuePrompt(sessionId, body, client);
      }
    },
    queueEdit: (sessionId, qid, parts) => act('Editing the queued prompt', () => ui.api.editQueued(sessionId, qid, parts)),
    queueCancel: (sessionId, qid) => act('Cancelling the queued prompt', () => ui.api.cancelQueued(sessionId, qid)),
    queueSendNow: (sessionId, qid) => act('Send now', () => ui.api.sendQueuedNow(sessionId, qid)),
    queueResume: (sessionId) => act('Resuming the queue', () => ui.api.resumeQueue(sessionId)),
    refreshQueue: (sessionId) => ui.refreshQueue(sessionId),
  };
}
