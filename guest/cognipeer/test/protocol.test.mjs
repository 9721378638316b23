// protocol.test.mjs — the JSON-RPC envelope: malformed requests get JSON-RPC errors, the runner stays
// silent until asked, shutdown and EOF exit 0 within 1 s (docs/guest-protocol.md "Envelope").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Runner, fixture } from './helpers.mjs';

test('malformed requests are answered with JSON-RPC errors and the runner keeps going', async () => {
  const r = new Runner();
  try {
    const expectError = async (line, code, id = null) => {
      const before = r.messages.length;
      r.sendRaw(line);
      const deadline = Date.now() + 5000;
      while (r.messages.length === before && Date.now() < deadline) await new Promise((res) => setTimeout(res, 5));
      const m = r.messages[before];
      assert.ok(m, `no answer to ${line}`);
      assert.equal(m.error?.code, code, `${line} -> ${JSON.stringify(m)}`);
      assert.equal(m.id, id, line);
    };
    await expectError('{not json', -32700);
    await expectError('[{"jsonrpc":"2.0","id":1,"method":"load"}]', -32600);
    await expectError('"a string"', -32600);
    await expectError('{"id":3,"method":"load","params":{}}', -32600, 3);
    await expectError('{"jsonrpc":"1.0","id":4,"method":"load"}', -32600, 4);
    await expectError('{"jsonrpc":"2.0","id":"s5","method":"load"}', -32600, 's5');
    await expectError('{"jsonrpc":"2.0","id":1.5,"method":"load"}', -32600, 1.5);
    await expectError('{"jsonrpc":"2.0","id":6}', -32600, 6);
    await expectError('{"jsonrpc":"2.0","id":7,"method":42}', -32600, 7);
    await expectError('{"jsonrpc":"2.0","id":8,"method":"frobnicate"}', -32601, 8);
    await expectError('{"jsonrpc":"2.0","id":9,"method":"load","params":{}}', -32602, 9);
    await expectError('{"jsonrpc":"2.0","id":10,"method":"load","params":"x"}', -32600, 10);
    await expectError('{"jsonrpc":"2.0","id":11,"method":"invoke","params":{"plugin":0,"target":"hook","name":"x","ctx":{},"timeout_ms":100}}', -32011, 11);
    await r.load(fixture('behaviours.mjs'));
    const bad = [
      [{ plugin: -1, target: 'hook', name: 'x', ctx: {}, timeout_ms: 10 }, 'plugin'],
      [{ plugin: 0, target: 'nope', ctx: {}, timeout_ms: 10 }, 'target'],
      [{ plugin: 0, target: 'hook', ctx: {}, timeout_ms: 10 }, 'name'],
      [{ plugin: 0, target: 'hook', name: 'x', timeout_ms: 10 }, 'ctx'],
      [{ plugin: 0, target: 'hook', name: 'x', ctx: {}, timeout_ms: 0 }, 'timeout_ms'],
      [{ plugin: 0, target: 'hook', name: 'x', ctx: {} }, 'timeout_ms'],
      [{ plugin: 0, target: 'hook', name: 'x', ctx: {}, timeout_ms: 2 ** 31 }, 'timeout_ms'],
    ];
    for (const [params, field] of bad) {
      const m = await r.request('invoke', params);
      assert.equal(m.error?.code, -32602, JSON.stringify(params));
      assert.equal(m.error.data.field, field);
    }
    // A response to a request the runner never sent, and a notification: ignored, no answer.
    r.sendRaw('{"jsonrpc":"2.0","id":"h1","result":{}}');
    r.sendRaw('{"jsonrpc":"2.0","method":"ping"}');
    const ok = await r.invoke({ target: 'hook', name: 'echo', input: 'still here' });
    assert.equal(ok.result.value, 'still here');
    assert.equal(r.messages.filter((m) => m.id === 'h1').length, 0);
  } finally { await r.close(); }
});

test('the runner writes nothing before its first request', async () => {
  const r = new Runner();
  try {
    await new Promise((res) => setTimeout(res, 300));
    assert.equal(r.lines.length, 0);
  } finally { await r.close(); }
});

test('shutdown answers {} (in-flight invokes first) and exits 0', async () => {
  const r = new Runner();
  await r.load(fixture('behaviours.mjs'));
  const slow = r.send('invoke', { plugin: 0, target: 'hook', name: 'slow', input: { ms: 5000 }, ctx: { runId: 'r', state: {} }, timeout_ms: 9000 });
  const id = r.send('shutdown', {});
  const m = await r.wait(id);
  assert.deepEqual(m.result, {});
  const s = await r.wait(slow);
  assert.equal(s.error.code, -32011);
  const [code] = await r.exited;
  assert.equal(code, 0);
});

test('EOF on stdin: exit 0 within 1 s, even with a guest stuck in a loop', async () => {
  const r = new Runner();
  await r.load(fixture('behaviours.mjs'));
  r.send('invoke', { plugin: 0, target: 'hook', name: 'syncLoop', input: {}, ctx: { runId: 'r', state: {} }, timeout_ms: 60000 });
  await new Promise((res) => setTimeout(res, 100));
  const t0 = performance.now();
  r.child.stdin.end();
  const [code] = await r.exited;
  const took = performance.now() - t0;
  assert.equal(code, 0);
  assert.ok(took < 1000, `exit took ${took} ms`);
});

test('EOF with nothing in flight exits at once; pipelined requests before EOF are answered', async () => {
  const r = new Runner();
  r.sendRaw(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'load', params: { path: fixture('behaviours.mjs') } }));
  await r.wait(1); // a cold load can take longer than the EOF allowance on a loaded machine
  r.sendRaw(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'invoke', params: { plugin: 0, target: 'hook', name: 'echo', input: 'x', ctx: { runId: 'r', state: {} }, timeout_ms: 1000 } }));
  r.child.stdin.end();
  const [code] = await r.exited;
  assert.equal(code, 0);
  assert.equal(r.answers.get(1)?.result?.export_kind, 'array');
  assert.equal(r.answers.get(2)?.result?.value, 'x');
});
