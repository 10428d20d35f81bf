// The shared `ui.command`s on a hub's page (docs/hub.md §4): the page holds one Control UI
// connection (`mode: ui`, cap `ui-commands`) to the hub's gateway of every online machine
// (`GET /machine/{m}/gateway`), applies each machine's command to the panes showing that
// machine's sessions, and acknowledges it on the connection it came on, so the agent waiting
// on the machine sees the page's outcome. Pure apart from the connections the caller makes:
// tested by Node (tests/js/hubui.test.mjs); app.js applies the commands.

import { hubCommandRefusal } from './hubapi.js';

/**
 * Which UI connections to open and close: `machines` are the hub's records (`{name, online}`),
 * `linked` the machines the page holds a connection to. Every online machine needs one (by
 * name); a connection to a machine that is offline or no longer listed is closed. So the page
 * holds at most one per machine the hub lists.
 */
export function uiLinkChanges(machines, linked) {
  const online = new Set(
    (Array.isArray(machines) ? machines : [])
      .filter((m) => m?.online === true && typeof m.name === 'string' && m.name !== '')
      .map((m) => m.name),
  );
  const have = new Set(linked);
  return {
    open: [...online].filter((m) => !have.has(m)).sort(),
    close: [...have].filter((m) => !online.has(m)).sort(),
  };
}

/**
 * The acknowledgement of one command (`ui.command.result`'s fields but `commandId`, which the
 * gateway client adds): `outcome` `applied` or `ignored`, `reason` only when there is one,
 * `revision` the page's layout revision after the command (the current one when refused),
 * `notApplied` only when not empty.
 */
export function commandAck(result, revision) {
  const ack = { outcome: result?.outcome === 'applied' ? 'applied' : 'ignored' };
  if (typeof result?.reason === 'string' && result.reason !== '') ack.reason = result.reason;
  if (Number.isInteger(revision)) ack.revision = revision;
  if (Array.isArray(result?.notApplied) && result.notApplied.length) ack.notApplied = result.notApplied;
  return ack;
}

/**
 * One `ui.command` of `machine`'s agent, come on that machine's connection: refused when it
 * names another machine's session or a pane showing one (`hubCommandRefusal`), else applied
 * by `apply(payload)` (the page's own rules: stale revision, human priority, the panes it would
 * move, annotations), whose result is acknowledged. `owner` maps a session ID to its machine,
 * `layout` is the page's layout now and `revision()` its layout revision. Answers `{ ack,
 * refused }`: `refused` is the reason the page refused before applying anything (the caller
 * tells it), null when `apply` ran.
 */
export function answerMachineCommand(machine, payload, { owner, layout, revision, apply }) {
  const refused = hubCommandRefusal(payload, machine, owner, layout);
  if (refused) return { ack: commandAck({ outcome: 'ignored', reason: refused }, revision()), refused };
  const result = apply(payload);
  return { ack: commandAck(result, Number.isInteger(result?.revision) ? result.revision : revision()), refused: null };
}

/**
 * The page's UI connections, one per online machine. `make(machine)` makes a connection
 * (`{ start(), stop() }`, app.js: a `GatewayClient` on the machine's hub gateway with the
 * `ui-commands` cap) whose state the caller reports with `status`. `sync(machines)` opens and
 * closes them as `uiLinkChanges` says.
 */
export class UiLinks {
  constructor(make) {
    this.make = make;
    this.links = new Map();
    this.states = new Map();
  }

  sync(machines) {
    const { open, close } = uiLinkChanges(machines, this.links.keys());
    for (const m of close) {
      this.links.get(m).stop();
      this.links.delete(m);
      this.states.delete(m);
    }
    for (const m of open) {
      const link = this.make(m);
      this.links.set(m, link);
      this.states.set(m, 'connecting');
      link.start();
    }
    return { open, close };
  }

  /** Whether `link` is still the page's connection to `machine` (a closed one is not heard). */
  current(machine, link) {
    return this.links.get(machine) === link;
  }

  status(machine, link, state) {
    if (this.current(machine, link)) this.states.set(machine, state);
  }

  /** The machines whose connection is up, by name (the connection badge's `data-ui-links`). */
  connected() {
    return [...this.states].filter(([, s]) => s === 'connected').map(([m]) => m).sort();
  }

  stopAll() {
    for (const link of this.links.values()) link.stop();
    this.links.clear();
    this.states.clear();
  }
}
