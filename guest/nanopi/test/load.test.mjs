// The nanopi runner's `load`, its envelope (docs/guest-protocol.md "Envelope") and its exit paths.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, mkdtempSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { GUEST, Runner, component, componentsDir, manifest } from './helpers.mjs';

const scratch = mkdtempSync(join(tmpdir(), 'conform-nanopi-test-'));
const runners = [];
function runner(opts) { const r = new Runner(opts); runners.push(r); return r; }
after(async () => {
  for (const r of runners) await r.close();
  rmSync(scratch, { recursive: true, force: true });
});

const NINE = new Set(['host-log', 'host-fs-read', 'host-http-get', 'host-store-get', 'host-store-set',
  'host-notify', 'host-set-context', 'host-call-tool', 'host-send-user-message']);

test('load of the conforming events plugin reports world, exports, imports and timings', async () => {
  const r = runner();
  const res = await r.ok('load', { path: component('events_plugin') });
  assert.equal(res.world, 'extension-events');
  assert.deepEqual([...res.exports].sort(), ['execute-command', 'execute-tool', 'handle-event', 'list-commands', 'list-events', 'list-tools']);
  assert.deepEqual([...res.imports].sort(), ['host-log', 'host-notify']);
  assert.deepEqual(res.unsupported_imports, []);
  assert.equal(res.instantiated, true);
  for (const k of ['load_ms', 'transpile_ms', 'instantiate_ms']) assert.ok(typeof res[k] === 'number' && res[k] >= 0, k);
  assert.ok(res.load_ms >= res.transpile_ms);
});

test('the bindings cache: a second runner loads the same component from it, with the same result', async () => {
  const env = { CONFORM_NANOPI_CACHE: join(scratch, 'cache') };
  const a = await runner({ env }).ok('load', { path: component('notify_flood') });
  const b = await runner({ env }).ok('load', { path: component('notify_flood') });
  const off = await runner({ env: { CONFORM_NANOPI_CACHE: 'off' } }).ok('load', { path: component('notify_flood') });
  assert.deepEqual([a.cached, b.cached, off.cached], [false, true, false]);
  for (const k of ['world', 'exports', 'imports', 'unsupported_imports', 'instantiated']) {
    assert.deepEqual(b[k], a[k], k);
    assert.deepEqual(off[k], a[k], k);
  }
  const r = runners.at(-2); // the one that loaded from the cache still runs the guest
  assert.equal((await r.call('list-events', [], 2000)).outcome, 'ok');
});

test('every manifest component loads; only those with non-nanopi imports stay uninstantiated', async () => {
  const r = runner();
  for (const c of manifest().components) {
    const res = await r.ok('load', { path: component(c.name) });
    const foreign = res.imports.filter((n) => !NINE.has(n));
    assert.deepEqual(res.unsupported_imports, foreign, c.name);
    assert.equal(res.instantiated, foreign.length === 0, c.name);
    if (c.wit === 'nanopi') assert.equal(res.world, c.world, c.name);
  }
});

test('a world is inferred from the exports: an events component without list-commands is not extension-events', async () => {
  const r = runner();
  assert.equal((await r.ok('load', { path: component('events_without_commands') })).world, 'extension');
  assert.equal((await r.ok('load', { path: component('events_without_handler') })).world, 'extension-commands');
  assert.equal((await r.ok('load', { path: component('events_without_list_tools') })).world, null);
  assert.equal((await r.ok('load', { path: component('commands_world_plugin') })).world, 'extension-commands');
});

test('wasi and unknown root imports are reported as unsupported and never instantiated; call → -32011', async () => {
  const r = runner();
  const w = await r.ok('load', { path: component('imports_wasi') });
  assert.equal(w.instantiated, false);
  assert.equal(w.unsupported_imports.length, 1);
  assert.match(w.unsupported_imports[0], /^wasi:random\/random/);
  const c = await r.request('call', { export: 'list-tools', args: [], budget_ms: 1000 });
  assert.equal(c.error.code, -32011);
  const u = await r.ok('load', { path: component('imports_unknown_host_function') });
  assert.deepEqual(u.unsupported_imports, ['host-exec']);
  assert.equal(u.instantiated, false);
  assert.equal((await r.request('reset', {})).error.code, -32011);
});

