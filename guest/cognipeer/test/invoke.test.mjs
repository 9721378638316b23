// invoke.test.mjs — each invoke target and outcome, ctx members, timeouts (async: no restart; sync loop:
// terminate + re-import), concurrency, console capture (guest/cognipeer/README.md "invoke").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Runner, fixture } from './helpers.mjs';

async function withBehaviours(fn) {
  const r = new Runner();
  try {
    await r.load(fixture('behaviours.mjs'));
    await fn(r);
  } finally { await r.close(); }
}

test('returned: the value, and undefined as an explicit marker', () => withBehaviours(async (r) => {
  let m = await r.invoke({ target: 'hook', name: 'echo', input: { a: [1, 'x', null, true] } });
  assert.equal(m.result.outcome, 'returned');
  assert.deepEqual(m.result.value, { a: [1, 'x', null, true] });
  assert.equal(m.result.restarted, false);
  assert.ok(m.result.elapsed_ms >= 0);
  m = await r.invoke({ target: 'hook', name: 'nothing', input: {} });
  assert.deepEqual(m.result.value, { $type: 'undefined' });
  m = await r.invoke({ target: 'hook', name: 'echo' }); // no input at all = undefined
  assert.deepEqual(m.result.value, { $type: 'undefined' });
}));

test('threw: Error, non-Error values and rejected promises', () => withBehaviours(async (r) => {
  let m = await r.invoke({ target: 'hook', name: 'throwsError', input: {} });
  assert.equal(m.result.outcome, 'threw');
  assert.equal(m.result.error.name, 'TypeError');
  assert.equal(m.result.error.message, 'bad input');
  assert.match(m.result.error.stack, /behaviours\.mjs/);
  m = await r.invoke({ target: 'hook', name: 'throwsString', input: {} });
  assert.deepEqual(m.result.error, { name: null, message: 'plain string', stack: null, value: 'plain string' });
  m = await r.invoke({ target: 'hook', name: 'rejects', input: {} });
  assert.equal(m.result.outcome, 'threw');
  assert.equal(m.result.error.message, 'async failure');
}));

test('-32013 for an unknown hook, a non-function hook, an unknown tool or slot, a bad index', () => withBehaviours(async (r) => {
  for (const p of [
    { target: 'hook', name: 'noSuchHook' },
    { target: 'hook', name: 'notAFunction' },
    { target: 'hook', name: 'toString' }, // Object.prototype is not a declaration
    { target: 'tool', name: 'nope' },
    { target: 'slot', name: 'memoryStore.get' },
    { target: 'slot', name: 'tokenCounter.nope' },
    { target: 'slot', name: 'nodot' },
    { plugin: 1, target: 'setup' },
    { plugin: 1, target: 'wrapModel' },
    { plugin: 9, target: 'hook', name: 'echo' },
  ]) {
    const m = await r.invoke(p);
    assert.equal(m.error?.code, -32013, JSON.stringify(p) + ' -> ' + JSON.stringify(m));
  }
  const m = await r.invoke({ target: 'hook', name: 'notAFunction' });
  assert.match(m.error.message, /number, not a function/);
}));

test('setup, dispose, tool, systemPrompt (function and static), slot, wrapModel', () => withBehaviours(async (r) => {
  let m = await r.invoke({ target: 'setup' });
  assert.equal(m.result.value, 'set up');
  m = await r.invoke({ target: 'dispose', ctx: { runId: 'R7', state: {} } });
  assert.equal(m.result.value, 'disposed R7');
  m = await r.invoke({ target: 'tool', name: 'adder', input: { a: 2, b: 3 } });
  assert.equal(m.result.value, 5);
  m = await r.invoke({ target: 'systemPrompt', input: { agent: 'bob' } });
  assert.equal(m.result.value, 'prompt for bob');
  m = await r.invoke({ plugin: 1, target: 'systemPrompt' });
  assert.equal(m.result.value, 'static prompt');
  m = await r.invoke({ target: 'slot', name: 'tokenCounter.count', input: ['three little words'] });
  assert.equal(m.result.value, 3);
  m = await r.invoke({ target: 'wrapModel', input: { messages: ['hi'], options: { t: 1 }, response: { text: 'ok' } } });
  assert.deepEqual(m.result.value, {
    wrapped_is_inner: false,
    result: { text: 'ok!' },
    inner_calls: [{ messages: ['[wrapped]', 'hi'], options: { t: 1, wrapped: true } }],
  });
}));

