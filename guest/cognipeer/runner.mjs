#!/usr/bin/env node
// runner.mjs — the Cognipeer guest runner (docs/guest-protocol.md, "Cognipeer runner"; exact fields in
// README.md beside this file). conform starts it as a child process and speaks newline-delimited
// JSON-RPC 2.0 on its stdin/stdout. It imports one plugin module in a worker_thread (worker.mjs), reports
// the module's declared shape, and invokes hooks, setup/dispose and contributed functions on request. It is
// mechanism only: every Cognipeer host rule (defaults, ordering, merging, decisions, failure modes) lives
// in C++ (mock_engine/cognipeer/).
//
// stdout carries JSON-RPC messages and nothing else; the runner's own diagnostics go to stderr.
import { Worker } from 'node:worker_threads';
import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const WORKER = fileURLToPath(new URL('./worker.mjs', import.meta.url));

// A responsive worker answers `timeout` itself at timeout_ms (worker.mjs). If nothing came back this long
// after the deadline, the main thread looks at the worker's heartbeat (worker.mjs, every 20 ms): older
// than STALE_BEAT_MS means a guest is blocking the thread (a synchronous loop) — terminate and re-import
// (guest-protocol.md: "on a timeout the worker is terminated, the module re-imported"); fresher means the
// worker is alive but its timer is late (a loaded machine): look again STUCK_GRACE_MS later. 50 ms keeps a
// sync-loop stop close to its deadline; 250 ms of silence is 12 missed beats, not scheduling jitter.
const STUCK_GRACE_MS = 50;
const STALE_BEAT_MS = 250;
// load: importing a module is a guest call too, and every wait has a deadline (guest-protocol.md
// "Every wait has a deadline"); 10 s matches Cognipeer's own default plugin timeout (COGNIPEER-0.10.2.md).
const DEFAULT_LOAD_TIMEOUT_MS = 10000;
// setTimeout's largest delay (2^31-1 ms); a larger timeout_ms would fire at once.
const MAX_TIMEOUT_MS = 2147483647;
// One request line larger than this is refused without being parsed (the runner must not be made to
// buffer without bound by a peer that never sends LF).
const MAX_LINE_BYTES = 64 * 1024 * 1024;
// EOF on stdin: exit 0 within 1 s (guest-protocol.md "Envelope"); what is still in flight gets until then.
const EOF_EXIT_MS = 750; // leaves a quarter second for teardown on a loaded machine

const TARGETS = new Set(['hook', 'setup', 'dispose', 'tool', 'systemPrompt', 'wrapModel', 'slot']);
const NAMED_TARGETS = new Set(['hook', 'tool', 'slot']);

const diag = (msg) => { try { process.stderr.write(`cognipeer-runner: ${msg}\n`); } catch { /* stderr gone */ } };

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + '\n');
}
const reply = (id, result) => send({ jsonrpc: '2.0', id, result });
const fail = (id, code, message, data) =>
  send({ jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } });
const notify = (method, params) => send({ jsonrpc: '2.0', method, params });

const round = (ms) => Math.round(ms * 1000) / 1000;

// --- the worker and what is in flight on it ------------------------------------------------------------
let state = 'empty';       // empty | loading | loaded | restarting | failed
let modulePath = null;
let loadTimeoutMs = DEFAULT_LOAD_TIMEOUT_MS;
let worker = null;         // current Worker
let generation = 0;        // bumps with every worker; messages from an older one are ignored
let pluginCount = 0;
const inflight = new Map(); // request id -> {t0, deadline timer, generation}
const queued = [];          // invokes that arrived while the worker restarts

// A booted worker that has not imported anything yet: the next load or restart adopts it, so a restart
// after a stuck guest costs the module's import, not a thread's boot as well.
let spare = null;
let heartbeat = null; // Float64Array over the current worker's shared heartbeat stamp (epoch ms)

