// The agent's commands in the composer (docs/control-ui.md, "Agent commands"): typing `/` at
// the start of a prompt lists the commands the session's agent offers (`agentState.commands`,
// from its `available_commands_update`), filtered as the person types; Tab or Enter
// completes the chosen one, Escape closes the list. A prompt that starts with `/name` is how
// the protocol runs an agent command, so the completed text is sent as it is.
//
// The Control UI has no slash commands of its own, so the list holds the agent's only.
// Listeners sit on the document (the composer is redrawn with its pane): one list at a time,
// under the composer being typed in.

import { h } from './dom.js';
import { COMPOSER, ComposerList } from './listkey.js';

/** At most this many commands are shown at once (the backend keeps at most 200). */
const SHOWN = 50;

/** The commands of `session` whose name matches `typed` (without the `/`), best first. */
export function matchCommands(session, typed) {
  const all = Array.isArray(session?.agentState?.commands) ? session.agentState.commands : [];
  const want = typed.toLowerCase();
  const valid = all.filter((c) => typeof c?.name === 'string' && c.name);
  const starts = valid.filter((c) => c.name.toLowerCase().startsWith(want));
  const within = valid.filter((c) => !c.name.toLowerCase().startsWith(want) && c.name.toLowerCase().includes(want));
  return [...starts, ...within].slice(0, SHOWN);
}

/** What the composer holds before its caret, if it is a command being typed: the name so far. */
function typedName(input) {
  const before = input.value.slice(0, input.selectionEnd ?? input.value.length);
  const m = /^\/(\S*)$/.exec(before);
  return m && input.value.slice(before.length).trim() === '' ? m[1] : null;
}

export class AgentCommands extends ComposerList {
  /** `sessionOf(id)`: the session as the Control UI knows it now. */
  constructor(sessionOf) {
    super();
    this.sessionOf = sessionOf;
    this.listAttrs = { class: 'command-list', 'aria-label': 'Agent commands', 'data-testid': 'command-list' };
  }

  /** The agent of `sessionId` sent a new list: an open list under its composer follows it. */
  refresh(sessionId) {
    if (this.input && this.input.dataset.session === sessionId) {
      // The pane may have been drawn anew: follow the composer that has the focus.
      const box = document.activeElement?.matches?.(COMPOSER) ? document.activeElement : this.input;
      this.update(box);
    }
  }

  update(input) {
    const typed = typedName(input);
    const session = this.sessionOf(input.dataset.session);
    const found = typed === null ? [] : matchCommands(session, typed);
    if (!found.length) {
      this.close();
      return;
    }
    const keep = this.input === input ? this.items[this.selected]?.name : null;
    this.input = input;
    this.items = found;
    this.selected = Math.max(0, found.findIndex((c) => c.name === keep));
    this.draw();
  }

  option(c) {
    return [{ 'data-testid': 'command-option', 'data-command': c.name }, [
      h('span', { class: 'command-name', text: `/${c.name}` }),
      typeof c.inputHint === 'string' ? h('span', { class: 'command-hint', text: ` ${c.inputHint}` }) : null,
      typeof c.description === 'string' ? h('span', { class: 'command-desc', text: c.description }) : null,
    ]];
  }

  /** Puts `/name ` in the composer (the agent's input, if any, follows the space). */
  pick() {
    const c = this.items[this.selected];
    const input = this.input;
    this.close();
    if (!c || !input) return;
    input.value = `/${c.name} `;
    input.setSelectionRange(input.value.length, input.value.length);
    // The composer keeps its draft (and its twins in other panes) in step.
    input.dispatchEvent(new Event('input', { bubbles: true }));
    input.focus();
  }
}