test('ctx: fields passed through, state deeply frozen, store per plugin per run, signal', () => withBehaviours(async (r) => {
  let m = await r.invoke({ target: 'hook', name: 'ctxView', ctx: { runId: 'r', traceId: 't', agentName: 'ag', hookName: 'ctxView', depth: 2, state: { a: 1 }, extra: { $type: 'bigint', value: '5' } } });
  assert.deepEqual(m.result.value, { runId: 'r', agentName: 'ag', hookName: 'ctxView', depth: 2, traceId: 't', extra: { $type: 'bigint', value: '5' }, frozen: true, storeIsMap: true, signal: true });
  m = await r.invoke({ target: 'hook', name: 'mutateState', ctx: { runId: 'r', state: { messages: [] } } });
  assert.equal(m.result.outcome, 'threw');
  assert.equal(m.result.error.name, 'TypeError');
  m = await r.invoke({ target: 'hook', name: 'nestedMutateState', ctx: { runId: 'r', state: { deep: { inner: { value: 1 } } } } });
  assert.equal(m.result.outcome, 'threw', 'nested state is frozen too');
  const count = async (plugin, runId) => (await r.invoke({ plugin, target: 'hook', name: 'counter', ctx: { runId, state: {} } })).result.value;
  assert.equal(await count(0, 'A'), 1);
  assert.equal(await count(0, 'A'), 2);
  assert.equal(await count(0, 'B'), 1, 'a new run has a new store');
  assert.equal(await count(1, 'A'), 0, 'another plugin has its own store');
}));

test('mutated_input: an in-place rewrite of the input is reported', () => withBehaviours(async (r) => {
  const m = await r.invoke({ target: 'hook', name: 'mutateInput', input: { parts: [{ type: 'text', text: 'hi' }, { type: 'image', data: 'AAAA' }] } });
  assert.deepEqual(m.result.value, { $type: 'undefined' });
  assert.deepEqual(m.result.mutated_input, { parts: [{ type: 'text', text: 'hi' }, { type: 'image', data: 'changed' }] });
  const n = await r.invoke({ target: 'hook', name: 'echo', input: { x: 1 } });
  assert.equal('mutated_input' in n.result, false);
}));

test('emit and logger become notifications, sent before the answer', () => withBehaviours(async (r) => {
  const id = r.send('invoke', { plugin: 0, target: 'hook', name: 'talk', input: {}, ctx: { runId: 'r', state: {} }, timeout_ms: 2000 });
  const m = await r.wait(id);
  assert.equal(m.result.value, 'talked');
  const notes = r.notesFor(id).map((n) => [n.method, n.params]);
  assert.deepEqual(notes, [
    ['emit', { plugin: 0, plugin_name: 'behaviours', id, args: ['progress', { n: 1 }] }],
    ['log', { plugin: 0, plugin_name: 'behaviours', id, level: 'info', text: 'hello 2', args: ['hello', 2] }],
    ['log', { plugin: 0, plugin_name: 'behaviours', id, level: 'warn', text: 'careful', args: ['careful'] }],
  ]);
  const answerIndex = r.messages.findIndex((x) => x.id === id && x.result);
  const lastNote = r.messages.findLastIndex((x) => x.params && x.params.id === id);
  assert.ok(lastNote < answerIndex);
}));

