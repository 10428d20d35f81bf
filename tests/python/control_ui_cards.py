"""How the Control UI words approvals, tool cards, usage and sessions (docs/control-ui.md §3-§5),
in headless Chromium against a real `ax-code serve`. The cards are drawn by the page's own
modules (imported from /assets/) from requests shaped like the real adapters' (Claude's
options `allow_always` first, Gemini's `proceed_always` first, Codex's command as an array
with `cwd`, its internal option names and its feedback option); the sessions part drives the
page itself.

1. Options: one order by kind (allow once, allow always, reject once, reject always), every
   option the agent sent (the agent's order within a kind; Codex offers two of one kind), each
   answering with its own id; allow once is the primary button and comes first, no "always"
   option ever is primary; a click sends that option's id.
2. The approval shows every field of the input: an array command joined shell-quoted, `cwd`,
   `workdir`, `dangerouslyDisableSandbox`, any other key (nested values as compact JSON), as
   text, bounded, with control and bidirectional characters made visible.
3. Codex: labels are the agent's names (never an internal identifier), the buttons wrap and
   stay inside a narrow card, an option asking for feedback is marked so.
4. Tool cards: output fenced as ```console shown once and unfenced; a run whose terminal exited
   non-zero shows ✗; an answered approval's line shows its answer (✓ ✗ ⊘), not `?`; an edit
   approval says "edit" and shows the diff; hunks numbered from the diff's `line`. A `shell`
   session's command (its execute call) shows as its run: the output not folded, then `exit N`,
   `killed by signal S` or `aborted`; another agent's failed command card says `exit N`.
5. Usage: the header meter (`ctx 12.3k/200k 6% · $0.04`) from `agentState.usage`.
6. Sessions: the sidebar names each session's agent; an untitled session reads "New AGENT
   session", not its id; the composer's placeholder names the agent.
7. Delete: the row says "deleting…" until the backend answered.
8. close_pane (the `screen` tool): a draft in another pane does not refuse it; a draft in the
   pane it closes does.

Usage: python control_ui_cards.py AX_CODE_BINARY
"""

import asyncio
import os
import shutil
import sys
import tempfile
import time

from selenium.webdriver.common.by import By

from axtest import Backend, browser, check, close_browser, mcp_session, run_checks, wait_for

