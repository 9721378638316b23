// plugins.test.mjs — the test plugins of tests/cognipeer_plugins/ seen through the runner: the manifest is
// well formed, the conforming plugin declares all 13 hooks, every contribution kind and a slot and
// behaves (valid outputs, no output on stdout, attachments untouched), and every gallery plugin shows
// its fault at the guest level (the C++ host's verdicts are tests/cognipeer/e2e_test.cpp's business).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { Runner, plugin } from './helpers.mjs';

const HOOKS = ['sessionStart', 'userPromptSubmit', 'preModelCall', 'postModelCall', 'preToolUse', 'postToolUse',
  'preCompact', 'postCompact', 'preFinalAnswer', 'subagentStart', 'subagentStop', 'notification', 'sessionEnd'];
const OBSERVERS = new Set(['postCompact', 'subagentStop', 'notification', 'sessionEnd']);
const manifest = JSON.parse(readFileSync(plugin('manifest.json'), 'utf8'));
const entry = (name) => manifest.plugins.find((e) => e.name === name);

// Plausible inputs per hook (COGNIPEER-0.10.2.md "The 13 hooks").
const INPUTS = {
  sessionStart: { messages: [], resumed: false, config: {} },
  userPromptSubmit: { text: '  describe this  ', content: [{ type: 'text', text: '  describe this  ' }, { type: 'image', mimeType: 'image/png', data: 'iVBORw0KGgo=' }], attachments: [], message: {} },
  preModelCall: { messages: [], tools: [], params: {}, model: 'fake', iteration: 0 },
  postModelCall: { message: { content: 'hi' }, usage: {}, durationMs: 1, iteration: 0, shortCircuited: false },
  preToolUse: { toolName: 't', toolCallId: 'c1', args: {}, tool: { name: 't' }, executionCount: 0 },
  postToolUse: { toolName: 't', toolCallId: 'c1', args: {}, output: 'user=a password=hunter2 ok', durationMs: 1, executionId: 'e1', source: 'tool' },
  preCompact: { reason: 'threshold', messages: [], tokenCount: 10, threshold: 5 },
  postCompact: { summary: 's', tokensBefore: 10, tokensAfter: 2, strategy: 'summarize' },
  preFinalAnswer: { content: 'done' },
  subagentStart: { name: 'child', task: 'do it', depth: 1 },
  subagentStop: { name: 'child', result: 'ok' },
  notification: { kind: 'approval' },
  sessionEnd: { status: 'success' },
};

async function withPlugin(file, fn) {
  const r = new Runner();
  try { await fn(r, await r.load(plugin(file))); } finally { await r.close(); }
}
const hook = (r, name, extra = {}) => r.invoke({ target: 'hook', name, input: INPUTS[name], ...extra, ctx: { runId: 'run-1', agentName: 'a', hookName: name, state: { messages: [] }, depth: 0 } });

test('manifest: stable unique names, files present, breaks a CG rule or null, >= 15 faults', () => {
  const names = new Set();
  for (const e of manifest.plugins) {
    assert.equal(typeof e.name, 'string');
    assert.ok(!names.has(e.name), `duplicate manifest name ${e.name}`);
    names.add(e.name);
    assert.ok(existsSync(plugin(e.file)), e.file);
    assert.ok(e.breaks === null || /^CG-(0[1-9]|1[0-9])$/.test(e.breaks), `${e.name}: breaks ${e.breaks}`);
    assert.equal(typeof e.what, 'string');
    assert.equal(typeof e.expect, 'string');
    assert.ok(['conforming', 'helper', 'fault'].includes(e.role));
    assert.equal(e.role === 'fault', e.breaks !== null, e.name);
  }
  assert.ok(manifest.plugins.filter((e) => e.breaks).length >= 15);
  assert.equal(manifest.plugins.filter((e) => e.role === 'conforming').length, 1);
});

test('conforming: all 13 hooks, every contribution kind, a slot, setup and dispose — as declared', () => withPlugin(entry('conforming').file, async (r, res) => {
  assert.equal(res.export_kind, 'factory');
  const [s] = res.plugins;
  assert.deepEqual([...s.hooks].sort(), [...HOOKS].sort());
  assert.ok(Object.values(s.hook_types).every((t) => t === 'function'));
  assert.deepEqual(Object.keys(s.contributions).sort(), ['guardrails', 'systemPrompt', 'toolDescriptions', 'tools', 'wrapModel']);
  assert.deepEqual(s.provides, ['tokenCounter']);
  assert.equal(s.setup.$type, 'function');
  assert.equal(s.dispose.$type, 'function');
  assert.equal(s.failureMode, 'open');
}));

