#!/usr/bin/env node
// measure.mjs — the runner's figures (issue 10 asks for them): cold start to the `load` result,
// invokes per second over stdio (one in flight, and pipelined), and how precisely a synchronous loop is
// stopped at timeout_ms = 500. Usage: node guest/cognipeer/measure.mjs [--quick]
// Prints one line per figure; the machine's load average is printed too (figures on a shared machine).
import { loadavg } from 'node:os';
import { Runner, fixture } from './test/helpers.mjs';

const quick = process.argv.includes('--quick');
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const fmt = (x) => x.toFixed(1);
const ctx = { runId: 'm', agentName: 'a', hookName: 'echo', state: {}, depth: 0 };

async function coldStart(n) {
  const walls = [];
  const loads = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = new Runner();
    const res = await r.load(fixture('behaviours.mjs'));
    walls.push(performance.now() - t0);
    loads.push(res.load_ms);
    await r.close();
  }
  console.log(`cold start (spawn node -> load result), median of ${n}: ${fmt(median(walls))} ms (min ${fmt(Math.min(...walls))}, max ${fmt(Math.max(...walls))}); load_ms median ${fmt(median(loads))} ms`);
}

async function sequential(r, n) {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const m = await r.request('invoke', { plugin: 0, target: 'hook', name: 'echo', input: { i }, ctx, timeout_ms: 5000 });
    if (m.result?.value?.i !== i) throw new Error(`bad answer ${JSON.stringify(m)}`);
  }
  const s = (performance.now() - t0) / 1000;
  console.log(`invokes/s, one in flight (echo hook, ${n} calls): ${fmt(n / s)} /s (${fmt((s * 1000) / n)} ms per round trip)`);
}

async function pipelined(r, n) {
  const t0 = performance.now();
  const ids = [];
  for (let i = 0; i < n; i++) ids.push(r.send('invoke', { plugin: 0, target: 'hook', name: 'echo', input: { i }, ctx, timeout_ms: 30000 }));
  await Promise.all(ids.map((id) => r.wait(id, 120000)));
  const s = (performance.now() - t0) / 1000;
  console.log(`invokes/s, pipelined (${n} sent at once): ${fmt(n / s)} /s`);
}

async function stopAccuracy(r, n) {
  const walls = [];
  const elapsed = [];
  const restarts = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const m = await r.request('invoke', { plugin: 0, target: 'hook', name: 'syncLoop', input: {}, ctx, timeout_ms: 500 });
    walls.push(performance.now() - t0);
    if (m.result?.outcome !== 'timeout' || !m.result.restarted) throw new Error(`bad answer ${JSON.stringify(m)}`);
    elapsed.push(m.result.elapsed_ms);
    restarts.push(m.result.restart_ms);
  }
  console.log(`sync loop at timeout_ms=500, ${n} runs: stopped after ${elapsed.map(fmt).join(', ')} ms (median ${fmt(median(elapsed))}, i.e. +${fmt(median(elapsed) - 500)} ms); ` +
    `re-import ${fmt(median(restarts))} ms median; answer after ${fmt(median(walls))} ms median`);
}

console.log(`node ${process.version}, load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
await coldStart(quick ? 3 : 7);
const r = new Runner();
await r.load(fixture('behaviours.mjs'));
await sequential(r, quick ? 300 : 2000);
await pipelined(r, quick ? 1000 : 10000);
await stopAccuracy(r, quick ? 3 : 5);
await r.close();