test('console capture: console.*, process.stdout/stderr writes never reach stdout raw', () => withBehaviours(async (r) => {
  const id = r.send('invoke', { plugin: 0, target: 'hook', name: 'prints', input: {}, ctx: { runId: 'r', state: {} }, timeout_ms: 2000 });
  const m = await r.wait(id);
  assert.equal(m.result.value, 'printed');
  const got = r.notesFor(id).filter((n) => n.method === 'console').map((n) => [n.params.stream, n.params.text]);
  assert.ok(r.notesFor(id).every((n) => n.params.plugin === 0 && n.params.plugin_name === 'behaviours'));
  assert.deepEqual(got, [
    ['stdout', 'via console.log\n'],
    ['stderr', 'via console.error\n'],
    ['stdout', 'raw stdout\n'],
    ['stderr', 'raw stderr\n'],
    ['stdout', 'after await\n'],
    ['stdout', 'fd one\n'],
    ['stderr', 'fd two\n'],
  ]);
  for (const line of r.lines) assert.equal(JSON.parse(line).jsonrpc, '2.0'); // every stdout line is JSON-RPC
}));

test('values JSON cannot carry come back encoded', () => withBehaviours(async (r) => {
  const m = await r.invoke({ target: 'hook', name: 'odd' });
  assert.deepEqual(m.result.value, {
    $$type: 'literal',
    n: { $type: 'number', value: 'NaN' },
    inf: { $type: 'number', value: '-Infinity' },
    big: { $type: 'bigint', value: '10' },
    sym: { $type: 'symbol', description: 's' },
    fn: { $type: 'function', name: 'named' },
    u: { $type: 'undefined' },
    err: { $type: 'error', name: 'RangeError', message: 'r' },
    self: { $type: 'cycle', path: '' },
  });
}));

test('encoded input round-trips through a guest unchanged', () => withBehaviours(async (r) => {
  const input = {
    $$type: 'escaped', $$$type: 'double',
    n: { $type: 'number', value: 'Infinity' }, b: { $type: 'bigint', value: '-12345678901234567890' },
    u: { $type: 'undefined' }, d: { $type: 'date', value: '2020-01-02T03:04:05.000Z' },
    m: { $type: 'map', entries: [['k', { $type: 'set', values: [1, 2] }]] },
    bytes: { $type: 'bytes', base64: 'AAEC/w==' }, re: { $type: 'regexp', source: 'a+', flags: 'g' },
    e: { $type: 'error', name: 'TypeError', message: 'm' }, f: { $type: 'function', name: 'cb' },
    list: [1, { back: { $type: 'cycle', path: '/list' } }],
    top: { $type: 'cycle', path: '' },
  };
  const m = await r.invoke({ target: 'hook', name: 'echo', input });
  assert.deepEqual(m.result.value, input);
}));

test('malformed markers in input are -32602 naming the pointer', () => withBehaviours(async (r) => {
  for (const [input, where] of [
    [{ a: { $type: 'nonsense' } }, /\/a/],
    [{ a: { $type: 'bigint', value: '1.5' } }, /\/a/],
    [{ a: [{ $type: 'cycle', path: '/b' }], b: {} }, /\/a\/0/],
    [{ $type: 'number', value: 'seven' }, /root/],
  ]) {
    const m = await r.invoke({ target: 'hook', name: 'echo', input });
    assert.equal(m.error?.code, -32602, JSON.stringify(m));
    assert.match(m.error.message, where);
  }
}));

test('timeout of an awaiting handler: answered at the deadline, signal aborted, no restart', () => withBehaviours(async (r) => {
  const tok = (await r.invoke({ target: 'hook', name: 'token' })).result.value;
  let m = await r.invoke({ target: 'hook', name: 'awaitsSignal', timeout_ms: 200 });
  assert.equal(m.result.outcome, 'timeout');
  assert.equal(m.result.restarted, false);
  assert.ok(m.result.elapsed_ms >= 195, `${m.result.elapsed_ms}`);
  m = await r.invoke({ target: 'hook', name: 'neverSettles', timeout_ms: 100 });
  assert.equal(m.result.outcome, 'timeout');
  assert.equal(m.result.restarted, false);
  assert.equal((await r.invoke({ target: 'hook', name: 'token' })).result.value, tok, 'same import');
}));

