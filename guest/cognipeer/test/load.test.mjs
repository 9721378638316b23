// load.test.mjs — `load` reports the declared shape of every export kind, as declared (no defaults), and
// each load failure with its stage (guest/cognipeer/README.md "load").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Runner, fixture } from './helpers.mjs';

async function withRunner(fn) {
  const r = new Runner();
  try { await fn(r); } finally { await r.close(); }
}

test('object export: every field as declared, no defaults filled in', () => withRunner(async (r) => {
  const res = await r.load(fixture('shapes-object.mjs'));
  assert.equal(res.export_kind, 'object');
  assert.deepEqual(res.named_exports, ['helper']);
  assert.equal(res.plugins.length, 1);
  const s = res.plugins[0];
  assert.equal(s.index, 0);
  assert.equal(s.type, 'object');
  assert.equal(s.name, 'shape-object');
  assert.equal(s.version, '2.1.0');
  assert.equal(s.priority, 7);
  assert.equal(s.failureMode, 'closed');
  assert.equal(s.timeoutMs, 250);
  assert.equal(s.inheritToSubagents, false);
  assert.deepEqual(s.mayRequireApproval, { $type: 'undefined' }, 'declared undefined is not absent');
  assert.deepEqual(s.setup, { $type: 'function', name: 'setup' });
  assert.equal('dispose' in s, false, 'absent stays absent');
  assert.deepEqual(s.hooks, ['preToolUse', 'notAHook', 'sessionEnd'], 'unknown names and non-functions listed');
  assert.deepEqual(s.hook_types, { preToolUse: 'function', notAHook: 'function', sessionEnd: 'string' });
  assert.deepEqual(s.contributions.tools, [{ name: 't1', description: 'tool one', func: { $type: 'function', name: 'func' } }]);
  assert.equal(s.contributions.systemPrompt, 'be brief');
  assert.deepEqual(s.contributions.toolDescriptions, { t1: 'better description' });
  assert.deepEqual(s.contributions.wrapModel, { $type: 'function', name: 'wrapModel' });
  assert.deepEqual(s.contributions.guardrails, [{ id: 'g' }]);
  assert.deepEqual(s.provides, ['tokenCounter']);
  assert.deepEqual(s.slots, { tokenCounter: { count: { $type: 'function', name: 'count' } } });
  assert.ok(res.load_ms > 0 && res.import_ms >= 0);
}));

test('minimal plugin: absent fields are absent (priority, failureMode, timeoutMs are C++ defaults)', () => withRunner(async (r) => {
  const res = await r.load(fixture('shapes-array.mjs'));
  assert.equal(res.export_kind, 'array');
  const [a, b, c] = res.plugins;
  assert.deepEqual(a, { index: 0, type: 'object', name: 'first', contributions: {} });
  assert.deepEqual(b, { index: 1, type: 'object', name: 'second', priority: 1, contributions: {} });
  assert.deepEqual(c, { index: 2, type: 'number' });
}));

test('definePlugin-style factory is called with no arguments', () => withRunner(async (r) => {
  const res = await r.load(fixture('shapes-factory.mjs'));
  assert.equal(res.export_kind, 'factory');
  assert.equal(res.factory_result, 'object');
  assert.equal(res.plugins[0].name, 'from-factory');
  const m = await r.invoke({ target: 'hook', name: 'sessionStart', input: {} });
  assert.deepEqual(m.result.value, { opts: true });
}));

test('class-based plugin: members from the prototype chain are declared', () => withRunner(async (r) => {
  const res = await r.load(fixture('shapes-class.mjs'));
  assert.deepEqual(res.plugins[0].hooks, ['preToolUse']);
  const m = await r.invoke({ target: 'hook', name: 'preToolUse', input: {} });
  assert.deepEqual(m.result.value, { decision: 'allow' });
}));

test('no default export, and a default export that is not a plugin', () => withRunner(async (r) => {
  let res = await r.load(fixture('shapes-none.mjs'));
  assert.equal(res.export_kind, 'none');
  assert.deepEqual(res.plugins, []);
  assert.deepEqual(res.named_exports, ['plugin']);
  res = await r.load(fixture('shapes-other.mjs'));
  assert.equal(res.export_kind, 'other');
  assert.equal(res.default_value, 'not a plugin');
  assert.deepEqual(res.plugins, []);
}));

test('load failures carry their stage: read, compile, import, instantiate', () => withRunner(async (r) => {
  const cases = [
    [fixture('does-not-exist.mjs'), 'read'],
    [fixture(''), 'read'], // a directory
    [fixture('bad-syntax.mjs'), 'compile'],
    [fixture('bad-toplevel.mjs'), 'import'],
    [fixture('bad-factory.mjs'), 'instantiate'],
    [fixture('bad-exit-at-import.mjs'), 'import'],
  ];
  for (const [path, stage] of cases) {
    const m = await r.request('load', { path });
    assert.equal(m.error?.code, -32012, `${path}: ${JSON.stringify(m)}`);
    assert.equal(m.error.data.stage, stage, path);
  }
  const m = await r.request('load', { path: fixture('bad-factory.mjs') });
  assert.equal(m.error.data.name, 'RangeError');
  assert.match(m.error.data.message, /factory refuses/);
  // after failed loads nothing is loaded
  const inv = await r.invoke({ target: 'hook', name: 'x' });
  assert.equal(inv.error.code, -32011);
}));

test('a module that never finishes loading fails at the load deadline, and the runner stays usable', () => withRunner(async (r) => {
  const t0 = Date.now();
  const m = await r.request('load', { path: fixture('bad-import-loop.mjs'), timeout_ms: 300 });
  assert.equal(m.error.code, -32012);
  assert.equal(m.error.data.stage, 'import');
  assert.ok(Date.now() - t0 < 5000);
  const ok = await r.load(fixture('shapes-array.mjs'));
  assert.equal(ok.plugins.length, 3);
}));

test('a second load replaces the module', () => withRunner(async (r) => {
  await r.load(fixture('shapes-array.mjs'));
  const res = await r.load(fixture('shapes-object.mjs'));
  assert.equal(res.plugins.length, 1);
  const m = await r.invoke({ plugin: 1, target: 'hook', name: 'preToolUse' });
  assert.equal(m.error.code, -32013);
}));