function isStuck() {
  if (!heartbeat) return true;
  return performance.timeOrigin + performance.now() - heartbeat[0] > STALE_BEAT_MS;
}

function bootWorker() {
  const w = new Worker(WORKER, { stdout: true, stderr: true });
  // Anything that bypasses the worker's patched write functions still lands here, never on our stdout.
  w.stdout.on('data', (b) => notify('console', { plugin: null, plugin_name: null, id: null, stream: 'stdout', text: b.toString('utf8'), uncaptured: true }));
  w.stderr.on('data', (b) => notify('console', { plugin: null, plugin_name: null, id: null, stream: 'stderr', text: b.toString('utf8'), uncaptured: true }));
  return w;
}

function prepareSpare() {
  if (spare || shuttingDown) return;
  spare = bootWorker();
  spare.unref(); // a spare never keeps the runner alive
  spare.on('error', () => { spare = null; });
  spare.on('exit', () => { spare = null; });
}

function startWorker(path, timeoutMs) {
  // -> Promise<{ok:true, result} | {ok:false, stage, error}>, the worker ready or gone.
  const gen = ++generation;
  let w = spare;
  spare = null;
  if (w) { w.removeAllListeners('error'); w.removeAllListeners('exit'); w.ref(); } else { w = bootWorker(); }
  worker = w;
  heartbeat = new Float64Array(new SharedArrayBuffer(8));
  w.postMessage({ op: 'load', path, heartbeat: heartbeat.buffer });
  return new Promise((resolveLoad) => {
    let settled = false;
    const done = (v) => { if (!settled) { settled = true; clearTimeout(timer); resolveLoad(v); } };
    const timer = setTimeout(() => {
      done({ ok: false, stage: 'import', error: { name: 'TimeoutError', message: `module did not finish loading within ${timeoutMs} ms`, stack: null } });
      if (gen === generation) w.terminate();
    }, timeoutMs);
    w.on('message', (m) => {
      if (gen !== generation) return;
      if (m.op === 'loaded') done({ ok: true, result: m.result });
      else if (m.op === 'load_failed') done({ ok: false, stage: m.stage, error: m.error });
      else onWorkerMessage(m);
    });
    w.on('error', (e) => {
      // An uncaught error that escaped the worker's own handlers: the worker is gone.
      if (gen !== generation) return;
      done({ ok: false, stage: 'import', error: { name: e.name, message: e.message, stack: e.stack ?? null } });
      onWorkerGone(gen, `worker error: ${e.message}`);
    });
    w.on('exit', (code) => {
      if (gen !== generation) return;
      done({ ok: false, stage: 'import', error: { name: 'WorkerExit', message: `module exited the worker (code ${code}) while loading`, stack: null } });
      onWorkerGone(gen, `plugin worker exited with code ${code}`);
    });
  });
}

function onWorkerMessage(m) {
  switch (m.op) {
    case 'console': notify('console', { plugin: m.plugin, plugin_name: m.plugin_name, id: m.id, stream: m.stream, text: m.text }); return;
    case 'emit': notify('emit', { plugin: m.plugin, plugin_name: m.plugin_name, id: m.id, args: m.args }); return;
    case 'log': notify('log', { plugin: m.plugin, plugin_name: m.plugin_name, id: m.id, level: m.level, text: m.text, args: m.args }); return;
    case 'uncaught': notify('uncaught', { plugin: m.plugin, plugin_name: m.plugin_name, id: m.id, error: m.error }); return;
    case 'error': {
      const f = takeInflight(m.id);
      if (f) fail(m.id, m.code, m.message, m.data);
      maybeExitAfterEof();
      return;
    }
    case 'result': {
      const f = takeInflight(m.id);
      if (!f) return;
      const out = { outcome: m.outcome };
      if (m.outcome === 'returned') out.value = m.value;
      if (m.outcome === 'threw') out.error = m.error;
      if (m.mutated_input !== undefined) out.mutated_input = m.mutated_input;
      out.elapsed_ms = round(performance.now() - f.t0);
      if (m.guest_ms !== undefined) out.guest_ms = round(m.guest_ms);
      out.restarted = false;
      reply(m.id, out);
      maybeExitAfterEof();
      return;
    }
    default: diag(`unexpected worker message ${JSON.stringify(m.op)}`);
  }
}

