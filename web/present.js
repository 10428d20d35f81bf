// How the Control UI words what agents send, the agents a new session may have and the
// connection indicator: pure functions (no DOM), so every rule here is checked on its own
// (tests/python/control_ui_cards.py, tests/js/present.test.mjs). docs/control-ui.md §3, §4, §5.

const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// ---- characters a person must see ------------------------------------------------------

/** Bidirectional controls: they reorder what is shown, so a command could read as another. */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
/** C0 controls other than newline and tab, DEL, and C1 controls. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

const codePoint = (c) => `U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * `text` with every control and bidirectional character made visible (`⟨U+202E⟩`, `⟨ESC⟩`);
 * newlines and tabs stay as they are.
 */
export function visible(text) {
  return String(text)
    .replace(BIDI, (c) => `⟨${codePoint(c)}⟩`)
    .replace(CONTROL, (c) => (c === '\x1b' ? '⟨ESC⟩' : `⟨${codePoint(c)}⟩`));
}

/** The most characters one value of a request shows; the rest is counted, not shown. */
export const FIELD_CHARS = 8000;

/** `text` cut to `max` characters, saying how many were left out. */
export function bounded(text, max = FIELD_CHARS) {
  const s = String(text);
  if (s.length <= max) return s;
  return `${s.slice(0, max)}\n… ${s.length - max} more characters not shown`;
}

// ---- a tool call's input ---------------------------------------------------------------

/** One word of a command line, quoted for a POSIX shell when it needs it. */
export function shellQuote(word) {
  const s = String(word);
  if (s !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(s)) return s;
  return `'${s.replace(/'/g, "'\\''")}'`;
}

/** A command the agent sent: a string as it is, an array of words joined shell-quoted. */
export function commandText(v) {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.length && v.every((x) => typeof x === 'string')) return v.map(shellQuote).join(' ');
  return null;
}

/** The command of a tool call's input (`command`, else `cmd`), or null. */
export function commandOf(rawInput) {
  if (typeof rawInput === 'string') return rawInput;
  if (!isObj(rawInput)) return null;
  for (const k of ['command', 'cmd']) {
    const c = commandText(rawInput[k]);
    if (c !== null) return c;
  }
  return null;
}

