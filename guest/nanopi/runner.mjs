#!/usr/bin/env node
// conform's guest runner for nanopi WASM component plugins (docs/guest-protocol.md, "nanopi runner";
// exact fields in guest/nanopi/README.md). Newline-delimited JSON-RPC 2.0 on stdio: conform asks
// (`load`, `call`, `reset`, `shutdown`, integer ids); the runner forwards the guest's host imports
// back to conform as requests with string ids "h1", "h2", … and relays the answers.
//
// Mechanism only: it loads, calls, times, captures and encodes. Every grant, limit, refusal string,
// retry and verdict lives in C++ (mock_engine/nanopi/). The guest runs in worker.mjs on a
// worker_thread; a guest past its budget is stopped by terminating that worker and starting a fresh
// one (NANOPI-HOST.md §4: V8 has no epoch interruption).
import { readFile, mkdtemp, writeFile } from 'node:fs/promises';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createInterface } from 'node:readline';
import { format } from 'node:util';
import v8 from 'node:v8';

// Baseline (Liftoff) wasm code only, set before anything is compiled. With V8's default tier-up, the
// optimizing compiler works on jco's large bindings generator in background threads, and process exit
// waits for those jobs: measured here 0.7-1.9 s from EOF to exit (contract: 1 s) and a load twice as
// slow on a busy 2-core machine; with Liftoff only, 40-70 ms and half the load time. The price: guest
// code runs unoptimized, i.e. slower than under nanopi's wasmtime (Cranelift), so a guest close to its
// budget here is closer than in nanopi (README.md "Timing").
v8.setFlagsFromString('--liftoff-only');

// stdout carries protocol lines and nothing else, ever (docs/guest-protocol.md "Envelope"): our own
// diagnostics, and anything a dependency logs, go to stderr.
const protocolOut = process.stdout;
for (const k of ['log', 'info', 'debug', 'warn', 'error', 'trace']) {
  console[k] = (...a) => process.stderr.write(`nanopi-runner: ${format(...a)}\n`);
}

// --- limits (each one cites where it comes from) -----------------------------------------------
// docs/guest-protocol.md "Every wait has a deadline": an h* request unanswered for 30 s is answered
// to the guest as the in-band failure of that import.
// CONFORM_NANOPI_IMPORT_TIMEOUT_MS overrides it for the runner's own tests only.
const IMPORT_ANSWER_TIMEOUT_MS = Number(process.env.CONFORM_NANOPI_IMPORT_TIMEOUT_MS) > 0
  ? Number(process.env.CONFORM_NANOPI_IMPORT_TIMEOUT_MS) : 30_000;
const NO_ANSWER = 'error: host did not answer';
// A budget above one hour is a caller bug, not a plugin property (nanopi's largest is 30 s: NP-26).
const MAX_BUDGET_MS = 3_600_000;
// A single JSON-RPC line larger than this is refused (-32600) instead of being buffered without end.
const MAX_LINE_BYTES = 64 * 1024 * 1024;
// Components larger than this are refused at the `read` stage (nanopi's plugins are KBs to a few MBs).
const MAX_COMPONENT_BYTES = 256 * 1024 * 1024;
// EOF on stdin: exit within 1 s (docs/guest-protocol.md); worker termination gets this long at most.
const EXIT_GRACE_MS = 800;

// The nine root imports nanopi's loader links (NANOPI-HOST.md §1); anything else is unsupported.
const HOST_IMPORTS = new Set(['host-log', 'host-fs-read', 'host-http-get', 'host-store-get',
  'host-store-set', 'host-notify', 'host-set-context', 'host-call-tool', 'host-send-user-message']);
// Arity of the six nanopi exports (all parameters are strings), to refuse a malformed `call` with
// -32602 instead of letting jco's lowering throw inside the guest call.
const EXPORT_ARITY = { 'list-tools': 0, 'execute-tool': 2, 'list-commands': 0,
  'execute-command': 2, 'list-events': 0, 'handle-event': 2 };

