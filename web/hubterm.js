// The operator terminal on a hub's page (docs/hub.md §4): which machine's gateway the page
// uses (`GET /machine/{m}/gateway`, the gateway's own protocol, docs/gateway.md §6), what this
// tab remembers of it, and what the connection badge says about it. Pure: tested by Node
// (tests/js/hubterm.test.mjs); app.js connects the gateway and panels.js draws the terminal.

import { connectionView } from './present.js';

/** This tab's terminal machine on a hub's page: `{ machine, pinned }`, kept across reloads. */
export const HUB_TERMINAL_KEY = 'ax-code.hub-terminal';

/** The hub's path of `machine`'s gateway WebSocket. */
export function machineGatewayPath(machine) {
  return `/machine/${encodeURIComponent(machine)}/gateway`;
}

/**
 * Where this tab remembers its terminal on `machine` (the terminal's ID), one key per machine:
 * each machine's terminal stays on the hub while the panel shows another's.
 */
export function terminalKeyOf(machine) {
  return `ax-code.terminal@${machine}`;
}

/**
 * The machine whose terminal the panel shows and whose gateway the page uses, or null when
 * there is none to use. `machines`: the hub's machine records (`{name, online}`); `pinned`:
 * the machine the person chose in the panel (null: follow the session shown); `current`: the
 * machine in use now; `shown`: the machine of the session in the active pane; `opening`: the
 * panel is being shown now. A chosen machine the hub still lists wins; else opening the panel
 * takes the shown session's machine; else the page keeps the machine in use (a click on
 * another machine's pane does not move the terminal); else the shown session's, else the
 * first online machine by name.
 */
export function terminalMachine({ machines, pinned = null, current = null, shown = null, opening = false }) {
  const list = (Array.isArray(machines) ? machines : []).filter((m) => typeof m?.name === 'string');
  const names = new Set(list.map((m) => m.name));
  const known = (m) => typeof m === 'string' && names.has(m);
  if (known(pinned)) return pinned;
  if (opening && known(shown)) return shown;
  if (known(current)) return current;
  if (known(shown)) return shown;
  const online = list.filter((m) => m.online).map((m) => m.name).sort();
  return online[0] ?? null;
}

/**
 * The choices of the panel's machine picker: every machine the hub lists, by name, with
 * whether it is online, and the one in use marked; the machine in use is listed even when the
 * hub no longer lists it.
 */
export function terminalChoices(machines, inUse) {
  const list = (Array.isArray(machines) ? machines : [])
    .filter((m) => typeof m?.name === 'string')
    .map((m) => ({ name: m.name, online: Boolean(m.online) }));
  if (typeof inUse === 'string' && !list.some((m) => m.name === inUse)) list.push({ name: inUse, online: false });
  list.sort((a, b) => a.name.localeCompare(b.name));
  return list.map((m) => ({ ...m, selected: m.name === inUse, label: m.online ? m.name : `${m.name} (offline)` }));
}

/**
 * The panel's title on a hub's page, naming the machine in use (null: none): the panel shows
 * one machine's terminal at a time.
 */
export function terminalPlace(machine) {
  return machine ? `Operator terminal on ${machine}` : 'Operator terminal (no machine to open it on)';
}

/** What this tab remembered (`HUB_TERMINAL_KEY`'s text) as `{ machine, pinned }`. */
export function readRemembered(text) {
  try {
    const v = JSON.parse(text ?? '');
    if (typeof v?.machine === 'string' && v.machine !== '') return { machine: v.machine, pinned: v.pinned === true };
  } catch {
    /* nothing remembered */
  }
  return { machine: null, pinned: false };
}

/**
 * The connection badge of a hub's page: the event stream and the gateway of the terminal's
 * machine (`machine`, its `gateway` state, `detail`), as `connectionView` for a backend's
 * page; with no machine to use there is no gateway to wait for, and the badge follows the
 * stream. The title names the machine.
 */
export function hubConnectionView(machine, gateway, stream, everLive, detail = '') {
  if (!machine) {
    const view = connectionView('connected', stream, everLive);
    return { ...view, title: ['Terminal gateway: no machine to use', `Session events: ${stream === 'live' ? 'live' : 'reconnecting'}`].join('\n') };
  }
  const view = connectionView(gateway, stream, everLive, detail);
  return { ...view, title: view.title.replace(/^Agent gateway:/, `Terminal gateway (${machine}):`) };
}