# Drawn in the page by its own modules; returns what the checks read.
CARDS_JS = r"""
const done = arguments[arguments.length - 1];
Promise.all([import('/assets/turns.js'), import('/assets/present.js'), import('/assets/diff.js'),
             import('/assets/panes.js'), import('/assets/layout.js')]).then(([t, p, d, panes, layout]) => {
  const button = (reply, label, cls, feedback, optionId) => {
    const b = document.createElement('button');
    b.dataset.sent = optionId ?? '';
    b.dataset.testid = `approve-${reply}`;
    b.dataset.reply = reply;
    b.className = cls || '';
    b.textContent = label;
    if (feedback) b.dataset.fb = 'true';
    return b;
  };
  const tool = (extra) => ({ toolCallId: 'c1', title: 'a call', kind: 'execute', status: 'pending', content: [], locations: [], ...extra });
  const perm = (options, toolCall) => ({ id: 'per_1', sessionId: 's', state: 'pending', options, toolCall: tool(toolCall) });
  const buttons = (card) => [...card.querySelectorAll('.approval-actions button')].map((b) => ({
    reply: b.dataset.reply, label: b.textContent, primary: b.classList.contains('primary'),
    option: b.dataset.optionId, feedback: b.dataset.feedback === 'true', sent: b.dataset.sent,
  }));
  const session = { id: 's', agent: 'claude', title: '' };
  const o = (optionId, name, kind) => ({ optionId, name, kind });
  const out = {};

  // 1. options
  out.claude = buttons(t.approvalCard(perm([o('allow_always', 'Always Allow', 'allow_always'), o('allow', 'Allow', 'allow_once'), o('reject', 'Reject', 'reject_once')]), session, button));
  out.gemini = buttons(t.approvalCard(perm([o('proceed_always', 'Allow always', 'allow_always'), o('proceed_once', 'Allow', 'allow_once'), o('cancel', 'Reject', 'reject_once')]), session, button));
  out.full = buttons(t.approvalCard(perm([o('o4', 'Never', 'reject_always'), o('o2', 'Always', 'allow_always'), o('o3', 'No', 'reject_once'), o('o1', 'Yes', 'allow_once')]), session, button));
  // Codex's command approval: two options of each of two kinds, in the agent's order.
  const execOptions = [
    o('approved', 'Yes, proceed', 'allow_once'),
    o('approved-for-session', "Yes, and don't ask again for this command in this session", 'allow_always'),
    o('approved-execpolicy-amendment', 'Yes, and remember this command pattern', 'allow_always'),
    o('denied', 'No, continue without running it', 'reject_once'),
    o('abort', 'No, and tell Codex what to do differently', 'reject_once'),
  ];
  out.exec = buttons(t.approvalCard(perm([...execOptions].reverse()), session, button));
  // A click in a pane's approvals answers with the option's own id.
  const sent = [];
  const approvals = document.createElement('div');
  panes.fillApprovals(approvals, [perm(execOptions)], 's', {
    reply: (...args) => { sent.push(args); return Promise.resolve(false); },
    toast: () => {},
  });
  approvals.dataset.shownAt = String(performance.now() - 1e6);
  const denied = [...approvals.querySelectorAll('.approval-actions button')].find((b) => b.textContent.startsWith('No, continue'));
  denied?.click();
  out.execSent = sent;
  out.onlyAlways = buttons(t.approvalCard(perm([o('a', 'Always', 'allow_always'), o('r', 'No', 'reject_once')]), session, button));

  // 2. every field of the input
  const huge = 'x'.repeat(20000);
  const input = {
    command: ['bash', '-lc', "echo 'hi there' && ls <img src=x onerror=alert(1)>"],
    cwd: '/work/proj', workdir: '/work/proj/sub', dangerouslyDisableSandbox: true,
    env: { A: '1', B: [1, 2] }, description: 'say\u202eevil\x1b[31m', big: huge,
  };
  const card2 = t.approvalCard(perm([o('allow', 'Allow', 'allow_once')], { rawInput: input, title: 'bash -lc …' }), session, button);
  out.input = {
    command: card2.querySelector('[data-testid="approval-command"]').textContent,
    fields: [...card2.querySelectorAll('[data-testid="input-field"]')].map((f) => [f.dataset.key, f.querySelector('dd').textContent]),
    img: card2.querySelector('img') !== null,
  };
  const toolCard2 = t.toolCard(tool({ rawInput: input, status: 'completed' }), true);
  out.toolFields = [...toolCard2.querySelectorAll('[data-testid="input-field"]')].map((f) => f.dataset.key);
  out.toolCommand = toolCard2.querySelector('[data-testid="tool-input"]').textContent;

  // 3. Codex: names, feedback, narrow
  const codexOptions = [
    o('approved', 'Yes, proceed', 'allow_once'),
    o('approved-execpolicy-amendment', 'ApprovedExecpolicyAmendment', 'allow_always'),
    o('approved-for-session', "Yes, and don't ask again for this command in this session", 'allow_always'),
    o('abort', 'No, and tell Codex what to do differently', 'reject_once'),
  ];
  const codexTool = {
    kind: 'execute', title: 'pytest -q',
    rawInput: { command: ['/bin/bash', '-lc', 'python -m pytest -q tests/test_calc.py'], cwd: '/work/proj', workdir: '/work/proj' },
  };
  const codex = t.approvalCard(perm(codexOptions, codexTool), { id: 's', agent: 'codex' }, button);
  out.codex = buttons(codex);
  const longOptions = [
    o('approved', 'Yes, proceed', 'allow_once'),
    o('approved-for-session', "Yes, and don't ask again for commands that start with `/usr/local/bin/some-very-long-tool-name-without-any-spaces-at-all --flag`", 'allow_always'),
    o('abort', 'No, and tell Codex what to do differently', 'reject_once'),
  ];
  const host = document.createElement('div');
  host.className = 'approvals';
  host.style.width = '300px';
  host.style.position = 'fixed';
  host.style.left = '0';
  host.style.top = '0';
  document.body.append(host);
  const narrow = t.approvalCard(perm(longOptions, codexTool), { id: 's', agent: 'codex' }, button);
  host.append(narrow);
  const box = narrow.getBoundingClientRect();
  out.narrow = {
    inside: [...narrow.querySelectorAll('.approval-actions button')].every((b) => {
      const r = b.getBoundingClientRect();
      return r.left >= box.left - 0.5 && r.right <= box.right + 0.5 && b.scrollWidth <= b.clientWidth + 1;
    }),
    cardFits: narrow.scrollWidth <= narrow.clientWidth + 1,
    count: narrow.querySelectorAll('.approval-actions button').length,
  };
  host.remove();
  out.labels = [
    p.optionLabel(o('x', 'ApprovedExecpolicyAmendment', 'allow_always')),
    p.optionLabel(o('abort', 'Abort', 'reject_once')),
    p.optionLabel(o('approved', '', 'allow_once')),
    p.optionLabel(o('allow', 'Allow', 'allow_once')),
  ];

  // 4. tool cards
  const fenced = t.toolCard(tool({ status: 'completed', content: [{ type: 'text', text: '```console\n4 passed in 0.01s\n```' }], rawOutput: '4 passed in 0.01s' }), true);
  out.fenced = {
    texts: [...fenced.querySelectorAll('[data-testid="tool-text"]')].map((e) => e.textContent),
    outputs: [...fenced.querySelectorAll('[data-testid="tool-output"]')].map((e) => e.textContent),
  };
  const failedTerm = t.toolCard(tool({ status: 'completed', content: [{ type: 'terminal', terminalId: 'term1', output: 'F\n1 failed', exit: { exitCode: 1 } }] }), false);
  const failedOut = t.toolCard(tool({ status: 'completed', rawOutput: { exit_code: 2, stdout: '' } }), false);
  const passed = t.toolCard(tool({ status: 'completed', content: [{ type: 'terminal', terminalId: 'term2', output: 'ok', exit: { exitCode: 0 } }] }), false);
  const mark = (c) => [c.dataset.status, c.querySelector('.mark')?.textContent];
  out.marks = { failedTerm: mark(failedTerm), failedOut: mark(failedOut), passed: mark(passed) };
  const line = (outcome) => {
    const el = t.permissionView({ permissionId: 'per_1', toolCall: tool({}), options: [o('allow', 'Allow', 'allow_once'), o('reject', 'Reject', 'reject_once')], outcome });
    return [el.dataset.answer, el.querySelector('[data-testid="permission-icon"]').textContent];
  };
  out.lines = {
    allowed: line({ state: 'selected', optionId: 'allow', kind: 'allow_once' }),
    rejected: line({ state: 'selected', optionId: 'reject', kind: 'reject_once' }),
    cancelled: line({ state: 'cancelled' }),
    pending: line({ state: 'pending' }),
  };
  const edit = t.approvalCard(perm([o('allow', 'Allow', 'allow_once')], {
    kind: 'edit', title: 'Edit calc.py', rawInput: { file_path: '/work/proj/calc.py', old_string: 'a - b', new_string: 'a + b' },
    content: [{ type: 'diff', path: '/work/proj/calc.py', oldText: 'def add(a, b):\n    return a - b\n', newText: 'def add(a, b):\n    return a + b\n', line: 41 }],
    locations: [{ path: '/work/proj/calc.py' }],
  }), session, button);
  out.edit = {
    title: edit.querySelector('[data-testid="approval-title"]').textContent,
    adds: [...edit.querySelectorAll('.diff-add')].map((e) => e.textContent),
    hunks: [...edit.querySelectorAll('.diff-hunk')].map((e) => e.textContent),
  };
  // Codex's edit (codex-acp 0.16.0): its input is the whole patch event, the changes keyed by
  // path; its output the patch result with the same changes.
  const changes = { '/work/proj/calc.py': { type: 'update', unified_diff: '@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n', move_path: null } };
  const patch = { call_id: 'call_edit_1', turn_id: '01a233a2', auto_approved: false, changes };
  const patchOut = { call_id: 'call_edit_1', turn_id: '01a233a2', stdout: 'Success. Updated the following files:\nM calc.py\n', stderr: '', success: true, changes, status: 'completed' };
  const codexEdit = t.toolCard(tool({ kind: 'edit', title: 'Edit /work/proj/calc.py', status: 'completed', rawInput: patch, rawOutput: patchOut }), undefined);
  const codexEditWithDiff = t.toolCard(tool({
    kind: 'edit', title: 'Edit /work/proj/calc.py', status: 'completed', rawInput: patch,
    content: [{ type: 'diff', path: '/work/proj/calc.py', oldText: 'def add(a, b):\n    return a - b\n', newText: 'def add(a, b):\n    return a + b\n' }],
  }), undefined);
  out.codexEdit = {
    open: codexEdit.open,
    fields: [...codexEdit.querySelectorAll('[data-testid="input-field"]')].map((f) => [f.dataset.key, f.querySelector('dd').textContent]),
    adds: [...codexEdit.querySelectorAll('.diff-add')].map((e) => e.textContent),
    dels: [...codexEdit.querySelectorAll('.diff-del')].map((e) => e.textContent),
    json: codexEdit.textContent.includes('unified_diff') || codexEdit.textContent.includes('{"'),
    output: [...codexEdit.querySelectorAll('[data-testid="tool-output"]')].map((e) => e.textContent),
    diffsWithContent: codexEditWithDiff.querySelectorAll('[data-testid="diff"]').length,
  };
  // Codex's read (an exec of `cat`): the command's output, its exit code 0.
  const codexRead = t.toolCard(tool({
    kind: 'read', title: 'Read notes.txt', status: 'completed',
    rawInput: { call_id: 'call_edit_0', process_id: '73246', command: ['/bin/bash', '-lc', 'cat notes.txt'], cwd: '/work/proj', parsed_cmd: [{ type: 'read', cmd: 'cat notes.txt', name: 'notes.txt', path: 'notes.txt' }], source: 'unified_exec_startup' },
    rawOutput: { call_id: 'call_edit_0', command: ['/bin/bash', '-lc', 'cat notes.txt'], stdout: 'alpha\n', stderr: '', aggregated_output: 'alpha\n', exit_code: 0, formatted_output: 'alpha\n', status: 'completed' },
  }), true);
  const codexFail = t.toolCard(tool({ status: 'completed', rawOutput: { stdout: '', stderr: 'boom\n', aggregated_output: 'boom\n', exit_code: 1, formatted_output: 'boom\n' } }), true);
  out.codexRead = {
    command: codexRead.querySelector('[data-testid="tool-input"]').textContent,
    output: [...codexRead.querySelectorAll('[data-testid="tool-output"]')].map((e) => e.textContent),
    mark: mark(codexRead), failMark: mark(codexFail),
  };
  // Claude's Read: the same text as fenced content and as raw output.
  const claudeRead = t.toolCard(tool({
    kind: 'read', title: 'Read notes.txt', status: 'completed', rawInput: { file_path: '/work/proj/notes.txt' },
    rawOutput: '     1\u2192alpha\n     2\u2192\n',
    content: [{ type: 'text', text: '```\n     1\u2192alpha\n     2\u2192\n```' }],
  }), true);
  out.claudeRead = [...claudeRead.querySelectorAll('[data-testid="tool-text"], [data-testid="tool-output"]')].map((e) => e.textContent);
  // Codex's patch approval: "Yes" and "No, provide feedback".
  out.codexPatch = buttons(t.approvalCard(perm([o('approved', 'Yes', 'allow_once'), o('abort', 'No, provide feedback', 'reject_once')],
    { kind: 'edit', title: 'Edit /work/proj/calc.py', rawInput: patch }), { id: 's', agent: 'codex' }, button));
  out.hunks = {
    at41: d.unifiedLines('a\nb\nc\n', 'a\nB\nc\n', 41).filter(([op]) => op === '@').map(([, l]) => l),
    noLine: d.unifiedLines('a\nb\nc\n', 'a\nB\nc\n').filter(([op]) => op === '@').map(([, l]) => l),
  };

  // 4b. a shell session's command (its execute call with a terminal) as its run
  const runOf = (c) => ({
    head: c.querySelector('.tool-head')?.textContent ?? null, status: c.dataset.status, folds: c.tagName === 'DETAILS',
    outputs: [...c.querySelectorAll('[data-testid="run-output"]')].map((e) => e.textContent),
    exit: [...c.querySelectorAll('[data-testid="run-exit"]')].map((e) => [e.textContent, e.className]),
    dropped: [...c.querySelectorAll('[data-testid="run-dropped"]')].map((e) => e.textContent),
    notes: [...c.querySelectorAll('[data-testid="run-note"]')].map((e) => e.textContent),
    json: c.textContent.includes('exitCode'),
  });
  const sterm = (output, exit, droppedBytes) => ({ type: 'terminal', terminalId: 'term-1', output, ...(exit ? { exit } : {}), ...(droppedBytes ? { droppedBytes } : {}) });
  const exitOut = (exitCode, signal) => ({ exitCode, signal, truncated: false });
  out.runs = {
    ok: runOf(t.runView(tool({ title: 'ls -1', status: 'completed', content: [sterm('\x1b[34mCargo.toml\x1b[0m\nsrc\n', { exitCode: 0 })], rawOutput: exitOut(0, null) }))),
    failed: runOf(t.runView(tool({ title: 'make', status: 'failed', content: [sterm('no rule\n', { exitCode: 2 }, 4096)], rawOutput: exitOut(2, null) }))),
    killed: runOf(t.runView(tool({ title: 'sleep 9', status: 'failed', content: [sterm('', { signal: 'SIGTERM' })], rawOutput: exitOut(null, 'SIGTERM') }))),
    aborted: runOf(t.runView(tool({ title: 'sleep 9', status: 'cancelled', content: [sterm('started\n', { signal: 'SIGKILL' })] }))),
    rejected: runOf(t.runView(tool({ title: 'rm -rf build', status: 'failed' }))),
    notStarted: runOf(t.runView(tool({ title: 'cat a', status: 'failed', content: [{ type: 'text', text: 'a: not a file in the project; the command did not run' }] }))),
    running: runOf(t.runView(tool({ title: 'yes', status: 'in_progress', content: [sterm('y\ny\n')] }))),
  };
  // Another agent's failed command stays a folded card; its header says the exit, no JSON.
  const agentRun = t.toolCard(tool({ title: 'make', status: 'failed', content: [sterm('no rule\n', { exitCode: 2 })], rawOutput: exitOut(2, null) }), true);
  out.agentRun = { tag: agentRun.tagName, status: agentRun.querySelector('[data-testid="tool-status"]').textContent, json: agentRun.textContent.includes('exitCode') };
  // The transcript picks by the session's agent: a run in a shell session, a card elsewhere.
  const turnOf = (agent) => {
    const el = document.createElement('div');
    const sid = `ses_${agent}`;
    const view = { store: { sessions: new Map([[sid, { id: sid, agent, status: 'idle', title: '' }]]), messages: new Map() }, open: new Map() };
    panes.fillTranscript(el, [{ id: 'msg_2', role: 'assistant', created: 1, parts: [
      { type: 'tool_call', ...tool({ title: 'ls', status: 'completed', content: [sterm('a\n', { exitCode: 0 })], rawOutput: exitOut(0, null) }) },
    ] }], view, sid);
    const call = el.querySelector('[data-testid="tool-call"]');
    return [call.dataset.run === 'true', call.tagName];
  };
  out.routing = { shell: turnOf('shell'), claude: turnOf('claude') };

  // 5. usage
  out.usage = [
    p.usageText({ used: 12345, size: 200000, cost: { amount: 0.0412, currency: 'USD' } }),
    p.usageText({ used: 950, size: 1000 }),
    p.usageText({ used: 1500000, size: 2000000, cost: { amount: 1.5, currency: 'EUR' } }),
    p.usageText(undefined),
  ];
  const meter = panes.usageMeter({ id: 's', agent: 'claude', agentState: { usage: { used: 12345, size: 200000, cost: { amount: 0.04, currency: 'USD' } } } });
  out.meter = meter?.textContent ?? null;
  out.noMeter = panes.usageMeter({ id: 's', agent: 'claude', agentState: {} });

  // 6. titles and placeholders
  out.titles = [p.sessionTitle({ id: 'ses_1', agent: 'claude', title: '' }), p.sessionTitle({ id: 'ses_1', agent: 'codex', title: 'ses_1' }),
                p.sessionTitle({ id: 'ses_1', agent: 'claude', title: 'Fix the tests' }), p.sessionTitle({ id: 'ses_1', title: '' })];
  out.placeholders = [panes.placeholderFor({ agent: 'claude' }), panes.placeholderFor({ agent: 'shell' })];

  // 8. which drafts may refuse a close
  const two = { version: 1, nextId: 3, active: 'p1', sidebar: true, panels: layout.defaultLayout().panels,
                columns: [{ weight: 1, panes: [{ id: 'p1', session: 'a', weight: 1 }] }, { weight: 1, panes: [{ id: 'p2', session: 'b', weight: 1 }] }] };
  const closed = layout.applyCommand(two, { command: { kind: 'close-pane', sessionKey: 'b' } });
  out.drafts = {
    close: layout.draftPanes(two, closed.layout, 'close-pane').map((x) => x.id),
    affected: layout.affectedPanes(two, closed.layout).map((x) => x.id),
  };
  done(out);
}).catch((e) => done({ error: String(e && e.stack || e) }));
"""