test('timeout of a synchronous loop: worker terminated, module re-imported, in-flight invokes end as timeout', () => withBehaviours(async (r) => {
  const tok = (await r.invoke({ target: 'hook', name: 'token' })).result.value;
  await r.invoke({ target: 'hook', name: 'counter', ctx: { runId: 'keep', state: {} } });
  const slowId = r.send('invoke', { plugin: 0, target: 'hook', name: 'slow', input: { ms: 3000 }, ctx: { runId: 'r', state: {} }, timeout_ms: 5000 });
  const loopId = r.send('invoke', { plugin: 0, target: 'hook', name: 'syncLoop', input: {}, ctx: { runId: 'r', state: {} }, timeout_ms: 500 });
  const loop = await r.wait(loopId);
  assert.equal(loop.result.outcome, 'timeout');
  assert.equal(loop.result.restarted, true);
  assert.ok(loop.result.elapsed_ms >= 500 && loop.result.elapsed_ms < 1500, `stopped after ${loop.result.elapsed_ms} ms`);
  assert.ok(loop.result.restart_ms > 0);
  const slow = await r.wait(slowId);
  assert.equal(slow.result.outcome, 'timeout', 'the other invoke on that worker ends too');
  assert.equal(slow.result.restarted, true);
  const after = await r.invoke({ target: 'hook', name: 'token' });
  assert.equal(after.result.outcome, 'returned');
  assert.notEqual(after.result.value, tok, 'a fresh import');
  const c = await r.invoke({ target: 'hook', name: 'counter', ctx: { runId: 'keep', state: {} } });
  assert.equal(c.result.value, 1, 'stores do not survive a restart');
}));

test('two slow observers run concurrently', () => withBehaviours(async (r) => {
  const t0 = performance.now();
  // Timers never fire early, so one after the other would take >= 2000 ms; the second second is slack
  // for a loaded CI machine.
  const a = r.send('invoke', { plugin: 0, target: 'hook', name: 'slow', input: { ms: 1000 }, ctx: { runId: 'r', state: {} }, timeout_ms: 5000 });
  const b = r.send('invoke', { plugin: 0, target: 'hook', name: 'slow', input: { ms: 1000 }, ctx: { runId: 'r', state: {} }, timeout_ms: 5000 });
  const [ma, mb] = await Promise.all([r.wait(a), r.wait(b)]);
  const wall = performance.now() - t0;
  assert.equal(ma.result.value, 1000);
  assert.equal(mb.result.value, 1000);
  assert.ok(ma.result.elapsed_ms >= 1000 && mb.result.elapsed_ms >= 1000);
  assert.ok(wall < 2000, `two 1000 ms observers took ${wall} ms: not concurrent`);
}));

test('a plugin that exits its worker: threw WorkerExit, re-imported', () => withBehaviours(async (r) => {
  const m = await r.invoke({ target: 'hook', name: 'exits' });
  assert.equal(m.result.outcome, 'threw');
  assert.equal(m.result.error.name, 'WorkerExit');
  assert.equal(m.result.restarted, true);
  const n = await r.invoke({ target: 'hook', name: 'echo', input: 1 });
  assert.equal(n.result.value, 1);
}));

test('an exception thrown later from a guest timer is reported, not fatal', () => withBehaviours(async (r) => {
  const id = r.send('invoke', { plugin: 0, target: 'hook', name: 'lateThrow', input: {}, ctx: { runId: 'r', state: {} }, timeout_ms: 2000 });
  await r.wait(id);
  const deadline = Date.now() + 5000;
  while (!r.notes.some((n) => n.method === 'uncaught') && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10));
  const u = r.notes.find((n) => n.method === 'uncaught');
  assert.ok(u, 'uncaught notification');
  assert.equal(u.params.error.message, 'late');
  assert.equal(u.params.id, id, 'attributed to the invoke that scheduled it');
  const n = await r.invoke({ target: 'hook', name: 'echo', input: 2 });
  assert.equal(n.result.value, 2);
}));
