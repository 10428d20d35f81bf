// Copying a message or a code block (docs/control-ui.md §10): what is copied (pure, tests in
// tests/js/copy.test.mjs) and the one way it reaches the clipboard.

import { h } from './dom.js';
import { terminalText } from './present.js';

/**
 * The text of a message, as the person would want it pasted: its text parts (the agent's
 * Markdown source, the person's prompt) and a command's output, in order, a blank line between
 * text parts. Thoughts, tool calls and notices are not the message's words and stay out —
 * except in a `shell` session (`runs`), where the command's `execute` call is the run and its
 * terminal's output (as text, escapes removed) is the message's words.
 */
export function messageText(message, runs = false) {
  const out = [];
  let output = '';
  const flush = () => {
    if (output) out.push(output.replace(/\n$/, ''));
    output = '';
  };
  for (const p of message?.parts ?? []) {
    if (p?.type === 'text' && typeof p.text === 'string' && p.text) {
      flush();
      out.push(p.text);
    } else if (p?.type === 'output' && typeof p.text === 'string') {
      output += p.text;
    } else if (runs && p?.type === 'tool_call' && p.kind === 'execute') {
      for (const c of Array.isArray(p.content) ? p.content : []) {
        if (c?.type === 'terminal' && typeof c.output === 'string') output += terminalText(c.output);
      }
    }
  }
  flush();
  return out.join('\n\n');
}

/**
 * Puts `text` on the clipboard: `navigator.clipboard` where the page is a secure context,
 * else (a plain-http page on another machine's address) a hidden textarea and the browser's
 * copy command. Resolves to whether it worked.
 */
export async function copyText(text) {
  if (window.isSecureContext && navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      /* refused (no focus, no permission): try the old way */
    }
  }
  const area = h('textarea', { class: 'copy-buffer', readonly: true, 'aria-hidden': 'true' });
  area.value = text;
  const before = document.activeElement;
  document.body.append(area);
  area.select();
  let done = false;
  try {
    done = document.execCommand('copy');
  } catch {
    done = false;
  }
  area.remove();
  if (before?.isConnected) before.focus({ preventScroll: true });
  return done;
}

/**
 * A copy button: `text()` says what to copy when clicked; `what` names it ("message", "code").
 * Its label is drawn by style.css, so the button adds nothing to the text of what holds it.
 */
export function copyButton(text, what, toast) {
  const b = h('button', {
    type: 'button', class: 'copy-btn', 'data-testid': `copy-${what}`, title: `Copy the ${what}`, 'aria-label': `Copy the ${what}`,
  });
  b.addEventListener('click', async (ev) => {
    ev.stopPropagation();
    const ok = await copyText(text());
    b.dataset.copied = ok ? 'true' : 'false';
    setTimeout(() => { delete b.dataset.copied; }, 1500);
    if (!ok) toast?.(`Could not copy the ${what}: the browser refused.`);
  });
  return b;
}