def check_cards(r):
    check("error" not in r, f"the page's modules load: {r.get('error')}")
    # 1.
    order = ["allow_once", "allow_always", "reject_once"]
    for name in ["claude", "gemini"]:
        got = [b["reply"] for b in r[name]]
        check(got == order, f"{name}'s options in one order by kind: {got}")
        check([b["primary"] for b in r[name]] == [True, False, False], f"{name}: allow once is the one primary button: {r[name]}")
    check([b["reply"] for b in r["full"]] == ["allow_once", "allow_always", "reject_once", "reject_always"],
          f"all four kinds in order: {r['full']}")
    check([(b["reply"], b["option"], b["sent"]) for b in r["exec"]] == [
        ("allow_once", "approved", "approved"),
        ("allow_always", "approved-execpolicy-amendment", "approved-execpolicy-amendment"),
        ("allow_always", "approved-for-session", "approved-for-session"),
        ("reject_once", "abort", "abort"),
        ("reject_once", "denied", "denied"),
    ], f"every option, by kind, the agent's order within a kind, each answering with its id: {r['exec']}")
    check([b["primary"] for b in r["exec"]] == [True, False, False, False, False],
          f"one primary button, the first allow once: {r['exec']}")
    check(r["execSent"] == [["s", "per_1", "reject_once", "denied"]],
          f"a click answers with the second reject_once option's own id: {r['execSent']}")
    check(not any(b["primary"] for b in r["onlyAlways"]) and r["onlyAlways"][0]["reply"] == "allow_always",
          f"without an allow-once option no button is primary (an always never is): {r['onlyAlways']}")
    # 2.
    inp = r["input"]
    check(inp["command"] == "bash -lc 'echo '\\''hi there'\\'' && ls <img src=x onerror=alert(1)>'",
          f"the array command, joined shell-quoted: {inp['command']!r}")
    fields = dict(inp["fields"])
    check([k for k, _ in inp["fields"]] == ["cwd", "workdir", "dangerouslyDisableSandbox", "env", "description", "big"],
          f"every other field, working directories first: {[k for k, _ in inp['fields']]}")
    check(fields["cwd"] == "/work/proj" and fields["workdir"] == "/work/proj/sub" and fields["dangerouslyDisableSandbox"] == "true",
          f"cwd, workdir and the sandbox flag: {[fields.get(k) for k in ('cwd', 'workdir', 'dangerouslyDisableSandbox')]}")
    check(fields["env"] == '{"A":"1","B":[1,2]}', f"nested values as compact JSON: {fields['env']!r}")
    check(fields["description"] == "say⟨U+202E⟩evil⟨ESC⟩[31m", f"bidi and control characters made visible: {fields['description']!r}")
    check(len(fields["big"]) < 8100 and fields["big"].endswith("12000 more characters not shown"),
          f"a long value is bounded and says so ({len(fields['big'])} characters)")
    check(not inp["img"], "markup in the input stays text")
    check(r["toolFields"] == ["cwd", "workdir", "dangerouslyDisableSandbox", "env", "description", "big"]
          and r["toolCommand"] == inp["command"], f"the tool card shows the same fields: {r['toolFields']}")
    # 3.
    codex = r["codex"]
    check([b["label"] for b in codex] == ["Yes, proceed", "Allow always",
                                          "Yes, and don't ask again for this command in this session",
                                          "No, and tell Codex what to do differently"],
          f"Codex's option names, an internal identifier replaced, every option: {[b['label'] for b in codex]}")
    check([b["option"] for b in codex] == ["approved", "approved-execpolicy-amendment", "approved-for-session", "abort"],
          f"each button is its own option: {codex}")
    check([b["feedback"] for b in codex] == [False, False, False, True], f"the feedback option is marked: {codex}")
    check(r["labels"] == ["Allow always", "Abort", "Allow once", "Allow"], f"option labels: {r['labels']}")
    check(r["narrow"] == {"inside": True, "cardFits": True, "count": 3}, f"in a 300 px card every button wraps inside it: {r['narrow']}")
    # 4.
    check(r["fenced"] == {"texts": ["4 passed in 0.01s"], "outputs": []}, f"fenced output shown once, unfenced: {r['fenced']}")
    check(r["marks"] == {"failedTerm": ["failed", "✗"], "failedOut": ["failed", "✗"], "passed": ["completed", "✓"]},
          f"a run that exited non-zero shows ✗: {r['marks']}")
    check(r["lines"] == {"allowed": ["allowed", "✓"], "rejected": ["rejected", "✗"], "cancelled": ["cancelled", "⊘"], "pending": ["pending", "?"]},
          f"an answered approval's line shows its answer: {r['lines']}")
    check(r["edit"]["title"].startswith("claude wants to edit:"), f"an edit approval says edit: {r['edit']['title']!r}")
    check(r["edit"]["adds"] == ["+    return a + b\n"] and r["edit"]["hunks"] == ["@@ -41,2 +41,2 @@\n"],
          f"and shows the diff, numbered from its line: {r['edit']}")
    ce = r["codexEdit"]
    check(ce["open"] and dict(ce["fields"]).get("changes") == "update /work/proj/calc.py" and not ce["json"],
          f"Codex's edit card lists the changed files, no raw JSON of the patch: {ce['fields']}")
    check(ce["adds"] == ["+    return a + b\n"] and ce["dels"] == ["-    return a - b\n"], f"and shows its diff: {ce}")
    check(ce["output"] == ["Success. Updated the following files:\nM calc.py\n"], f"its output is the patch result's text: {ce['output']}")
    cr = r["codexRead"]
    check(cr["command"] == "/bin/bash -lc 'cat notes.txt'" and cr["output"] == ["alpha\n"] and cr["mark"] == ["completed", "✓"],
          f"Codex's read: the command, its output as text, ✓: {cr}")
    check(cr["failMark"] == ["failed", "✗"], f"a Codex run whose exit_code is 1 shows ✗: {cr['failMark']}")
    check(r["claudeRead"] == ["     1→alpha\n     2→"], f"Claude's fenced output and raw output shown once, unfenced: {r['claudeRead']}")
    check([(b["label"], b["feedback"]) for b in r["codexPatch"]] == [("Yes", False), ("No, provide feedback", True)],
          f"Codex's patch approval: its names, the feedback option marked: {r['codexPatch']}")
    check(ce["diffsWithContent"] == 1, f"a diff the content already shows is not shown twice: {ce['diffsWithContent']}")
    check(r["hunks"] == {"at41": ["@@ -41,3 +41,3 @@"], "noLine": ["@@ -1,3 +1,3 @@"]}, f"hunk numbers: {r['hunks']}")
    # 4b.
    runs = r["runs"]
    ok = runs["ok"]
    check(not ok["folds"] and ok["outputs"] == ["Cargo.toml\nsrc\n"] and ok["exit"] == [["exit 0", "note ok"]] and not ok["json"],
          f"a shell command shows as its run: the output (escapes removed), not folded, then exit 0: {ok}")
    check(ok["head"] is None and ok["status"] == "completed",
          f"no header line repeating the person's command: {ok['head']!r}")
    check(runs["failed"]["exit"] == [["exit 2", "note bad"]] and runs["failed"]["head"] is None
          and runs["failed"]["dropped"] == ["… output truncated (4096 bytes dropped)"],
          f"a failed run says exit 2 (and the bytes dropped): {runs['failed']}")
    check(runs["killed"]["exit"] == [["killed by signal SIGTERM", "note bad"]], f"a killed run says its signal: {runs['killed']}")
    check(runs["aborted"]["exit"] == [["aborted", "note bad"]] and runs["aborted"]["outputs"] == ["started\n"],
          f"an aborted run says aborted, not the signal: {runs['aborted']}")
    check(runs["rejected"]["exit"] == [] and runs["rejected"]["outputs"] == [] and runs["rejected"]["status"] == "failed"
          and runs["rejected"]["notes"] == ["nothing ran"],
          f"a rejected command: failed, nothing ran: {runs['rejected']}")
    check(runs["notStarted"]["notes"] == ["a: not a file in the project; the command did not run"],
          f"a command that could not start says why: {runs['notStarted']}")
    check(runs["running"]["exit"] == [] and runs["running"]["outputs"] == ["y\ny\n"] and runs["running"]["head"] == "running",
          f"a running command streams under a line saying so: {runs['running']}")
    check(r["agentRun"] == {"tag": "DETAILS", "status": "exit 2", "json": False},
          f"another agent's failed command: a card saying exit 2, no JSON: {r['agentRun']}")
    check(r["routing"] == {"shell": [True, "DIV"], "claude": [False, "DETAILS"]}, f"a run in a shell session only: {r['routing']}")
    # 5.
    check(r["usage"] == ["ctx 12.3k/200k 6% · $0.04", "ctx 950/1k 95%", "ctx 1.5M/2M 75% · €1.50", None], f"usage meter text: {r['usage']}")
    check(r["meter"] == "ctx 12.3k/200k 6% · $0.04" and r["noMeter"] is None, f"the header meter: {r['meter']!r}")
    # 6.
    check(r["titles"] == ["New claude session", "New codex session", "Fix the tests", "New shell session"], f"titles: {r['titles']}")
    check(r["placeholders"][0].startswith("Ask claude…") and r["placeholders"][1].startswith("Command for this session"),
          f"placeholders: {r['placeholders']}")
    # 8.
    check(r["drafts"] == {"close": ["p2"], "affected": ["p1", "p2"]},
          f"only the closed pane's draft counts for close_pane (the other only grows): {r['drafts']}")