test('garbage, a missing file, a core module and a truncated component → -32012 with the stage', async () => {
  const r = runner();
  const garbage = join(scratch, 'garbage.wasm');
  writeFileSync(garbage, 'this is not wasm at all');
  const truncated = join(scratch, 'truncated.wasm');
  const full = readFileSync(component('events_plugin'));
  writeFileSync(truncated, full.subarray(0, Math.floor(full.length / 2)));
  const cases = [[garbage, 'compile'], [join(scratch, 'missing.wasm'), 'read'], [truncated, 'transpile']];
  const core = join(componentsDir(), 'events_plugin.core.wasm');
  if (existsSync(core)) cases.push([core, 'compile']);
  for (const [path, stage] of cases) {
    const res = await r.request('load', { path });
    assert.equal(res.error?.code, -32012, path);
    assert.equal(res.error.data.stage, stage, path);
    assert.ok(res.error.message.length > 0);
  }
  // The runner stays usable, and a failed load leaves nothing loaded.
  assert.equal((await r.request('call', { export: 'list-tools', args: [], budget_ms: 1000 })).error.code, -32011);
  assert.equal((await r.ok('load', { path: component('events_plugin') })).instantiated, true);
});

test('a component whose core start function traps → -32012 at the instantiate stage', async () => {
  const wat = join(scratch, 'start_trap.wat');
  writeFileSync(wat, `(module (memory (export "memory") 1) (func $boom unreachable) (start $boom)
    (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func (export "list-tools") (result i32) (i32.const 0))
    (func (export "execute-tool") (param i32 i32 i32 i32) (result i32) (i32.const 0)))`);
  const out = join(scratch, 'start_trap.wasm');
  execFileSync(process.execPath, [join(GUEST, 'build-component.mjs'), '--core', wat, '--wit',
    join(GUEST, 'wit', 'nanopi.wit'), '--world', 'extension', '-o', out]);
  const r = runner();
  const res = await r.request('load', { path: out });
  assert.equal(res.error?.code, -32012);
  assert.equal(res.error.data.stage, 'instantiate');
  assert.match(res.error.message, /unreachable/);
});

test('envelope errors: parse error, invalid request, unknown method, bad params, no such export', async () => {
  const r = runner();
  r.write('{not json');
  r.write('[1,2]');
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal((await r.request('nope', {})).error.code, -32601);
  assert.equal((await r.request('load', {})).error.code, -32602);
  assert.equal((await r.request('call', { export: 'list-tools', args: [], budget_ms: 10 })).error.code, -32011);
  await r.ok('load', { path: component('events_plugin') });
  assert.equal((await r.request('call', { export: 'nope', args: [], budget_ms: 10 })).error.code, -32013);
  assert.equal((await r.request('call', { export: 'handle-event', args: ['x'], budget_ms: 10 })).error.code, -32602);
  assert.equal((await r.request('call', { export: 'list-tools', args: [], budget_ms: -1 })).error.code, -32602);
  assert.equal((await r.request('call', { export: 'list-tools', args: [] })).error.code, -32602);
  const errs = r.lines.map((l) => JSON.parse(l)).filter((m) => m.id === null);
  assert.deepEqual(errs.map((m) => m.error.code), [-32700, -32600]);
});

test('guest-side output never reaches stdout: it arrives as console notifications', async () => {
  // JCO_DEBUG makes jco's generated bindings print with console.debug inside the worker.
  const r = runner({ env: { JCO_DEBUG: '1' } });
  await r.ok('load', { path: component('events_plugin') });
  await r.call('handle-event', ['input', '{}'], 2000);
  await r.ok('shutdown', {});
  await r.exited;
  for (const line of r.lines) {
    const m = JSON.parse(line); // throws on anything that is not a JSON line
    assert.equal(m.jsonrpc, '2.0');
  }
  assert.ok(r.notifications.some((n) => n.method === 'console'), 'the debug output was captured');
});

test('nothing is written before the first request; shutdown answers {} and exits 0', async () => {
  const r = runner();
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(r.lines.length, 0);
  await r.ok('load', { path: component('events_plugin') });
  assert.deepEqual(await r.ok('shutdown', {}), {});
  assert.equal((await r.exited).code, 0);
});

test('EOF on stdin: the runner exits 0 within 1 s, even with a worker running', async () => {
  const r = runner();
  await r.ok('load', { path: component('events_plugin') });
  const t0 = performance.now();
  r.child.stdin.end();
  const { code, at } = await r.exited;
  assert.equal(code, 0);
  assert.ok(at - t0 < 1000, `exited after ${at - t0} ms`);
});
