// The nanopi runner's `call` and `reset`: values, host imports (budget paused), trap → rebuilt,
// timeout → terminated + respawned, busy (docs/guest-protocol.md "nanopi runner").
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Runner, component } from './helpers.mjs';

const runners = [];
async function loaded(name, opts) {
  const r = new Runner(opts);
  runners.push(r);
  await r.ok('load', { path: component(name) });
  return r;
}
after(async () => { for (const r of runners) await r.close(); });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function waitFor(pred, deadlineMs = 10_000) {
  const end = performance.now() + deadlineMs;
  while (!pred()) {
    if (performance.now() > end) throw new Error('condition not met within the deadline');
    await sleep(5);
  }
}
const seen = async (r) => JSON.parse((await r.call('execute-tool', ['events_seen', '{}'], 2000)).value).content;

test('call returns the export value; handle-event returns "{}" and list-events the requested names', async () => {
  const r = await loaded('events_plugin');
  const le = await r.call('list-events', []);
  assert.equal(le.outcome, 'ok');
  assert.deepEqual(JSON.parse(le.value), ['tool_execution_start', 'tool_execution_end', 'turn_start', 'input', 'session_start']);
  assert.equal(le.rebuilt, false);
  for (const k of ['guest_ms', 'elapsed_ms']) assert.ok(le[k] >= 0);
  const he = await r.call('handle-event', ['input', '{"prompt":"hi"}'], 2000);
  assert.deepEqual([he.outcome, he.value, he.rebuilt], ['ok', '{}', false]);
  assert.equal(await seen(r), '1: input');
  assert.equal(JSON.parse((await r.call('execute-tool', ['last_payload', '{}'])).value).content, '{"prompt":"hi"}');
});

test('big payloads: the guest keeps at most 256 KiB and its results stay valid JSON', async () => {
  const r = await loaded('events_plugin');
  const payload = '\u0001"'.repeat(200_000); // 400 000 bytes that escape to 1.6 MB
  assert.equal((await r.call('handle-event', ['input', payload], 2000)).value, '{}');
  const back = JSON.parse((await r.call('execute-tool', ['last_payload', '{}'], 2000)).value).content;
  assert.ok(back.length > 1000 && payload.startsWith(back), `got ${back.length} characters`);
});

test('host imports go to conform as h* requests and the answer reaches the guest', async () => {
  const r = await loaded('events_plugin', { onImport: (name, args) => (name === 'host-log' ? null : `answer to ${args[0]}`) });
  const res = await r.call('execute-tool', ['notify', 'ping'], 2000);
  assert.equal(JSON.parse(res.value).content, 'answer to ping');
  assert.equal(res.imports, 1);
  const he = await r.call('handle-event', ['session_start', '{}'], 2000);
  assert.equal(he.imports, 2);
  const got = r.imports.map((m) => [m.id, m.params.name, m.params.args]);
  assert.deepEqual(got, [['h1', 'host-notify', ['ping']], ['h2', 'host-log', [0, 'session_start']],
    ['h3', 'host-notify', ['conform events plugin: watching']]]);
});

test('NP-27 the guest budget is paused while conform answers a host import', async () => {
  const r = await loaded('events_plugin', { onImport: async () => { await sleep(800); return 'late but fine'; } });
  const res = await r.call('execute-tool', ['notify', 'slow'], 300);
  assert.equal(res.outcome, 'ok', JSON.stringify(res));
  assert.equal(JSON.parse(res.value).content, 'late but fine');
  assert.ok(res.elapsed_ms >= 800, `elapsed ${res.elapsed_ms}`);
  assert.ok(res.guest_ms < 300, `guest ${res.guest_ms}`);
});

test('an h* request unanswered past the deadline is answered to the guest in-band', async () => {
  const r = await loaded('events_plugin', { env: { CONFORM_NANOPI_IMPORT_TIMEOUT_MS: '300' }, onImport: () => undefined });
  const res = await r.call('execute-tool', ['notify', 'nobody home'], 2000);
  assert.equal(res.outcome, 'ok');
  assert.match(JSON.parse(res.value).content, /^error: host did not answer/);
  // A late answer to the expired request is ignored, and the runner goes on.
  r.answer('h1', 'too late');
  assert.equal((await r.call('list-tools', [], 2000)).outcome, 'ok');
});

