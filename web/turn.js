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
  return out;
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
    case 'notice':
      if (!isObj(delta.notice)) return -1;
      parts.push({ ...delta.notice, type: 'notice' });
      return parts.length - 1;
    default:
      return -1;
  }
}
