// Unit tests of what a message's copy button copies (web/copy.js). Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import { messageText } from '../../web/copy.js';

test('a message copies its words: text parts and output, not thoughts, tools or notices', () => {
  const reply = {
    parts: [
      { type: 'thought', text: 'hmm' },
      { type: 'text', text: 'Here is the fix:\n\n```rust\nfn main() {}\n```' },
      { type: 'tool_call', toolCallId: 't1', title: 'edit' },
      { type: 'text', text: 'Done.' },
      { type: 'notice', kind: 'stop', text: 'end_turn' },
    ],
  };
  assert.equal(messageText(reply), 'Here is the fix:\n\n```rust\nfn main() {}\n```\n\nDone.');
  assert.equal(messageText({ parts: [{ type: 'text', text: 'ls -la' }, { type: 'file', path: 'a.rs' }] }), 'ls -la');
});

test('a command output is copied whole, its chunks joined', () => {
  const run = { parts: [{ type: 'output', stream: 'stdout', text: 'a\n' }, { type: 'output', stream: 'stderr', text: 'b\n' }, { type: 'exit', code: 0 }] };
  assert.equal(messageText(run), 'a\nb');
  assert.equal(messageText({}), '');
});

test('a shell session copies its command run: the terminal output as text, without escapes', () => {
  const run = {
    parts: [{
      type: 'tool_call', toolCallId: 'cmd-1', kind: 'execute', title: 'ls', status: 'completed',
      content: [{ type: 'terminal', terminalId: 'term-1', output: '\x1b[34ma\x1b[0m\nb\n', exit: { exitCode: 0 } }],
      rawOutput: { exitCode: 0, signal: null, truncated: false },
    }, { type: 'permission', permissionId: 'per_1', toolCall: { toolCallId: 'cmd-1' }, outcome: { state: 'selected', optionId: 'once', kind: 'allow_once' } }],
  };
  assert.equal(messageText(run, true), 'a\nb');
  // Another agent's tool call is not the message's words.
  assert.equal(messageText(run), '');
});
