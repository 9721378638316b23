#!/usr/bin/env node
// Figures for the nanopi runner (not a test: prints numbers). Usage:
//   CONFORM_NANOPI_DIR=<build>/nanopi node test/measure.mjs [calls]
// cold load (process spawn → load result), handle-event calls/s over stdio with one call in flight
// (with and without a host import per call), a 2000 ms spin stopped after how long, rebuild times.
import { Runner, component } from './helpers.mjs';
import { loadavg } from 'node:os';

const N = Number(process.argv[2]) || 2000;
const fmt = (x) => Math.round(x * 10) / 10;
console.log(`load average at start: ${loadavg().map(fmt).join(' ')}`);

for (const [label, env] of [['cache off', { CONFORM_NANOPI_CACHE: 'off' }], ['cache on', {}]]) {
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const r = new Runner({ env });
    const res = await r.ok('load', { path: component('events_plugin') });
    console.log(`cold load, ${label}, #${i + 1}: ${fmt(performance.now() - t0)} ms from spawn (runner: load ${res.load_ms} ms, transpile ${res.transpile_ms} ms, cached ${res.cached}, instantiate ${res.instantiate_ms} ms)`);
    await r.close();
  }
}

async function rate(name, label) {
  const r = new Runner();
  await r.ok('load', { path: component(name) });
  for (let i = 0; i < 200; i++) await r.call('handle-event', ['input', '{"prompt":"warm up"}'], 2000);
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await r.call('handle-event', ['input', '{"prompt":"hello"}'], 2000);
  const s = (performance.now() - t0) / 1000;
  console.log(`handle-event, one in flight, ${label}: ${fmt(N / s)} calls/s (${fmt((s * 1e6) / N)} µs per call, ${N} calls)`);
  // Written ahead: every request after the first while one runs is refused (-32010, by contract).
  const burst = await Promise.all(Array.from({ length: 20 }, () => r.request('call', { export: 'handle-event', args: ['input', '{}'], budget_ms: 2000 })));
  console.log(`  20 requests written at once: ${burst.filter((b) => b.result).length} ran, ${burst.filter((b) => b.error?.code === -32010).length} refused busy (-32010)`);
  await r.close();
}
await rate('list_events_numbers', 'no host import (WAT component)');
await rate('events_plugin', 'one host-log import answered by the client');

{
  const r = new Runner();
  await r.ok('load', { path: component('handle_event_spin') });
  for (let i = 0; i < 3; i++) {
    const resp = await r.request('call', { export: 'handle-event', args: ['turn_start', '{}'], budget_ms: 2000 });
    console.log(`spin, 2000 ms budget: answered after ${fmt(resp.receivedAt - resp.sentAt)} ms (guest ${resp.result.guest_ms} ms, rebuild ${resp.result.rebuild_ms} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 1500)); // let the next spare start
  }
  const t = await r.call('handle-event', ['input', '{}'], 2000);
  console.log(`after the spins a normal delivery: ${t.outcome}`);
  const resets = [];
  for (let i = 0; i < 3; i++) resets.push((await r.ok('reset', {})).rebuild_ms);
  console.log(`reset back to back (spare ready only for the first): ${resets.join(', ')} ms`);
  await r.close();
}
{
  const r = new Runner();
  await r.ok('load', { path: component('handle_event_trap_on_payload') });
  const traps = [];
  for (let i = 0; i < 5; i++) traps.push((await r.call('handle-event', ['input', 'conform-trap'], 2000)).rebuild_ms);
  console.log(`trap → in-worker re-instantiation: ${traps.join(', ')} ms`);
  await r.close();
}
console.log(`load average at end: ${loadavg().map(fmt).join(' ')}`);