test('a JSON-RPC error or a malformed answer to an h* request reaches the guest as an in-band error', async () => {
  const r = await loaded('events_plugin', { onImport: () => undefined });
  const p1 = r.call('execute-tool', ['notify', 'a'], 2000);
  await waitFor(() => r.imports.length === 1);
  r.write({ jsonrpc: '2.0', id: r.imports[0].id, error: { code: -1, message: 'conform refused' } });
  assert.equal(JSON.parse((await p1).value).content, 'error: host did not answer (conform refused)');
  const p2 = r.call('execute-tool', ['notify', 'b'], 2000);
  await waitFor(() => r.imports.length === 2);
  r.write({ jsonrpc: '2.0', id: r.imports[1].id, result: { value: 42 } });
  assert.equal(JSON.parse((await p2).value).content, 'error: host did not answer (malformed answer)');
});

test('NP-24 a trap ends the call with outcome trap; the instance is rebuilt fresh before the answer', async () => {
  const r = await loaded('handle_event_trap_on_payload');
  await r.call('handle-event', ['input', '{}'], 2000);
  assert.equal(await seen(r), '1: input');
  const t = await r.call('handle-event', ['input', '{"x":"conform-trap"}'], 2000);
  assert.equal(t.outcome, 'trap');
  assert.match(t.message, /unreachable/);
  assert.equal(t.rebuilt, true);
  assert.ok(t.rebuild_ms >= 0);
  assert.equal(await seen(r), '0:', 'guest memory is fresh after the rebuild');
  await r.call('handle-event', ['turn_start', '{}'], 2000);
  assert.equal(await seen(r), '1: turn_start', 'later deliveries work');
});

test('NP-26 a spinning guest is stopped within budget + 250 ms, respawned fresh, and keeps working', async () => {
  const r = await loaded('handle_event_spin');
  await r.call('handle-event', ['input', '{}'], 2000);
  const resp = await r.request('call', { export: 'handle-event', args: ['turn_start', '{}'], budget_ms: 1000 });
  const res = resp.result;
  const wall = resp.receivedAt - resp.sentAt;
  assert.equal(res.outcome, 'timeout');
  assert.equal(res.rebuilt, true);
  assert.ok(res.guest_ms >= 1000, `guest ${res.guest_ms}`);
  assert.ok(wall <= 1250, `stopped after ${wall} ms (runner: ${res.elapsed_ms} ms, rebuild ${res.rebuild_ms} ms)`);
  assert.equal(await seen(r), '0:');
  await r.call('handle-event', ['input', '{}'], 2000);
  assert.equal(await seen(r), '1: input');
});

test('a second call while one runs is refused with -32010 busy, never queued', async () => {
  const r = await loaded('handle_event_spin');
  // Lines are handled in order: the first call is running when the next lines arrive.
  const first = r.request('call', { export: 'handle-event', args: ['turn_start', '{}'], budget_ms: 600 });
  const second = await r.request('call', { export: 'list-tools', args: [], budget_ms: 1000 });
  assert.equal(second.error?.code, -32010);
  assert.equal((await r.request('reset', {})).error?.code, -32010);
  assert.equal((await r.request('load', { path: component('events_plugin') })).error?.code, -32010);
  assert.equal((await first).result.outcome, 'timeout');
  assert.equal((await r.call('list-tools', [], 1000)).outcome, 'ok');
});

test('reset gives a fresh instance without calling any export', async () => {
  const r = await loaded('events_plugin');
  await r.call('handle-event', ['input', '{}'], 2000);
  const importsBefore = r.imports.length;
  const res = await r.ok('reset', {});
  assert.ok(res.rebuild_ms >= 0);
  assert.equal(r.imports.length, importsBefore, 'no guest code ran');
  assert.equal(await seen(r), '0:');
});

test('a call to an export the component lacks is -32013 with the export list', async () => {
  const r = await loaded('events_without_handler');
  const res = await r.request('call', { export: 'handle-event', args: ['input', '{}'], budget_ms: 1000 });
  assert.equal(res.error.code, -32013);
  assert.ok(res.error.data.exports.includes('list-events'));
});