async def screen(binary, backend, args):
    """One `screen` tool call through `ax-code mcp screen` (the official MCP SDK)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", backend.project),
        "AX_CODE_SERVER_PASSWORD": backend.token,
        "AX_CODE_DATA_DIR": backend.data,
    }
    async with mcp_session(binary, ["mcp", "screen", "--url", backend.url], env) as mcp:
        await mcp.initialize()
        result = await mcp.call_tool("screen", args)
        content = result.structured_content
        check(content.get("ok") is True and len(content["outcomes"]) == 1, f"screen {args} reached the one Control UI: {content}")
        return content["outcomes"][0]


def run(binary):
    root = tempfile.mkdtemp(prefix="axcards")
    backend = Backend(binary, root)
    driver = None
    try:
        driver = browser(os.path.join(root, "profile"), "--window-size=1400,900", console_log=True)
        js = driver.execute_script
        driver.get(backend.sign_in_link())
        wait_for(lambda: js("return document.getElementById('app').hidden === false"), "signed in")

        check_cards(driver.execute_async_script(CARDS_JS))

        # ---- 6. sessions name their agent; an untitled one has a readable title ----
        a = backend.api("POST", "/session", {})["id"]
        b = backend.api("POST", "/session", {"title": "beta"})["id"]
        row = lambda sid: driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{sid}"]')
        wait_for(lambda: row(a) and row(b), "both sessions are listed")
        check(row(a).find_element(By.CSS_SELECTOR, ".session-title").text == "New shell session",
              f"the untitled session reads as new, not as its id: {row(a).text!r}")
        check(row(b).find_element(By.CSS_SELECTOR, '[data-testid="session-item-agent"]').text == "shell",
              f"the row names the agent: {row(b).text!r}")
        row(a).click()
        pane = lambda: driver.find_elements(By.CSS_SELECTOR, '[data-testid="pane"]')
        wait_for(lambda: pane()[0].get_attribute("data-session") == a, "the pane shows the new session")
        check(pane()[0].find_element(By.CSS_SELECTOR, ".pane-title").text == "New shell session", "so does the pane's title")

        # ---- 8. close_pane: a draft in another pane does not refuse it ----
        pane()[0].find_element(By.CSS_SELECTOR, '[aria-label="Split right"]').click()
        wait_for(lambda: len(pane()) == 2, "split: two panes")
        row(b).click()
        wait_for(lambda: [p.get_attribute("data-session") for p in pane()] == [a, b], "the second pane shows beta")
        set_draft = ("const box = document.querySelector(`[data-testid=pane][data-session='${arguments[0]}'] [data-testid=composer-input]`);"
                     "box.value = arguments[1]; box.dispatchEvent(new Event('input', {bubbles: true}));")
        js(set_draft, a, "a draft for the first pane")
        time.sleep(1.6)  # the person's clicks above hold agent commands off for 1.5 s
        outcome = asyncio.run(screen(binary, backend, {"action": "close_pane", "sessionKey": b}))
        check(outcome.get("outcome") == "applied", f"close_pane of beta's pane applies despite the draft in the other pane: {outcome}")
        wait_for(lambda: [p.get_attribute("data-session") for p in pane()] == [a], "one pane left, the draft's")
        check(pane()[0].find_element(By.CSS_SELECTOR, '[data-testid="composer-input"]').get_attribute("value") == "a draft for the first pane",
              "the draft is still there")
        pane()[0].find_element(By.CSS_SELECTOR, '[aria-label="Split right"]').click()
        wait_for(lambda: len(pane()) == 2, "split again")
        row(b).click()
        wait_for(lambda: [p.get_attribute("data-session") for p in pane()] == [a, b], "the second pane shows beta again")
        js(set_draft, b, "a draft in the pane to close")
        time.sleep(1.6)
        outcome = asyncio.run(screen(binary, backend, {"action": "close_pane", "sessionKey": b}))
        check(outcome.get("outcome") == "ignored" and "draft" in outcome.get("reason", ""),
              f"a draft in the pane it would close refuses it: {outcome}")
        check(len(pane()) == 2, "both panes stay")

        # ---- 7. delete: the row says so until the backend answered ----
        js("""
            window.__deleting = [];
            new MutationObserver(() => {
              for (const r of document.querySelectorAll('[data-testid=session-row][data-deleting=true]')) {
                window.__deleting.push([r.querySelector('[data-testid=session-item]').dataset.session, r.textContent.includes('deleting'), r.querySelector('[data-testid=session-delete]').disabled]);
              }
            }).observe(document.getElementById('session-list'), { subtree: true, childList: true, attributes: true });
        """)
        row(b).find_element(By.XPATH, "..").find_element(By.CSS_SELECTOR, '[data-testid="session-delete"]').click()
        wait_for(lambda: driver.switch_to.alert, "asked to confirm").accept()
        wait_for(lambda: not driver.find_elements(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{b}"]'),
                 "the deleted session leaves the list")
        seen = js("return window.__deleting")
        check(seen and all(s == [b, True, True] for s in seen),
              f"until then its row said “deleting…” and its delete button was disabled: {seen[:3]}")
    finally:
        close_browser(driver)
        backend.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    run_checks(run, sys.argv[1])
    print("all Control UI card checks passed", flush=True)


if __name__ == "__main__":
    main()