test('conforming: every hook answers validly, quickly and silently', () => withPlugin(entry('conforming').file, async (r) => {
  assert.equal((await r.invoke({ target: 'setup' })).result.outcome, 'returned');
  for (const h of HOOKS) {
    const m = await hook(r, h);
    assert.equal(m.result?.outcome, 'returned', `${h}: ${JSON.stringify(m)}`);
    const v = m.result.value;
    if (OBSERVERS.has(h)) assert.deepEqual(v, { $type: 'undefined' }, `${h} is an observer`);
    else assert.ok(v.$type === 'undefined' || (v !== null && typeof v === 'object' && !('$type' in v)), `${h} returned ${JSON.stringify(v)}`);
    if (v && v.decision !== undefined) assert.ok(['allow', 'deny', 'ask'].includes(v.decision));
    if (v && v.decision === 'ask') assert.equal(h, 'preToolUse');
    assert.equal(m.result.mutated_input, undefined, `${h} mutated its input`);
  }
  assert.deepEqual(r.notes.filter((n) => n.method === 'console'), [], 'nothing printed');
  assert.ok(r.notes.some((n) => n.method === 'log'), 'it reports through ctx.logger');
  // CG-13: text trimmed, the image part identical.
  const ups = await hook(r, 'userPromptSubmit');
  assert.deepEqual(ups.result.value.content, [{ type: 'text', text: 'describe this' }, INPUTS.userPromptSubmit.content[1]]);
  // CG-12: masks secrets in tool output.
  const post = await hook(r, 'postToolUse');
  assert.deepEqual(post.result.value, { output: 'user=a password=[masked] ok' });
  const post2 = await hook(r, 'postToolUse');
  assert.deepEqual(post2.result.value, { output: 'user=a password=[masked] ok' }, 'masking is stable across calls');
  // Contributions and the slot.
  assert.deepEqual((await r.invoke({ target: 'tool', name: 'conforming_word_count', input: { text: 'a b  c' } })).result.value, { words: 3 });
  assert.equal((await r.invoke({ target: 'systemPrompt' })).result.value, 'Prefer short answers.');
  assert.equal((await r.invoke({ target: 'slot', name: 'tokenCounter.count', input: ['12345678'] })).result.value, 2);
  const w = await r.invoke({ target: 'wrapModel', input: { messages: ['m'], options: { temperature: 1 }, response: { content: 'x' } } });
  assert.deepEqual(w.result.value.result, { content: 'x' });
  assert.deepEqual(w.result.value.inner_calls, [{ messages: ['m'], options: { temperature: 0 } }]);
  assert.equal((await r.invoke({ target: 'dispose' })).result.outcome, 'returned');
}));

test('helpers: recorders A then B chain their marks; the slot claimant and defineHook plugins load', async () => {
  await withPlugin(entry('recorders-a-b').file, async (r, res) => {
    assert.deepEqual(res.plugins.map((p) => [p.name, p.priority, p.hooks.length]), [['conform-recorder-A', 50, 13], ['conform-recorder-B', 50, 13]]);
    const a = await r.invoke({ plugin: 0, target: 'hook', name: 'userPromptSubmit', input: { text: 'hi' } });
    const b = await r.invoke({ plugin: 1, target: 'hook', name: 'userPromptSubmit', input: a.result.value });
    assert.deepEqual(b.result.value, { text: 'hi [A] [B]' });
  });
  await withPlugin(entry('slot-claimant').file, async (r, res) => {
    assert.deepEqual(res.plugins[0].provides, ['memoryStore']);
    await r.invoke({ target: 'slot', name: 'memoryStore.set', input: ['k', 'v'] });
    assert.equal((await r.invoke({ target: 'slot', name: 'memoryStore.get', input: ['k'] })).result.value, 'v');
  });
  await withPlugin(entry('define-hook').file, async (r, res) => {
    assert.deepEqual(res.plugins.map((p) => p.name), ['hook:preToolUse', 'hook:sessionEnd']);
    assert.equal(res.plugins[0].priority, 200);
  });
});

