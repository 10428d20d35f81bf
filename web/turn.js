// An ACP agent's turn in the page: folding `message.delta` events into a message's parts.
//
// The same fold as the backend's (`ax_protocol::turn::apply`, see docs/agents.md §4): the
// live view and a transcript reloaded from the store are built from the same deltas, so they
// are equal. A delta of an unknown type changes nothing.

const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The last tool-call part with this id, or undefined. */
function findToolCall(parts, id) {
  for (let i = parts.length - 1; i >= 0; i -= 1) {
    const p = parts[i];
    if (p?.type === 'tool_call' && p.toolCallId === id) return i;
  }
  return -1;
}

/** The fields a tool-call update may set; absent ones stay, lists are replaced whole. */
const TOOL_FIELDS = ['title', 'kind', 'status', 'content', 'locations', 'rawInput', 'rawOutput'];

function mergeFields(part, fields) {
  const out = { ...part };
  for (const k of TOOL_FIELDS) {
    if (fields[k] !== undefined && fields[k] !== null) out[k] = fields[k];
  }
  if (Array.isArray(fields.content)) out.content = carryTerminals(part.content, fields.content);
  return out;
}

/** Output of a terminal kept in its card: the end, this many bytes at most (as the backend). */
const TERMINAL_OUTPUT_KEPT = 64 * 1024;

/** A new content list keeps what its terminals streamed (agents send `terminal` again). */
function carryTerminals(old, next) {
  const before = new Map((Array.isArray(old) ? old : [])
    .filter((c) => c?.type === 'terminal').map((c) => [c.terminalId, c]));
  return next.map((c) => {
    const o = c?.type === 'terminal' ? before.get(c.terminalId) : undefined;
    if (!o || c.output || c.exit) return c;
    const out = { ...c };
    for (const k of ['output', 'droppedBytes', 'exit']) if (o[k] !== undefined) out[k] = o[k];
    return out;
  });
}

/** The index of the last tool call showing terminal `id`, and the item's index in it. */
function findTerminal(parts, id) {
  for (let i = parts.length - 1; i >= 0; i -= 1) {
    const p = parts[i];
    if (p?.type !== 'tool_call' || !Array.isArray(p.content)) continue;
    const j = p.content.findIndex((c) => c?.type === 'terminal' && c.terminalId === id);
    if (j >= 0) return [i, j];
  }
  return null;
}

const utf8 = new TextEncoder();

/** Keeps the last TERMINAL_OUTPUT_KEPT UTF-8 bytes of `text`; returns [text, bytes cut]. */
function keepEnd(text) {
  const bytes = utf8.encode(text);
  if (bytes.length <= TERMINAL_OUTPUT_KEPT) return [text, 0];
  let cut = bytes.length - TERMINAL_OUTPUT_KEPT;
  while (cut < bytes.length && (bytes[cut] & 0xc0) === 0x80) cut += 1; // a char boundary
  return [new TextDecoder().decode(bytes.subarray(cut)), cut];
}

/** A fresh tool call with the backend's defaults. */
function emptyToolCall(id) {
  return { type: 'tool_call', toolCallId: id, title: '', kind: 'other', status: 'pending', content: [], locations: [] };
}

/**
 * Folds `delta` into `parts` (a message's parts, changed in place). Returns the index of the
 * part that changed, or -1 when nothing did.
 */
export function applyDelta(parts, delta) {
  if (!isObj(delta) || typeof delta.type !== 'string') return -1;
  const last = parts.length - 1;
  switch (delta.type) {
    case 'text_appended':
    case 'thought_appended': {
      const type = delta.type === 'text_appended' ? 'text' : 'thought';
      const text = typeof delta.text === 'string' ? delta.text : '';
      if (last >= 0 && parts[last]?.type === type) {
        parts[last] = { ...parts[last], text: parts[last].text + text };
        return last;
      }
      parts.push({ type, text });
      return parts.length - 1;
    }
    case 'tool_call_created': {
      if (!isObj(delta.toolCall)) return -1;
      const part = { ...delta.toolCall, type: 'tool_call' };
      const i = findToolCall(parts, part.toolCallId);
      if (i >= 0) {
        if (Array.isArray(part.content)) part.content = carryTerminals(parts[i].content, part.content);
        parts[i] = part;
        return i;
      }
      parts.push(part);
      return parts.length - 1;
    }
    case 'tool_call_updated': {
      const fields = isObj(delta.fields) ? delta.fields : {};
      const i = findToolCall(parts, delta.toolCallId);
      if (i >= 0) {
        parts[i] = mergeFields(parts[i], fields);
        return i;
      }
      parts.push(mergeFields(emptyToolCall(delta.toolCallId), fields));
      return parts.length - 1;
    }
    case 'plan_replaced': {
      const entries = Array.isArray(delta.entries) ? delta.entries : [];
      for (let i = last; i >= 0; i -= 1) {
        if (parts[i]?.type === 'plan') {
          parts[i] = { type: 'plan', entries };
          return i;
        }
      }
      parts.push({ type: 'plan', entries });
      return parts.length - 1;
    }
    case 'permission_asked':
      if (!isObj(delta.permission)) return -1;
      parts.push({ ...delta.permission, type: 'permission' });
      return parts.length - 1;
    case 'permission_answered':
      for (let i = last; i >= 0; i -= 1) {
        const p = parts[i];
        if (p?.type === 'permission' && p.permissionId === delta.permissionId) {
          parts[i] = { ...p, outcome: delta.outcome };
          return i;
        }
      }
      return -1;
    case 'terminal_output':
    case 'terminal_exited': {
      const at = findTerminal(parts, delta.terminalId);
      if (!at) return -1;
      const [i, j] = at;
      const item = { ...parts[i].content[j] };
      if (delta.type === 'terminal_output') {
        const [kept, cut] = keepEnd((item.output ?? '') + (typeof delta.text === 'string' ? delta.text : ''));
        const dropped = (item.droppedBytes ?? 0) + (Number.isInteger(delta.droppedBytes) ? delta.droppedBytes : 0) + cut;
        item.output = kept;
        if (dropped) item.droppedBytes = dropped;
      } else if (isObj(delta.exit)) {
        item.exit = delta.exit;
      }
      const content = parts[i].content.slice();
      content[j] = item;
      parts[i] = { ...parts[i], content };
      return i;
    }
    case 'notice':
      if (!isObj(delta.notice)) return -1;
      parts.push({ ...delta.notice, type: 'notice' });
      return parts.length - 1;
    default:
      return -1;
  }
}