const ERR = { parse: -32700, invalid: -32600, method: -32601, params: -32602, internal: -32603,
  busy: -32010, notLoaded: -32011, loadFailed: -32012, noExport: -32013 };

function send(obj) { protocolOut.write(`${JSON.stringify({ jsonrpc: '2.0', ...obj })}\n`); }
function reply(id, result) { send({ id, result }); }
function fail(id, code, message, data) { send({ id, error: data === undefined ? { code, message } : { code, message, data } }); }
const ms = (x) => Math.round(x * 1000) / 1000;

// --- component state ------------------------------------------------------------------------------
let component = null; // {dir, jsUrl, modules, exportsJs: Map kebab→js, instantiated, path}
let worker = null;    // {w, port, signal, ready: Promise}
let busy = false;     // a load, call or reset is running
let current = null;   // the running call: {seq, resolve, t0, importMs, importT0, budget, timer}
let seqCounter = 0;
let hostIdCounter = 0;
const pendingImports = new Map(); // "h7" → {settle}
let tempDirs = [];

function kebab(jsName) { return jsName.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`); }

function inferWorld(exps) {
  const has = (n) => exps.includes(n);
  const base = has('list-tools') && has('execute-tool');
  const cmds = base && has('list-commands') && has('execute-command');
  if (cmds && has('list-events') && has('handle-event')) return 'extension-events';
  if (cmds) return 'extension-commands';
  if (base) return 'extension';
  return null;
}

// jco's bindings generator, loaded on first use. The package's main entry also pulls oxc-minify, whose
// native binding a slim (--omit=optional) install does not have, so the generator is used directly.
let bindgen = null;
function getBindgen() {
  if (!bindgen) {
    bindgen = import('@bytecodealliance/jco-transpile/component').then(async (m) => { await m.$init; return m; });
    bindgen.catch(() => { bindgen = null; }); // a later load retries (and reports the error)
  }
  return bindgen;
}

// The options of jco's generator (what transpileBytes would pass for instantiation 'sync', no WASI shim).
const GEN_OPTIONS = { name: 'component', map: [], instantiation: { tag: 'sync' }, noTypescript: true,
  noNodejsCompat: false, tlaCompat: false, base64Cutoff: 0, validLiftingOptimization: false,
  tracing: false, noComponentErrorWrapping: true, noNamespacedExports: false, multiMemory: false };

// A per-user on-disk cache of generated bindings, keyed by the component's bytes, jco's version and
// these options: each conform case starts a fresh runner, and a kill-rate matrix loads the same
// components again and again; a hit skips the generator (its 3.5 MB wasm and 0.03-1.5 s per load).
// CONFORM_NANOPI_CACHE=off disables it, or names another folder. At most CACHE_MAX_ENTRIES entries
// (a fuzzer loading thousands of mutants must not fill the disk): above that nothing more is added.
const CACHE_MAX_ENTRIES = 256;
let jcoVersion = 'unknown';
try {
  jcoVersion = JSON.parse(readFileSync(new URL('./node_modules/@bytecodealliance/jco-transpile/package.json', import.meta.url), 'utf8')).version;
} catch { /* the load reports the missing package */ }
const GEN_VERSION = `jco-transpile@${jcoVersion};${JSON.stringify(GEN_OPTIONS)}`;
let cacheRoot = process.env.CONFORM_NANOPI_CACHE === 'off' ? null
  : (process.env.CONFORM_NANOPI_CACHE || join(tmpdir(), `conform-nanopi-cache-${typeof process.getuid === 'function' ? process.getuid() : 'user'}`));

function cacheUsable() {
  if (!cacheRoot) return false;
  try {
    mkdirSync(cacheRoot, { recursive: true, mode: 0o700 });
    // Only a folder of our own: another user's could hand us bindings of their choosing.
    const st = statSync(cacheRoot);
    if (typeof process.getuid === 'function' && st.uid !== process.getuid()) throw new Error('owned by another user');
    return true;
  } catch (e) {
    console.error(`bindings cache ${cacheRoot} disabled: ${e.message}`);
    cacheRoot = null;
    return false;
  }
}

function cacheGet(key) {
  if (!cacheRoot) return null;
  const dir = join(cacheRoot, key);
  try {
    const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8'));
    const files = meta.files.map((name) => [name, name.endsWith('.wasm') ? readFileSync(join(dir, name)) : null]);
    return { imports: meta.imports, exports: meta.exports, files, dir };
  } catch { return null; } // absent (or half-removed): generate
}

function cachePut(key, gen) {
  if (!cacheUsable()) return;
  let tmp = null;
  try {
    if (readdirSync(cacheRoot).length >= CACHE_MAX_ENTRIES) return;
    tmp = mkdtempSync(join(cacheRoot, '.tmp-'));
    writeFileSync(join(tmp, 'package.json'), '{"type":"module"}\n');
    for (const [name, data] of gen.files) writeFileSync(join(tmp, name), data);
    // meta.json last: an entry without it is never used.
    writeFileSync(join(tmp, 'meta.json'), JSON.stringify({ imports: gen.imports, exports: gen.exports, files: gen.files.map(([n]) => n) }));
    renameSync(tmp, join(cacheRoot, key));
    tmp = null;
  } catch { /* another runner stored the same entry first, or the disk is full: not an error */ } finally {
    if (tmp) { try { rmSync(tmp, { recursive: true, force: true }); } catch { /* best effort */ } }
  }
}

// --- the worker -----------------------------------------------------------------------------------
function spawnWorker() {
  const signal = new SharedArrayBuffer(4);
  const { port1, port2 } = new MessageChannel();
  const w = new Worker(new URL('./worker.mjs', import.meta.url), {
    workerData: { jsUrl: component.jsUrl, modules: component.modules, answerPort: port2, signal },
    transferList: [port2], stdout: true, stderr: true });
  const rec = { w, port: port1, signal: new Int32Array(signal), dead: false };
  // Anything the guest side prints is captured and forwarded, never written to our stdout.
  for (const stream of ['stdout', 'stderr']) {
    w[stream].setEncoding('utf8');
    w[stream].on('data', (text) => send({ method: 'console', params: { stream, text } }));
  }
  rec.ready = new Promise((resolve) => {
    const onMsg = (m) => { if (m.type === 'ready') { w.off('message', onMsg); resolve(m); } };
    w.on('message', onMsg);
    w.once('error', (e) => resolve({ type: 'ready', stage: 'instantiate', error: `worker error: ${e.message}` }));
    w.once('exit', (code) => resolve({ type: 'ready', stage: 'instantiate', error: `worker exited (${code})` }));
  });
  w.on('message', (m) => onWorkerMessage(rec, m));
  w.on('error', (e) => onWorkerGone(rec, `worker error: ${e && e.message}`));
  w.on('exit', (code) => onWorkerGone(rec, `worker exited with code ${code}`));
  return rec;
}

async function killWorker() {
  if (!worker) return;
  const rec = worker;
  worker = null;
  rec.dead = true;
  rec.port.close();
  await rec.w.terminate();
}

// A hot spare: a second worker with a fresh, never-called instance of the same component, so that a
// rebuild after a timeout is a swap (terminate ~5 ms) instead of a worker start + instantiate
// (60-300 ms, NANOPI-HOST.md §4) — the stop must land within budget + 250 ms (issue 9).
let spare = null;
function startSpare() {
  if (component && component.instantiated && !spare && !exiting) spare = spawnWorker();
}
async function killSpare() {
  if (!spare) return;
  const rec = spare;
  spare = null;
  rec.dead = true;
  rec.port.close();
  await rec.w.terminate();
}

// A fresh instance in a new worker (the spare when there is one); resolves to {ok, ms, ready}.
async function respawn() {
  const t0 = performance.now();
  await killWorker();
  let rec = spare;
  spare = null;
  if (!rec || rec.dead) rec = spawnWorker();
  const ready = await rec.ready;
  const ok = !ready.error && !rec.dead;
  if (ok) {
    worker = rec;
    startSpare();
  } else {
    rec.dead = true;
    rec.port.close();
    await rec.w.terminate();
  }
  return { ok, ms: performance.now() - t0, ready: ok ? ready : { stage: ready.stage || 'instantiate', error: ready.error || 'worker died' } };
}

function onWorkerGone(rec, why) {
  if (rec.dead) return;
  rec.dead = true;
  if (spare === rec) { spare = null; console.error(`spare worker gone: ${why}`); return; }
  if (worker === rec) worker = null;
  // The guest side died under a running call (e.g. out of memory): that call ends as a trap.
  if (current) current.finish({ outcome: 'trap', message: why, guest_ms: guestMs(), rebuilt: false, died: true });
}

function guestMs() {
  if (!current) return 0;
  const now = performance.now();
  const inImport = current.importT0 === null ? 0 : now - current.importT0;
  return now - current.t0 - current.importMs - inImport;
}

function armBudget() {
  clearTimeout(current.timer);
  const left = current.budget - guestMs();
  current.timer = setTimeout(checkBudget, Math.max(0, left));
}

function checkBudget() {
  if (!current || current.importT0 !== null) return; // paused while conform answers an import
  if (guestMs() >= current.budget) current.finish({ outcome: 'timeout', guest_ms: guestMs(), rebuilt: true, timedOut: true });
  else armBudget();
}

function onWorkerMessage(rec, m) {
  if (rec !== worker || !current) return;
  if (m.type === 'result' && m.seq === current.seq) {
    current.finish(m);
  } else if (m.type === 'import') {
    // Guest budget paused from here until the answer is handed to the guest (NP-27: guest code only).
    clearTimeout(current.timer);
    current.importT0 = performance.now();
    const id = `h${++hostIdCounter}`;
    const call = current;
    let settled = false;
    const settle = (value) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      pendingImports.delete(id);
      if (rec.dead || call !== current) return;
      rec.port.postMessage({ value });
      Atomics.store(rec.signal, 0, 1);
      Atomics.notify(rec.signal, 0);
      call.importMs += performance.now() - call.importT0;
      call.importT0 = null;
      call.imports += 1;
      armBudget();
    };
    const deadline = setTimeout(() => {
      console.error(`no answer to ${id} (${m.name}) within ${IMPORT_ANSWER_TIMEOUT_MS} ms`);
      settle(m.name === 'host-log' ? null : NO_ANSWER);
    }, IMPORT_ANSWER_TIMEOUT_MS);
    pendingImports.set(id, { settle, name: m.name });
    send({ id, method: 'import', params: { name: m.name, args: m.args } });
  }
}

// conform's answer to an h* request: handled at once, never queued behind the call it unblocks
// (NANOPI-HOST.md §5.5).
function onHostAnswer(msg) {
  const p = pendingImports.get(msg.id);
  if (!p) { console.error(`answer to unknown or expired request ${JSON.stringify(msg.id)} ignored`); return; }
  let value;
  if (msg.error !== undefined) {
    value = `${NO_ANSWER} (${msg.error && msg.error.message})`;
  } else if (p.name === 'host-log') {
    value = null;
  } else if (msg.result && typeof msg.result.value === 'string') {
    value = msg.result.value;
  } else {
    // The guest must get a string; a malformed answer is conform's bug, said loudly on stderr.
    console.error(`answer to ${msg.id} (${p.name}) has no string "value": ${JSON.stringify(msg.result)}`);
    value = `${NO_ANSWER} (malformed answer)`;
  }
  p.settle(value);
}

// --- methods --------------------------------------------------------------------------------------
async function doLoad(params) {
  if (typeof params.path !== 'string' || params.path === '') return { code: ERR.params, message: 'load: params.path must be a non-empty string' };
  const t0 = performance.now();
  const failLoad = (stage, e) => ({ code: ERR.loadFailed, message: `load failed at ${stage}: ${e && e.message ? e.message : e}`, data: { stage, path: params.path } });
  await killWorker();
  await killSpare();
  if (component && component.ownDir) dropDir(component.dir); // a long session (fuzzing) loads many components
  component = null;
  let bytes;
  try {
    bytes = await readFile(params.path);
  } catch (e) { return failLoad('read', e); }
  if (bytes.length > MAX_COMPONENT_BYTES) return failLoad('read', `file is ${bytes.length} bytes, over the ${MAX_COMPONENT_BYTES}-byte limit`);
  // Header: "\0asm", then version + layer. A core module (layer 0) is not a component; nanopi's
  // Component::from_binary refuses both that and non-wasm at its compile step (NANOPI-HOST.md §2).
  const magic = bytes.length >= 8 && bytes[0] === 0 && bytes[1] === 0x61 && bytes[2] === 0x73 && bytes[3] === 0x6d;
  if (!magic) return failLoad('compile', 'not a WebAssembly binary (no \\0asm header)');
  if (bytes[6] === 0 && bytes[7] === 0) return failLoad('compile', 'a core WebAssembly module, not a component');
  const tt = performance.now();
  const key = createHash('sha256').update(GEN_VERSION).update(bytes).digest('hex');
  let gen = cacheGet(key);
  const cached = gen !== null;
  if (!cached) {
    try {
      const bg = await getBindgen();
      gen = bg.generate(bytes, GEN_OPTIONS);
    } catch (e) { return failLoad('transpile', e); }
  }
  const transpile_ms = performance.now() - tt;
  const imports = gen.imports.slice();
  const exportsJs = new Map();
  for (const [jsName, kind] of gen.exports) exportsJs.set(kind === 'function' ? kebab(jsName) : jsName, jsName);
  const exps = [...exportsJs.keys()];
  const unsupported = imports.filter((n) => !HOST_IMPORTS.has(n));
  const modules = {};
  let dir = cached ? gen.dir : null;
  try {
    if (!cached) {
      dir = await mkdtemp(join(tmpdir(), 'conform-nanopi-'));
      tempDirs.push(dir);
      // The generated bindings are ES modules: the folder must say so (NANOPI-HOST.md §5.3).
      await writeFile(join(dir, 'package.json'), '{"type":"module"}\n');
      for (const [name, data] of gen.files) if (name.endsWith('.js')) await writeFile(join(dir, name), data);
    }
    for (const [name, data] of gen.files) if (name.endsWith('.wasm')) modules[name] = await WebAssembly.compile(data);
  } catch (e) { if (dir && !cached) dropDir(dir); return failLoad('compile', e); }
  if (!cached) cachePut(key, gen);
  component = { dir, ownDir: !cached, jsUrl: pathToFileURL(join(dir, 'component.js')).href, modules, exportsJs,
    instantiated: false, path: params.path, unsupported };
  const result = { world: inferWorld(exps), exports: exps, imports, unsupported_imports: unsupported,
    instantiated: false, load_ms: 0, transpile_ms: ms(transpile_ms), cached, instantiate_ms: null };
  if (unsupported.length === 0) {
    // Nothing links WASI in nanopi either: with unsupported imports the runner does not try.
    // The first instance and the hot spare start together (two cores), so the first timeout already
    // finds a ready spare.
    worker = spawnWorker();
    spare = spawnWorker();
    const [ready] = await Promise.all([worker.ready, spare.ready]);
    if (ready.error) {
      await killSpare();
      await killWorker();
      if (component.ownDir) dropDir(component.dir);
      component = null;
      return failLoad(ready.stage, ready.error);
    }
    component.instantiated = true;
    result.instantiated = true;
    if (spare && spare.dead) spare = null;
    startSpare();
    result.instantiate_ms = ms(ready.instantiate_ms);
  }
  if (params.wit === true) {
    try {
      const tools = await import('@bytecodealliance/jco-transpile/wasm-tools');
      result.wit = await tools.componentWit(bytes);
    } catch (e) { result.wit = null; result.wit_error = String(e && e.message); }
  }
  result.load_ms = ms(performance.now() - t0);
  return { result };
}

async function doCall(params) {
  if (!component) return { code: ERR.notLoaded, message: 'call: no component loaded' };
  if (!component.instantiated || !worker) return { code: ERR.notLoaded, message: 'call: the component is not instantiated', data: { reason: 'unsupported imports or failed rebuild' } };
  const name = params.export;
  if (typeof name !== 'string') return { code: ERR.params, message: 'call: params.export must be a string' };
  if (!component.exportsJs.has(name)) return { code: ERR.noExport, message: `call: the component has no export "${name}"`, data: { exports: [...component.exportsJs.keys()] } };
  const args = params.args === undefined ? [] : params.args;
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string' || typeof a === 'number')) return { code: ERR.params, message: 'call: params.args must be an array of strings/numbers' };
  if (name in EXPORT_ARITY && args.length !== EXPORT_ARITY[name]) return { code: ERR.params, message: `call: ${name} takes ${EXPORT_ARITY[name]} argument(s), got ${args.length}` };
  if (name in EXPORT_ARITY && !args.every((a) => typeof a === 'string')) return { code: ERR.params, message: `call: ${name} takes string arguments` };
  const budget = params.budget_ms;
  if (typeof budget !== 'number' || !(budget > 0) || budget > MAX_BUDGET_MS) return { code: ERR.params, message: `call: params.budget_ms must be a number in (0, ${MAX_BUDGET_MS}]` };

  const rec = worker;
  const seq = ++seqCounter;
  const t0 = performance.now();
  const outcome = await new Promise((resolve) => {
    current = { seq, t0, importMs: 0, importT0: null, imports: 0, budget, timer: null,
      finish: (m) => { if (current && current.seq === seq) { clearTimeout(current.timer); const c = current; current = null; resolve({ m, imports: c.imports }); } } };
    armBudget();
    rec.w.postMessage({ type: 'call', seq, name: component.exportsJs.get(name), args });
  });
  const { m } = outcome;
  // Imports still pending belong to a guest that no longer runs: a late answer is ignored.
  for (const [id, p] of pendingImports) { p.settle(null); pendingImports.delete(id); }
  const res = { outcome: m.outcome };
  if (m.outcome === 'ok') res.value = m.value;
  if (m.outcome === 'trap') res.message = m.message;
  res.guest_ms = ms(m.guest_ms);
  res.elapsed_ms = 0;
  res.imports = outcome.imports;
  if (m.timedOut || m.died || m.rebuild_error) {
    // Past the budget (or the guest side is gone): stop the worker, build a fresh instance, answer.
    if (m.rebuild_error) console.error(`in-worker rebuild failed: ${m.rebuild_error}`);
    const r = await respawn();
    res.rebuilt = r.ok;
    res.rebuild_ms = ms(r.ms);
    if (!r.ok) { res.rebuild_error = r.ready.error; component.instantiated = false; }
  } else {
    res.rebuilt = m.rebuilt;
    if (m.rebuilt) res.rebuild_ms = ms(m.rebuild_ms);
  }
  res.elapsed_ms = ms(performance.now() - t0);
  return { result: res };
}

async function doReset() {
  if (!component) return { code: ERR.notLoaded, message: 'reset: no component loaded' };
  if (component.unsupported.length > 0) return { code: ERR.notLoaded, message: 'reset: the component has unsupported imports and is never instantiated', data: { unsupported_imports: component.unsupported } };
  const r = await respawn();
  if (!r.ok) { component.instantiated = false; return { code: ERR.loadFailed, message: `reset failed at ${r.ready.stage}: ${r.ready.error}`, data: { stage: r.ready.stage } }; }
  component.instantiated = true;
  return { result: { rebuild_ms: ms(r.ms) } };
}

// --- exit -----------------------------------------------------------------------------------------
let exiting = false;
function exitNow(code) {
  if (exiting) return;
  exiting = true;
  // No waiting for workers to wind down: process.exit ends them. Only the last protocol line is let
  // drain, with a hard deadline (EOF → exit within 1 s, docs/guest-protocol.md).
  const hard = setTimeout(() => { cleanup(); process.exit(code); }, EXIT_GRACE_MS);
  hard.unref();
  protocolOut.write('', () => { cleanup(); process.exit(code); });
}
function dropDir(dir) {
  tempDirs = tempDirs.filter((d) => d !== dir);
  try { rmSync(dir, { recursive: true, force: true }); } catch { /* best effort */ }
}
function cleanup() {
  for (const d of tempDirs) { try { rmSync(d, { recursive: true, force: true }); } catch { /* best effort */ } }
  tempDirs = [];
}

// --- dispatch -------------------------------------------------------------------------------------
async function runExclusive(id, fn) {
  if (busy) { fail(id, ERR.busy, 'busy: a guest call is already running'); return; }
  busy = true;
  try {
    const r = await fn();
    if (r.result !== undefined) reply(id, r.result);
    else fail(id, r.code, r.message, r.data);
  } catch (e) {
    console.error(`internal error: ${e && e.stack ? e.stack : e}`);
    fail(id, ERR.internal, `runner internal error: ${e && e.message}`);
  } finally {
    busy = false;
  }
}

function onLine(line) {
  if (line.length === 0) return;
  if (line.length > MAX_LINE_BYTES) { fail(null, ERR.invalid, `line over ${MAX_LINE_BYTES} bytes`); return; }
  let msg;
  try { msg = JSON.parse(line); } catch (e) { fail(null, ERR.parse, `parse error: ${e.message}`); return; }
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) { fail(null, ERR.invalid, 'not a JSON-RPC object'); return; }
  const hasId = Object.prototype.hasOwnProperty.call(msg, 'id');
  if (msg.method === undefined && hasId && typeof msg.id === 'string') { onHostAnswer(msg); return; }
  const rid = hasId && (typeof msg.id === 'number' || typeof msg.id === 'string' || msg.id === null) ? msg.id : null;
  if (msg.jsonrpc !== '2.0' || typeof msg.method !== 'string') { fail(rid, ERR.invalid, 'invalid request: needs jsonrpc "2.0" and a string method'); return; }
  if (!hasId) { console.error(`notification ${msg.method} ignored`); return; }
  if (!Number.isInteger(msg.id)) { fail(rid, ERR.invalid, 'invalid request: conform → runner ids are integers'); return; }
  const params = msg.params === undefined ? {} : msg.params;
  if (params === null || typeof params !== 'object' || Array.isArray(params)) { fail(msg.id, ERR.params, 'params must be an object'); return; }
  switch (msg.method) {
    case 'load': runExclusive(msg.id, () => doLoad(params)); break;
    case 'call': runExclusive(msg.id, () => doCall(params)); break;
    case 'reset': runExclusive(msg.id, () => doReset()); break;
    case 'shutdown': reply(msg.id, {}); exitNow(0); break;
    default: fail(msg.id, ERR.method, `method not found: ${msg.method}`);
  }
}

process.on('exit', cleanup);
// Without the bindings cache, warm jco's generator while conform is still starting up (it writes
// nothing: the runner stays silent until its first request); `load` then awaits the same promise.
// With the cache, loads are mostly hits that never need it, and on a 2-core machine the warm-up would
// compete with them for a core.
if (!cacheRoot) getBindgen().catch(() => {});
process.stdout.on('error', () => exitNow(0)); // conform went away
const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', onLine);
rl.on('close', () => exitNow(0));
