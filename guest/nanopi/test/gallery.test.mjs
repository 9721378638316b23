// The test components really are what tests/nanopi_components/manifest.json says: each fault is
// observable through the runner, and the conforming controls show none of them. The C++ kill-rate
// matrix relies on this; a gallery component that silently stopped misbehaving would make a
// check look like it kills a fault it never saw.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Runner, component, manifest } from './helpers.mjs';

const DELIVERABLE = ['tool_execution_start', 'tool_execution_end', 'input', 'before_agent_start', 'turn_start',
  'turn_end', 'message_end', 'session_start', 'session_shutdown', 'session_before_compact', 'session_compact'];
const MAX_EVENTS = 32; // NP-37
const NOTIFY_PER_TURN = 10; // NP-38

const r = new Runner({ onImport: (name) => (name === 'host-log' ? null : '') });
after(() => r.close());
const byName = new Map(manifest().components.map((c) => [c.name, c]));

async function load(name) { return r.ok('load', { path: component(name) }); }
async function listEvents() { return (await r.call('list-events', [], 30_000)).value; }
async function deliver(ev, payload = '{}', budget = 2000) {
  const before = r.imports.length;
  const res = await r.call('handle-event', [ev, payload], budget);
  return { res, imports: r.imports.slice(before).map((m) => m.params.name) };
}
function parseArray(text) { try { const v = JSON.parse(text); return Array.isArray(v) ? v : null; } catch { return null; } }

test('the manifest: unique names, the fields the matrix reads, at least 15 faults', () => {
  const all = manifest().components;
  assert.equal(new Set(all.map((c) => c.name)).size, all.length);
  for (const c of all) {
    for (const k of ['name', 'world', 'what', 'grant', 'source', 'wit', 'defines']) assert.ok(k in c, `${c.name}: ${k}`);
    assert.ok(c.breaks === null || /^NP-\d\d$/.test(c.breaks), c.name);
    assert.ok(Array.isArray(c.grant));
  }
  assert.ok(all.filter((c) => c.breaks !== null).length >= 15);
});

test('conforming controls: valid list-events of deliverable names, "{}" for every event, notify within limits', async () => {
  for (const c of manifest().components.filter((x) => x.breaks === null)) {
    const l = await load(c.name);
    if (!l.exports.includes('list-events')) continue; // NP-36: no subscriptions at all
    const first = await listEvents();
    const names = parseArray(first);
    assert.ok(names && names.length <= MAX_EVENTS && names.every((n) => DELIVERABLE.includes(n)), `${c.name}: ${first}`);
    assert.equal(await listEvents(), first, `${c.name}: list-events is stable`);
    if (names.length === 0) continue;
    let notifies = 0;
    for (const ev of DELIVERABLE) {
      const { res, imports } = await deliver(ev, `{"event":"${ev}"}`);
      assert.deepEqual([res.outcome, res.value], ['ok', '{}'], `${c.name} ${ev}`);
      notifies += imports.filter((n) => n === 'host-notify').length;
    }
    assert.ok(notifies <= NOTIFY_PER_TURN, `${c.name}: ${notifies} notifies`);
  }
});

// One observation per fault component, keyed by name: each must hold.
const FAULTS = {
  list_events_malformed: async () => assert.equal(parseArray(await listEvents()), null),
  list_events_33_names: async () => assert.equal(parseArray(await listEvents()).length, 33),
  list_events_trap: async () => assert.equal((await r.call('list-events', [], 30_000)).outcome, 'trap'),
  list_events_not_array: async () => { const v = JSON.parse(await listEvents()); assert.ok(v && !Array.isArray(v)); },
  list_events_numbers: async () => assert.ok(parseArray(await listEvents()).every((x) => typeof x === 'number')),
  list_events_unknown_name: async () => assert.ok(parseArray(await listEvents()).includes('bogus_event')),
  list_events_retired_name: async () => assert.ok(parseArray(await listEvents()).includes('pre_tool_use')),
  list_events_message_update: async () => assert.ok(parseArray(await listEvents()).includes('message_update')),
  list_events_ungranted: async () => {
    const asked = parseArray(await listEvents());
    assert.ok(asked.includes('session_shutdown') && !byName.get('list_events_ungranted').grant.includes('session_shutdown'));
  },
  list_events_changes: async () => assert.notEqual(await listEvents(), await listEvents()),
  events_without_handler: async (l) => {
    assert.ok(!l.exports.includes('handle-event'));
    assert.ok(parseArray(await listEvents()).length > 0);
  },
  events_without_commands: async (l) => assert.ok(!l.exports.includes('list-commands') && !l.exports.includes('execute-command') && l.exports.includes('list-events')),
  events_without_list_tools: async (l) => assert.ok(!l.exports.includes('list-tools') && l.exports.includes('handle-event')),
  handle_event_spin: async () => assert.equal((await deliver('turn_start', '{}', 500)).res.outcome, 'timeout'),
  handle_event_trap_on_payload: async () => {
    assert.equal((await deliver('input', '{}')).res.outcome, 'ok');
    assert.equal((await deliver('input', '{"prompt":"conform-trap"}')).res.outcome, 'trap');
  },
  notify_flood: async () => assert.equal((await deliver('turn_start')).imports.filter((n) => n === 'host-notify').length, NOTIFY_PER_TURN + 1),
  handle_event_returns_veto: async () => assert.notEqual((await deliver('input')).res.value, '{}'),
  http_in_handler: async () => assert.ok((await deliver('input')).imports.includes('host-http-get')),
  acts_without_grant: async () => {
    const { imports } = await deliver('input');
    assert.ok(imports.includes('host-call-tool') && imports.includes('host-send-user-message'));
  },
  imports_wasi: async (l) => assert.ok(l.unsupported_imports.some((n) => n.startsWith('wasi:'))),
  imports_unknown_host_function: async (l) => assert.deepEqual(l.unsupported_imports, ['host-exec']),
};

test('every fault component shows its fault through the runner', async () => {
  const faults = manifest().components.filter((c) => c.breaks !== null);
  for (const c of faults) {
    assert.ok(FAULTS[c.name], `no observation for ${c.name}: add one`);
    const l = await load(c.name);
    await FAULTS[c.name](l);
  }
});

test('each fault observation fails on the conforming events plugin (the observations can fail)', async () => {
  const l = await load('events_plugin');
  for (const [name, observe] of Object.entries(FAULTS)) {
    await assert.rejects(async () => observe(l), assert.AssertionError, `${name} also holds for the conforming plugin`);
  }
});

test('load with wit: true returns the component WIT text', async () => {
  const l = await r.ok('load', { path: component('events_plugin'), wit: true });
  assert.match(l.wit, /export handle-event: func\(event: string, payload-json: string\) -> string;/);
  assert.match(l.wit, /import host-notify: func/);
});