function takeInflight(id) {
  const f = inflight.get(id);
  if (!f) return null;
  inflight.delete(id);
  clearTimeout(f.timer);
  return f;
}

// The worker died outside a deadline (process.exit in a plugin, a fatal error): every invoke in flight
// ends as `threw` with a WorkerExit error, and the module is imported again in a fresh worker.
function onWorkerGone(gen, why) {
  if (state !== 'loaded' || gen !== generation) return;
  diag(why);
  restart({ outcome: 'threw', error: { name: 'WorkerExit', message: why, stack: null } });
}

// Stop the worker, import the module again, then answer every invoke that was in flight on the old worker
// with `ending` (timeout or threw), `restarted: true`.
let restartVictims = []; // invokes waiting for a restart to finish (answered by shutdown if it comes first)
async function restart(ending) {
  const victims = [...inflight.entries()];
  restartVictims.push(...victims);
  inflight.clear();
  const stoppedAt = performance.now();
  for (const [, f] of victims) clearTimeout(f.timer);
  const old = worker;
  state = 'restarting';
  generation++; // silence the old worker at once
  if (old) old.terminate().catch(() => {});
  const t0 = performance.now();
  const r = await startWorker(modulePath, loadTimeoutMs);
  const restartMs = round(performance.now() - t0);
  if (r.ok) {
    state = 'loaded';
  } else {
    state = 'failed';
    diag(`re-import failed (${r.stage}): ${r.error.message}`);
  }
  if (shuttingDown) return;
  restartVictims = restartVictims.filter((v) => !victims.includes(v));
  for (const [id, f] of victims) {
    const out = { ...ending, elapsed_ms: round(stoppedAt - f.t0), restarted: r.ok, restart_ms: restartMs };
    if (!r.ok) out.restart_error = { stage: r.stage, ...r.error };
    reply(id, out);
  }
  while (queued.length) dispatchInvoke(queued.shift());
  setImmediate(prepareSpare);
  maybeExitAfterEof();
}

function dispatchInvoke(q) {
  const { id, params } = q;
  if (state === 'restarting' || state === 'loading') { queued.push(q); return; }
  if (state !== 'loaded') return fail(id, -32011, state === 'failed' ? 'plugin module failed to re-import after a restart' : 'no plugin module loaded');
  if (params.plugin >= pluginCount) return fail(id, -32013, `no plugin at index ${params.plugin}`, { plugins: pluginCount });
  const gen = generation;
  const f = { t0: performance.now(), gen, timer: null };
  const check = () => {
    if (gen !== generation || !inflight.has(id)) return;
    if (!isStuck()) { f.timer = setTimeout(check, STUCK_GRACE_MS); return; } // alive: its own timer will answer
    diag(`invoke ${id} blocked its worker past ${params.timeout_ms} ms; terminating and re-importing`);
    restart({ outcome: 'timeout' });
  };
  f.timer = setTimeout(check, params.timeout_ms + STUCK_GRACE_MS);
  inflight.set(id, f);
  worker.postMessage({ op: 'invoke', id, plugin: params.plugin, target: params.target, name: params.name,
    input: params.input, ctx: params.ctx, timeout_ms: params.timeout_ms });
}

// --- requests -----------------------------------------------------------------------------------------
function isPlainObject(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }

async function onLoad(id, params) {
  if (!isPlainObject(params) || typeof params.path !== 'string' || params.path === '') {
    return fail(id, -32602, 'invalid params: load needs {"path": "<module file>"}', { field: 'path' });
  }
  if (params.timeout_ms !== undefined && !(Number.isInteger(params.timeout_ms) && params.timeout_ms > 0 && params.timeout_ms <= MAX_TIMEOUT_MS)) {
    return fail(id, -32602, 'invalid params: timeout_ms must be a positive integer of milliseconds', { field: 'timeout_ms' });
  }
  if (state === 'loading' || state === 'restarting') return fail(id, -32010, 'busy: a load is already in progress');
  const path = resolvePath(params.path);
  try {
    accessSync(path, fsConstants.R_OK);
    if (!statSync(path).isFile()) throw new Error(`${path} is not a regular file`);
  } catch (e) {
    return fail(id, -32012, `load failed: cannot read ${path}: ${e.message}`, { stage: 'read', name: e.name, message: e.message });
  }
  // A new load replaces the module; whatever was in flight on the old one is answered now.
  for (const [iid, f] of inflight) { clearTimeout(f.timer); fail(iid, -32011, 'plugin module replaced by a new load'); }
  inflight.clear();
  if (worker) { generation++; worker.terminate().catch(() => {}); worker = null; }
  state = 'loading';
  modulePath = path;
  loadTimeoutMs = params.timeout_ms ?? DEFAULT_LOAD_TIMEOUT_MS;
  const t0 = performance.now();
  const r = await startWorker(path, loadTimeoutMs);
  if (!r.ok) {
    state = 'empty';
    generation++;
    if (worker) worker.terminate().catch(() => {});
    worker = null;
    fail(id, -32012, `load failed (${r.stage}): ${r.error.message}`, { stage: r.stage, ...r.error });
  } else {
    state = 'loaded';
    pluginCount = r.result.plugins.length;
    reply(id, { ...r.result, path, load_ms: round(performance.now() - t0), import_ms: round(r.result.load_ms) });
  }
  setImmediate(prepareSpare);
  // Invokes pipelined behind the load run now (or are refused: nothing loaded).
  while (queued.length) dispatchInvoke(queued.shift());
  maybeExitAfterEof();
}

function onInvoke(id, params) {
  if (!isPlainObject(params)) return fail(id, -32602, 'invalid params: invoke needs an object', { field: null });
  const bad = (field, why) => fail(id, -32602, `invalid params: ${field} ${why}`, { field });
  if (!Number.isInteger(params.plugin) || params.plugin < 0) return bad('plugin', 'must be a plugin index (integer >= 0)');
  if (typeof params.target !== 'string' || !TARGETS.has(params.target)) return bad('target', `must be one of ${[...TARGETS].join(', ')}`);
  if (NAMED_TARGETS.has(params.target)) {
    if (typeof params.name !== 'string' || params.name === '') return bad('name', `is required (a non-empty string) for target "${params.target}"`);
  } else if (params.name !== undefined && typeof params.name !== 'string') return bad('name', 'must be a string');
  if (!isPlainObject(params.ctx)) return bad('ctx', 'must be an object {runId, agentName, hookName, state, depth, …}');
  if (!Number.isInteger(params.timeout_ms) || params.timeout_ms <= 0 || params.timeout_ms > MAX_TIMEOUT_MS) {
    return bad('timeout_ms', 'must be a positive integer of milliseconds (<= 2147483647)');
  }
  if (inflight.has(id) || queued.some((q) => q.id === id)) return fail(id, -32600, `request id ${id} is already in flight`);
  dispatchInvoke({ id, params });
}

let shuttingDown = false;
function shutdown(code) {
  if (shuttingDown) return;
  shuttingDown = true;
  if (worker) worker.terminate().catch(() => {});
  if (spare) spare.terminate().catch(() => {});
  process.exit(code);
}