/** A value of the input as one readable string: text as it is, anything else compact JSON. */
function valueText(v) {
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/**
 * The file changes of an edit's input (Codex's `changes`: path → `{type: "add"|"delete"|
 * "update", content?, unified_diff?, move_path?}`), as [{path, type, content, diff, movePath}],
 * or null when the input has none of that shape.
 */
export function changesOf(rawInput) {
  const changes = isObj(rawInput) ? rawInput.changes : null;
  if (!isObj(changes)) return null;
  const out = [];
  for (const [path, c] of Object.entries(changes)) {
    if (!isObj(c)) return null;
    const type = typeof c.type === 'string' ? c.type : typeof c.unified_diff === 'string' ? 'update' : null;
    if (!type) return null;
    out.push({
      path,
      type,
      content: typeof c.content === 'string' ? c.content : null,
      diff: typeof c.unified_diff === 'string' ? c.unified_diff : null,
      movePath: typeof c.move_path === 'string' ? c.move_path : null,
    });
  }
  return out.length ? out : null;
}

/** The changes of an edit as one line per file: `update calc.py`, `update a.py → b.py`. */
function changesText(changes) {
  return changes.map((c) => `${c.type} ${c.path}${c.movePath ? ` → ${c.movePath}` : ''}`).join('\n');
}

/**
 * Every field of a tool call's input, as [key, text] pairs: the command first (an array
 * joined shell-quoted), then the working directory, then every other key in the agent's
 * order; nested values as compact JSON. Each text is bounded and shows its control and
 * bidirectional characters. Input that is a string is the command; any other non-object is
 * one field, `input`.
 */
export function inputFields(rawInput) {
  if (rawInput === undefined || rawInput === null) return [];
  if (typeof rawInput === 'string') return [['command', bounded(visible(rawInput))]];
  if (!isObj(rawInput)) return [['input', bounded(visible(valueText(rawInput)))]];
  const command = commandOf(rawInput);
  const commandKey = command === null ? null : ['command', 'cmd'].find((k) => commandText(rawInput[k]) !== null);
  const keys = Object.keys(rawInput).filter((k) => k !== commandKey);
  const first = ['cwd', 'workdir'].filter((k) => keys.includes(k));
  const ordered = [...first, ...keys.filter((k) => !first.includes(k))];
  const out = command === null ? [] : [[commandKey, bounded(visible(command))]];
  const changes = changesOf(rawInput);
  for (const k of ordered) {
    // An edit's changes: the files, one a line (their diffs are shown as diffs).
    const text = k === 'changes' && changes ? changesText(changes) : valueText(rawInput[k]);
    out.push([visible(k), bounded(visible(text))]);
  }
  return out;
}

// ---- permission options ----------------------------------------------------------------

/** Option kinds in the order a card shows them. */
export const KIND_ORDER = ['allow_once', 'allow_always', 'reject_once', 'reject_always'];

/**
 * The options a card offers: every one the agent sent, in the order allow once, allow always,
 * reject once, reject always, the agent's order kept within a kind. An answer names the exact
 * option (`optionId`, docs/agents.md §5), so two options of one kind (Codex's) each get their
 * own button. Options of an unknown kind are left out.
 */
export function orderedOptions(options) {
  const list = Array.isArray(options) ? options : [];
  return KIND_ORDER.flatMap((kind) => list.filter((o) => isObj(o) && o.kind === kind));
}

/** An option whose name asks the person to tell the agent what to do instead. */
export function asksForFeedback(option) {
  const name = typeof option?.name === 'string' ? option.name.toLowerCase() : '';
  return /feedback|what to do differently|tell .* (?:what|how) to do|instead/.test(name);
}

/**
 * The label of an option: the agent's own name for it. A name that is an internal identifier
 * (one CamelCase word of several parts such as `ApprovedExecpolicyAmendment`, or the option's
 * id itself when that is not a word of the person's language) or no name gets words for its
 * kind instead.
 */
export function optionLabel(option) {
  const name = typeof option?.name === 'string' ? option.name.trim() : '';
  const id = typeof option?.optionId === 'string' ? option.optionId : '';
  const internal = !name || /^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$/.test(name) || (name === id && /[_-]/.test(id));
  return internal ? (KIND_WORDS[option?.kind] ?? (name || 'Answer')) : name;
}

const KIND_WORDS = {
  allow_once: 'Allow once', allow_always: 'Allow always', reject_once: 'Reject', reject_always: 'Reject always',
};

// ---- tool output -------------------------------------------------------------------------

/**
 * A tool call's raw output as text: a string as it is; an object that carries the command's
 * output (Codex's `formatted_output`, `aggregated_output`, `stdout`, with `stderr` when it
 * adds something) as that text; any other object as `key: value` lines (compact JSON).
 */
export function outputText(rawOutput) {
  if (typeof rawOutput === 'string') return rawOutput;
  if (!isObj(rawOutput)) return valueText(rawOutput);
  const text = ['formatted_output', 'aggregated_output', 'stdout', 'output']
    .map((k) => rawOutput[k]).find((v) => typeof v === 'string');
  if (text !== undefined) {
    const err = rawOutput.stderr;
    return typeof err === 'string' && err && !text.includes(err) ? `${text}${text.endsWith('\n') ? '' : '\n'}${err}` : text;
  }
  return Object.entries(rawOutput).map(([k, v]) => `${k}: ${valueText(v)}`).join('\n');
}

/**
 * Text inside one Markdown code fence (```console … ```, the way Claude's adapter wraps a
 * command's output) without the fence; other text as it is.
 */
export function unfenced(text) {
  const m = /^\s*(`{3,}|~{3,})[\w+-]*[^\S\n]*\n([\s\S]*?)\n?\1\s*$/.exec(String(text));
  return m ? m[2] : String(text);
}

/**
 * A tool call's status as shown: `completed` while a terminal of it exited non-zero (or was
 * killed), or its output reports a non-zero exit code, is shown `failed`.
 */
export function shownStatus(tool) {
  const status = typeof tool?.status === 'string' ? tool.status : 'pending';
  if (status !== 'completed') return status;
  const content = Array.isArray(tool.content) ? tool.content : [];
  for (const c of content) {
    if (c?.type !== 'terminal' || !isObj(c.exit)) continue;
    if (typeof c.exit.signal === 'string' || (Number.isInteger(c.exit.exitCode) && c.exit.exitCode !== 0)) return 'failed';
  }
  const out = tool.rawOutput;
  if (isObj(out)) {
    for (const k of ['exit_code', 'exitCode']) {
      if (Number.isInteger(out[k]) && out[k] !== 0) return 'failed';
    }
    if (out.success === false) return 'failed';
  }
  return status;
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

/**
 * How a command's run ended, as the `shell` agent's runs always said it: `{text, ok}` with
 * `aborted` for a cancelled call, else from its terminal's exit (or, without one, the exit in
 * its raw output): `exit N`, `killed by signal S`; null while it runs or when nothing says.
 */
export function runEnd(tool) {
  if (tool?.status === 'cancelled') return { text: 'aborted', ok: false };
  const exitOf = (code, signal) => {
    if (typeof signal === 'string' && signal) return { text: `killed by signal ${signal}`, ok: false };
    if (Number.isInteger(code)) return { text: `exit ${code}`, ok: code === 0 };
    return null;
  };
  for (const c of Array.isArray(tool?.content) ? tool.content : []) {
    if (c?.type === 'terminal' && isObj(c.exit)) return exitOf(c.exit.exitCode, c.exit.signal) ?? { text: 'exited', ok: false };
  }
  const out = tool?.rawOutput;
  if ((tool?.status === 'completed' || tool?.status === 'failed') && isObj(out)) {
    return exitOf(Number.isInteger(out.exitCode) ? out.exitCode : out.exit_code, out.signal);
  }
  return null;
}

/**
 * The word a tool card's header shows for its status: how a failed command ended (`exit 2`,
 * `killed by signal S`) rather than only `failed`; else the status's own word.
 */
export function statusWord(tool, status, words) {
  if (status === 'failed') {
    const end = runEnd(tool);
    if (end && !end.ok) return end.text;
  }
  return words[status] ?? status;
}

/**
 * Whether a raw output says only how a command ended (the `shell` agent's
 * `{exitCode, signal, truncated}`): the terminal and the header show that already.
 */
export function onlyExit(rawOutput) {
  if (!isObj(rawOutput)) return false;
  const keys = Object.keys(rawOutput);
  return keys.length > 0 && keys.every((k) => ['exitCode', 'exit_code', 'signal', 'truncated'].includes(k));
}

// ---- usage -----------------------------------------------------------------------------

/** A token count in a few characters: 950, 12.3k, 200k, 1.2M. */
export function compactCount(n) {
  if (!Number.isFinite(n) || n < 0) return '?';
  if (n < 1000) return String(Math.round(n));
  const [v, unit] = n < 1e6 ? [n / 1e3, 'k'] : [n / 1e6, 'M'];
  return `${v < 100 && v !== Math.round(v) ? v.toFixed(1).replace(/\.0$/, '') : Math.round(v)}${unit}`;
}

/** An amount of money: `$0.04`, `€1.20`, else `1.20 CHF`. */
function money(cost) {
  if (!isObj(cost) || !Number.isFinite(cost.amount)) return null;
  const currency = typeof cost.currency === 'string' ? cost.currency : '';
  const sign = { USD: '$', EUR: '€', GBP: '£' }[currency];
  const amount = cost.amount.toFixed(2);
  return sign ? `${sign}${amount}` : `${amount}${currency ? ` ${currency}` : ''}`;
}

/**
 * The context meter of a session's latest usage (`agentState.usage`: `used` of `size` tokens,
 * and what it cost when the agent says): `ctx 12.3k/200k 6% · $0.04`. Null without usage.
 */
export function usageText(usage) {
  if (!isObj(usage) || !Number.isFinite(usage.used)) return null;
  const size = Number.isFinite(usage.size) && usage.size > 0 ? usage.size : null;
  let text = `ctx ${compactCount(usage.used)}`;
  if (size) text += `/${compactCount(size)} ${Math.round((usage.used / size) * 100)}%`;
  const cost = money(usage.cost);
  return cost ? `${text} · ${cost}` : text;
}

// ---- sessions --------------------------------------------------------------------------

/** The agent of a session as a word (`shell` when none is named). */
export function agentOf(session) {
  return typeof session?.agent === 'string' && session.agent ? session.agent : 'shell';
}

/**
 * A session's title as shown: its own, or "New AGENT session" while it has none (a new
 * session is titled with its id until the agent or the person names it).
 */
export function sessionTitle(session) {
  const title = typeof session?.title === 'string' ? session.title.trim() : '';
  if (title && title !== session.id) return title;
  return `New ${agentOf(session)} session`;
}

// ---- the agent of a new session --------------------------------------------------------

/**
 * The agents a new session may have, from GET /agent (`{ agents, default }`): null when there
 * is no choice (one agent or none: the backend's default), else `{ agents, def }`, the named
 * agents with the default first (`def`: the list's default, or its first agent).
 */
export function agentChoices(list) {
  const agents = Array.isArray(list?.agents) ? list.agents.filter((a) => typeof a?.name === 'string') : [];
  if (agents.length <= 1) return null;
  const def = typeof list.default === 'string' ? list.default : agents[0].name;
  agents.sort((a, b) => (b.name === def) - (a.name === def));
  return { agents, def };
}

/** The line under an agent's name in the picker: default, what it is, where it comes from. */
export function agentChoiceMeta(agent, def) {
  const what = agent.kind === 'acp' ? 'ACP agent' : agent.kind === 'shell' ? 'shell commands' : null;
  return [agent.name === def ? 'default' : null, what, agent.origin === 'config' ? 'from your config' : null]
    .filter(Boolean).join(' · ');
}

// ---- the connection indicator ----------------------------------------------------------

const CONNECTION_TEXT = { live: 'Live', connecting: 'Connecting…', reconnecting: 'Reconnecting…', refused: 'Refused' };

/**
 * The page's one indicator for both connections: the gateway (agents' commands, the
 * terminal; `gateway` its state, `detail` why) and the event stream (sessions; `stream`). Live
 * only when both are; before the first time it was, connecting, after it reconnecting
 * (`everLive`). Returns `{ state, text, title }`; the title says which connection is not.
 */
export function connectionView(gateway, stream, everLive, detail = '') {
  let state;
  if (gateway === 'unauthorized') state = 'refused';
  else if (gateway === 'connected' && stream === 'live') state = 'live';
  else if (!everLive) state = 'connecting';
  else state = 'reconnecting';
  const title = [
    `Agent gateway: ${gateway === 'connected' ? 'connected' : gateway}${detail ? ` (${detail})` : ''}`,
    `Session events: ${stream === 'live' ? 'live' : 'reconnecting'}`,
  ].join('\n');
  return { state, text: CONNECTION_TEXT[state], title };
}