// Each fault, visible at the guest level (the C++ host turns these into findings).
const FAULTS = {
  'closed-throws': async (r, [s]) => {
    assert.equal(s.failureMode, 'closed');
    const m = await hook(r, 'preToolUse');
    assert.equal(m.result.outcome, 'threw');
  },
  'unknown-decision': async (r) => assert.equal((await hook(r, 'preToolUse')).result.value.decision, 'maybe'),
  'ask-outside-pretooluse': async (r) => assert.equal((await hook(r, 'userPromptSubmit')).result.value.decision, 'ask'),
  'slot-claimed-twice': async (r, shapes) => assert.deepEqual(shapes.map((s) => s.provides), [['memoryStore'], ['memoryStore']]),
  'unknown-slot': async (r, [s]) => assert.deepEqual(s.provides, ['responseCacheStore']),
  'duplicate-name': async (r, shapes) => assert.equal(shapes[0].name, shapes[1].name),
  'empty-name': async (r, [s]) => assert.equal(s.name, ''),
  'bad-failure-mode': async (r, [s]) => assert.equal(s.failureMode, 'strict'),
  'bad-priority': async (r, [s]) => assert.equal(s.priority, 'high'),
  'zero-timeout': async (r, [s]) => assert.equal(s.timeoutMs, 0),
  'mutates-state': async (r) => {
    for (const h of ['userPromptSubmit', 'preModelCall']) {
      const m = await hook(r, h);
      assert.equal(m.result.outcome, 'threw', h);
      assert.equal(m.result.error.name, 'TypeError', h);
    }
  },
  'slow-past-timeout': async (r, [s]) => {
    const m = await hook(r, 'preToolUse', { timeout_ms: s.timeoutMs });
    assert.equal(m.result.outcome, 'timeout');
    assert.equal(m.result.restarted, false);
  },
  'sync-loop': async (r, [s]) => {
    const m = await hook(r, 'preModelCall', { timeout_ms: s.timeoutMs });
    assert.equal(m.result.outcome, 'timeout');
    assert.equal(m.result.restarted, true);
  },
  'console-log': async (r) => {
    await hook(r, 'userPromptSubmit');
    assert.ok(r.notes.some((n) => n.method === 'console' && n.params.stream === 'stdout' && n.params.plugin_name === 'fault-console-log'));
  },
  'stdout-write': async (r) => {
    await hook(r, 'sessionStart');
    assert.ok(r.notes.some((n) => n.method === 'console' && n.params.stream === 'stdout' && n.params.text.includes('forged')));
    assert.ok(!r.messages.some((m) => m.method === 'forged'), 'the forged line never became a frame');
  },
  'observer-throws': async (r) => assert.equal((await hook(r, 'sessionEnd')).result.outcome, 'threw'),
  'rewrites-attachments': async (r) => {
    const v = (await hook(r, 'userPromptSubmit')).result.value;
    assert.notDeepEqual(v.content[1], INPUTS.userPromptSubmit.content[1]);
  },
  'persona-in-transcript': async (r) => {
    await hook(r, 'postModelCall', { input: { message: { handoff: { persona: 'P-B' } } } });
    const m = await hook(r, 'postModelCall', { input: { message: { content: 'from B' } } });
    assert.equal(m.result.value.message.content, '[P-B] from B');
  },
  'setup-throws-closed': async (r, [s]) => {
    assert.equal(s.failureMode, 'closed');
    assert.equal((await r.invoke({ target: 'setup' })).result.outcome, 'threw');
  },
  'unknown-hook': async (r, [s]) => assert.ok(s.hooks.includes('preToolCall')),
  'non-function-hook': async (r, [s]) => {
    assert.equal(s.hook_types.preToolUse, 'string');
    assert.equal((await hook(r, 'preToolUse')).error.code, -32013);
  },
  'gate-returns-string': async (r) => assert.equal((await hook(r, 'preModelCall')).result.value, 'ok'),
  'no-default-export': async (r, shapes, res) => {
    assert.equal(res.export_kind, 'none');
    assert.deepEqual(shapes, []);
  },
};

test('every gallery plugin has a guest-level check, and every check has a gallery plugin', () => {
  const faults = manifest.plugins.filter((e) => e.role === 'fault').map((e) => e.name).sort();
  assert.deepEqual(faults, Object.keys(FAULTS).sort());
});

// One runner for the whole gallery: each `load` replaces the module (a fresh worker), which keeps the
// suite fast on a loaded machine without sharing any plugin state between checks.
let shared = null;
after(async () => { if (shared) await shared.close(); });
for (const [name, check] of Object.entries(FAULTS)) {
  test(`${entry(name)?.breaks ?? '??'} gallery ${name}: the fault shows at the guest level`, async () => {
    shared ??= new Runner();
    const res = await shared.load(plugin(entry(name).file));
    await check(shared, res.plugins, res);
  });
}