function onLine(line) {
  if (line.trim() === '') return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (e) {
    return fail(null, -32700, `parse error: ${e.message}`);
  }
  if (Array.isArray(msg)) return fail(null, -32600, 'invalid request: batches are not supported (one message per line)');
  if (!isPlainObject(msg)) return fail(null, -32600, 'invalid request: a message must be a JSON object');
  const hasId = Object.prototype.hasOwnProperty.call(msg, 'id');
  const idOk = hasId && (msg.id === null || typeof msg.id === 'string' || typeof msg.id === 'number');
  const echoId = idOk ? msg.id : null;
  if (msg.jsonrpc !== '2.0') return fail(echoId, -32600, 'invalid request: "jsonrpc" must be "2.0"');
  if (!Object.prototype.hasOwnProperty.call(msg, 'method')) {
    // A response: this runner sends no requests of its own, so there is nothing it could answer.
    if (hasId && ('result' in msg || 'error' in msg)) return diag(`ignoring a response to unknown request ${JSON.stringify(msg.id)}`);
    return fail(echoId, -32600, 'invalid request: no "method"');
  }
  if (typeof msg.method !== 'string') return fail(echoId, -32600, 'invalid request: "method" must be a string');
  if (!hasId) return diag(`ignoring notification ${JSON.stringify(msg.method)}`);
  if (!Number.isInteger(msg.id)) return fail(echoId, -32600, 'invalid request: conform sends integer ids (guest-protocol.md)');
  if (msg.params !== undefined && !isPlainObject(msg.params) && !Array.isArray(msg.params)) {
    return fail(msg.id, -32600, 'invalid request: "params" must be an object');
  }
  const params = msg.params;
  switch (msg.method) {
    case 'load': onLoad(msg.id, params).catch((e) => fail(msg.id, -32603, `internal error: ${e.message}`)); return;
    case 'invoke': onInvoke(msg.id, params); return;
    case 'shutdown':
      // Every request is answered exactly once: what is still in flight is answered before {}.
      for (const [iid, f] of inflight) { clearTimeout(f.timer); fail(iid, -32011, 'runner shutting down'); }
      inflight.clear();
      for (const q of queued.splice(0)) fail(q.id, -32011, 'runner shutting down');
      for (const [iid] of restartVictims.splice(0)) fail(iid, -32011, 'runner shutting down');
      process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: {} }) + '\n', () => shutdown(0));
      return;
    default: return fail(msg.id, -32601, `method not found: ${msg.method}`);
  }
}

// --- stdin framing ------------------------------------------------------------------------------------
let pending = [];
let pendingBytes = 0;
let discarding = false;
process.stdin.on('data', (chunk) => {
  let start = 0;
  for (;;) {
    const nl = chunk.indexOf(10, start);
    if (nl === -1) break;
    const piece = chunk.subarray(start, nl);
    start = nl + 1;
    if (discarding) { discarding = false; pending = []; pendingBytes = 0; continue; }
    const line = pending.length ? Buffer.concat([...pending, piece]).toString('utf8') : piece.toString('utf8');
    pending = []; pendingBytes = 0;
    onLine(line);
  }
  if (start < chunk.length && !discarding) {
    const rest = chunk.subarray(start);
    pendingBytes += rest.length;
    if (pendingBytes > MAX_LINE_BYTES) {
      discarding = true; pending = []; pendingBytes = 0;
      fail(null, -32600, `invalid request: line longer than ${MAX_LINE_BYTES} bytes refused`);
    } else {
      pending.push(Buffer.from(rest));
    }
  }
});
// EOF: requests already received are still answered, but the runner is gone within EOF_EXIT_MS.
let eof = false;
function maybeExitAfterEof() {
  if (eof && state !== 'loading' && state !== 'restarting' && inflight.size === 0 && queued.length === 0) shutdown(0);
}
function onEof() {
  if (eof) return;
  eof = true;
  setTimeout(() => shutdown(0), EOF_EXIT_MS).unref();
  maybeExitAfterEof();
}
process.stdin.on('end', onEof);
process.stdin.on('error', onEof);
process.stdout.on('error', () => shutdown(0)); // conform closed our stdout: nobody to answer
