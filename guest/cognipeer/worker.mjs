// worker.mjs — the worker_thread that holds one imported Cognipeer plugin module (README.md, "Worker").
//
// Why a worker: a plugin hook that loops synchronously cannot be interrupted on its own thread; the main
// thread (runner.mjs) terminates this worker at the deadline and starts a fresh one. Everything the guest
// prints is captured here (console.*, process.stdout/stderr writes) and posted to the main thread as
// `console` messages, attributed to the invoke in whose async context it happened (AsyncLocalStorage);
// nothing ever reaches the runner's stdout. This file holds no Cognipeer policy: it loads, calls, times
// and encodes.
import { parentPort } from 'node:worker_threads';
import { AsyncLocalStorage } from 'node:async_hooks';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { format } from 'node:util';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { encode, decode, deepFreeze } from './codec.mjs';

const als = new AsyncLocalStorage();
const post = (m) => parentPort.postMessage(m);

function current() {
  const c = als.getStore();
  return c ? { plugin: c.plugin, plugin_name: nameOf(c.plugin), id: c.id } : { plugin: null, plugin_name: null, id: null };
}

// The declared name of plugin `index` when it is a string (notifications carry it for readable reports).
function nameOf(index) {
  if (index === null || index === undefined || index >= plugins.length) return null;
  const r = lookup(plugins[index], 'name');
  return r.present && typeof r.value === 'string' ? r.value : null;
}

// --- output capture -----------------------------------------------------------------------------------
function captureWrite(stream) {
  return function write(chunk, encoding, cb) {
    let text;
    try {
      text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    } catch {
      text = String(chunk);
    }
    post({ op: 'console', ...current(), stream, text });
    const done = typeof encoding === 'function' ? encoding : cb;
    if (typeof done === 'function') queueMicrotask(() => done());
    return true;
  };
}
process.stdout.write = captureWrite('stdout');
process.stderr.write = captureWrite('stderr');

// fd 1 and 2 of a worker are the process's own: fs.writeSync(1, …) would bypass process.stdout and land
// in the runner's JSON-RPC stream. Those writes are captured the same way (named ESM imports of node:fs
// see the patch through syncBuiltinESMExports).
const realWriteSync = fs.writeSync;
const realWrite = fs.write;
const FD_STREAM = { 1: 'stdout', 2: 'stderr' };
fs.writeSync = function writeSync(fd, buffer, ...rest) {
  if (!(fd in FD_STREAM)) return realWriteSync.call(fs, fd, buffer, ...rest);
  const text = typeof buffer === 'string' ? buffer : Buffer.from(buffer.buffer ?? buffer, buffer.byteOffset ?? 0, buffer.byteLength ?? buffer.length).toString('utf8');
  post({ op: 'console', ...current(), stream: FD_STREAM[fd], text });
  return typeof buffer === 'string' ? Buffer.byteLength(buffer) : (buffer.byteLength ?? buffer.length);
};
fs.write = function write(fd, buffer, ...rest) {
  if (!(fd in FD_STREAM)) return realWrite.call(fs, fd, buffer, ...rest);
  const n = fs.writeSync(fd, buffer);
  const cb = rest.find((x) => typeof x === 'function');
  if (cb) queueMicrotask(() => cb(null, n, buffer));
};
syncBuiltinESMExports();

// Errors thrown later from a guest's timer or a dangling promise: reported, never fatal to the worker.
process.on('uncaughtException', (e) => post({ op: 'uncaught', ...current(), error: errorInfo(e) }));
process.on('unhandledRejection', (e) => post({ op: 'uncaught', ...current(), error: errorInfo(e) }));

function errorInfo(e) {
  if (e instanceof Error || Object.prototype.toString.call(e) === '[object Error]') {
    let name = 'Error', message = '', stack = null;
    try { name = String(e.name); } catch { /* hostile getter */ }
    try { message = String(e.message); } catch { /* hostile getter */ }
    try { stack = typeof e.stack === 'string' ? e.stack : null; } catch { /* hostile getter */ }
    return { name, message, stack };
  }
  let message;
  try { message = String(e); } catch { message = '(unprintable thrown value)'; }
  return { name: null, message, stack: null, value: encode(e) };
}

// --- declared-shape reading (no defaults filled in: defaults are C++ policy) ---------------------------
// A member counts as declared when it is an own property or comes from the object's own prototype chain
// (class-based plugins), but never from Object.prototype / Function.prototype (a hook named "toString" is
// not declared just because every object has one).
function lookup(obj, key) {
  if (obj === null || (typeof obj !== 'object' && typeof obj !== 'function')) return { present: false };
  let o = obj;
  while (o && o !== Object.prototype && o !== Function.prototype) {
    if (Object.prototype.hasOwnProperty.call(o, key)) {
      try { return { present: true, value: obj[key] }; } catch (e) { return { present: true, threw: e }; }
    }
    o = Object.getPrototypeOf(o);
  }
  return { present: false };
}

function declaredNames(obj) {
  const names = [];
  let o = obj;
  while (o && o !== Object.prototype && o !== Function.prototype) {
    for (const k of Object.getOwnPropertyNames(o)) {
      if (k === 'constructor' && o !== obj) continue;
      if (!names.includes(k)) names.push(k);
    }
    o = Object.getPrototypeOf(o);
  }
  return names;
}

const SCALARS = ['name', 'version', 'priority', 'failureMode', 'timeoutMs', 'inheritToSubagents',
  'mayRequireApproval', 'setup', 'dispose'];
const CONTRIBUTIONS = ['tools', 'systemPrompt', 'toolDescriptions', 'wrapModel', 'guardrails'];

function encodedField(r) {
  return r.threw !== undefined ? { $type: 'error', ...pick(errorInfo(r.threw), ['name', 'message']) } : encode(r.value);
}
function pick(o, keys) { const out = {}; for (const k of keys) out[k] = o[k]; return out; }

function shapeOf(p, index) {
  const shape = { index, type: p === null ? 'null' : Array.isArray(p) ? 'array' : typeof p };
  if (p === null || (typeof p !== 'object' && typeof p !== 'function')) return shape;
  for (const k of SCALARS) {
    const r = lookup(p, k);
    if (r.present) shape[k] = encodedField(r);
  }
  const h = lookup(p, 'hooks');
  if (h.present) {
    if (h.value !== null && typeof h.value === 'object' && h.threw === undefined) {
      shape.hooks = declaredNames(h.value);
      shape.hook_types = {};
      for (const name of shape.hooks) {
        const r = lookup(h.value, name);
        shape.hook_types[name] = r.threw !== undefined ? 'getter-threw' : typeof r.value;
      }
    } else {
      shape.hooks_declared = encodedField(h); // declared, but not an object: C++ decides
    }
  }
  shape.contributions = {};
  for (const k of CONTRIBUTIONS) {
    const r = lookup(p, k);
    if (r.present) shape.contributions[k] = encodedField(r);
  }
  const prov = lookup(p, 'provides');
  if (prov.present) {
    const v = prov.value;
    if (prov.threw === undefined && v !== null && typeof v === 'object' && !Array.isArray(v)) {
      shape.provides = declaredNames(v);
      shape.slots = encode(v);
    } else {
      shape.provides_declared = encodedField(prov);
    }
  }
  return shape;
}

// --- loading -----------------------------------------------------------------------------------------
let plugins = []; // the plugin values, by index, as the default export declared them

function loadFailure(stage, e) {
  post({ op: 'load_failed', stage, error: errorInfo(e) });
}

async function load(path) {
  const t0 = performance.now();
  let ns;
  try {
    ns = await import(pathToFileURL(path).href);
  } catch (e) {
    // A SyntaxError raised while the module graph is parsed and linked is a compile failure; anything
    // else (a throw at top level, a missing dependency) failed while importing.
    const stage = (e instanceof SyntaxError || (e && e.name === 'SyntaxError')) ? 'compile' : 'import';
    return loadFailure(stage, e);
  }
  const names = Object.keys(ns);
  const result = { export_kind: 'none', named_exports: names.filter((n) => n !== 'default'), plugins: [] };
  if (!names.includes('default')) {
    result.load_ms = performance.now() - t0;
    plugins = [];
    return post({ op: 'loaded', result });
  }
  let d = ns.default;
  if (typeof d === 'function') {
    result.export_kind = 'factory';
    try {
      d = await als.run({ plugin: null, id: null }, () => d());
    } catch (e) {
      return loadFailure('instantiate', e);
    }
    result.factory_result = d === null ? 'null' : Array.isArray(d) ? 'array' : typeof d;
  } else if (Array.isArray(d)) {
    result.export_kind = 'array';
  } else if (d !== null && typeof d === 'object') {
    result.export_kind = 'object';
  } else {
    result.export_kind = 'other';
    result.default_value = encode(d);
  }
  if (Array.isArray(d)) plugins = d.slice();
  else if (d !== null && typeof d === 'object') plugins = [d];
  else plugins = [];
  result.plugins = plugins.map((p, i) => shapeOf(p, i));
  result.load_ms = performance.now() - t0;
  post({ op: 'loaded', result });
}

// --- invoking ----------------------------------------------------------------------------------------
const stores = new Map(); // `${plugin}\0${runId}` -> Map (per plugin, per run; never snapshotted)
const inflight = new Map(); // id -> {settled}

function storeFor(plugin, runId) {
  const key = `${plugin}\u0000${String(runId)}`;
  let s = stores.get(key);
  if (!s) { s = new Map(); stores.set(key, s); }
  return s;
}

class NotFound extends Error {}

function resolveTarget(p, target, name, input, ctx) {
  const callable = (holder, key, what) => {
    const r = lookup(holder, key);
    if (!r.present) throw new NotFound(`plugin has no ${what}`);
    if (r.threw !== undefined) throw r.threw;
    if (typeof r.value !== 'function') throw new NotFound(`${what} is declared but is a ${typeof r.value}, not a function`);
    return () => r.value.call(holder, ...(target === 'setup' || target === 'dispose' ? [ctx] : [input, ctx]));
  };
  switch (target) {
    case 'hook': {
      const h = lookup(p, 'hooks');
      if (!h.present || h.value === null || typeof h.value !== 'object') throw new NotFound('plugin declares no hooks object');
      return callable(h.value, name, `hook "${name}"`);
    }
    case 'setup': return callable(p, 'setup', 'setup');
    case 'dispose': return callable(p, 'dispose', 'dispose');
    case 'systemPrompt': {
      const r = lookup(p, 'systemPrompt');
      if (!r.present) throw new NotFound('plugin has no systemPrompt');
      if (typeof r.value === 'function') return callable(p, 'systemPrompt', 'systemPrompt');
      return () => r.value; // a static contribution: its value is the result
    }
    case 'tool': {
      const r = lookup(p, 'tools');
      if (!r.present || !Array.isArray(r.value)) throw new NotFound('plugin declares no tools array');
      const tool = r.value.find((t) => t !== null && typeof t === 'object' && lookup(t, 'name').value === name);
      if (!tool) throw new NotFound(`no tool named "${name}"`);
      for (const key of ['func', 'execute', 'invoke', 'run', 'handler']) {
        const f = lookup(tool, key);
        if (f.present && typeof f.value === 'function') return () => f.value.call(tool, input, ctx);
      }
      throw new NotFound(`tool "${name}" has no func/execute/invoke/run/handler function`);
    }
    case 'slot': {
      const dot = name.indexOf('.');
      if (dot <= 0 || dot === name.length - 1) throw new NotFound(`slot target "${name}" is not "slot.method"`);
      const slotName = name.slice(0, dot), method = name.slice(dot + 1);
      const prov = lookup(p, 'provides');
      if (!prov.present || prov.value === null || typeof prov.value !== 'object') throw new NotFound('plugin provides no slots');
      const impl = lookup(prov.value, slotName);
      if (!impl.present) throw new NotFound(`plugin does not provide slot "${slotName}"`);
      const m = lookup(impl.value, method);
      if (!m.present || typeof m.value !== 'function') throw new NotFound(`slot "${slotName}" has no function "${method}"`);
      const args = Array.isArray(input) ? input : (input === undefined ? [] : [input]);
      return () => m.value.call(impl.value, ...args);
    }
    case 'wrapModel': {
      const r = lookup(p, 'wrapModel');
      if (!r.present) throw new NotFound('plugin has no wrapModel');
      if (typeof r.value !== 'function') throw new NotFound(`wrapModel is a ${typeof r.value}, not a function`);
      return () => callWrapModel(r.value, p, input, ctx);
    }
    default: throw new NotFound(`unknown target "${target}"`);
  }
}

// wrapModel: the plugin wraps a stub inner model; the runner calls the wrapped model once with
// input.messages/input.options; the stub records what reached it and returns input.response. The result
// shows both directions of the wrapper (README.md, "wrapModel").
async function callWrapModel(fn, p, input, ctx) {
  const inp = input !== null && typeof input === 'object' ? input : {};
  const innerCalls = [];
  const inner = {
    modelName: typeof inp.modelName === 'string' ? inp.modelName : 'conform-inner',
    async invoke(messages, options) { innerCalls.push({ messages, options }); return inp.response; },
    bindTools() { return inner; },
  };
  const wrapped = await fn.call(p, inner, ctx);
  if (wrapped === null || typeof wrapped !== 'object' || typeof wrapped.invoke !== 'function') {
    return { wrapped, inner_calls: innerCalls };
  }
  const result = await wrapped.invoke(inp.messages, inp.options);
  return { wrapped_is_inner: wrapped === inner, result, inner_calls: innerCalls };
}

async function invoke(m) {
  const { id, plugin, target, name, timeout_ms: timeoutMs } = m;
  let input, hostCtx;
  try {
    input = decode(m.input);
    hostCtx = decode(m.ctx);
  } catch (e) {
    return post({ op: 'error', id, code: -32602, message: `invalid params: ${e.message}` });
  }
  if (plugin >= plugins.length) {
    return post({ op: 'error', id, code: -32013, message: `no plugin at index ${plugin}`, data: { plugins: plugins.length } });
  }
  const p = plugins[plugin];
  const controller = new AbortController();
  const ctx = { ...hostCtx };
  ctx.state = deepFreeze(hostCtx.state);
  ctx.store = storeFor(plugin, hostCtx.runId);
  ctx.signal = controller.signal;
  const pluginName = nameOf(plugin);
  ctx.emit = (...args) => post({ op: 'emit', plugin, plugin_name: pluginName, id, args: encode(args) });
  const log = (level) => (...args) => {
    let text;
    try { text = format(...args); } catch { text = '(unformattable log arguments)'; }
    post({ op: 'log', plugin, plugin_name: pluginName, id, level, text, args: encode(args) });
  };
  ctx.logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error'), trace: log('trace'), log: log('info') };

  let call;
  try {
    call = resolveTarget(p, target, name, input, ctx);
  } catch (e) {
    if (e instanceof NotFound) return post({ op: 'error', id, code: -32013, message: e.message, data: { plugin, target, name: name ?? null } });
    return post({ op: 'result', id, outcome: 'threw', error: errorInfo(e) });
  }
  const before = safeEncodeJSON(input);
  const entry = { settled: false };
  inflight.set(id, entry);
  const settle = (msg) => {
    if (entry.settled) return;
    entry.settled = true;
    inflight.delete(id);
    clearTimeout(timer);
    if (msg.outcome !== 'timeout') {
      const after = safeEncodeJSON(input);
      if (after !== before) msg.mutated_input = JSON.parse(after);
    }
    post(msg);
  };
  // The worker's own deadline: aborts ctx.signal and answers `timeout` while this thread is responsive.
  // A guest that blocks the thread is stopped by the main thread instead (runner.mjs, STUCK_GRACE_MS).
  const timer = setTimeout(() => {
    controller.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError'));
    settle({ op: 'result', id, outcome: 'timeout' });
  }, timeoutMs);
  const t0 = performance.now();
  als.run({ plugin, id }, async () => {
    try {
      const v = await call();
      settle({ op: 'result', id, outcome: 'returned', value: encode(v), guest_ms: performance.now() - t0 });
    } catch (e) {
      settle({ op: 'result', id, outcome: 'threw', error: errorInfo(e), guest_ms: performance.now() - t0 });
    }
  });
}

function safeEncodeJSON(v) {
  try { return JSON.stringify(encode(v)); } catch { return null; }
}

// Heartbeat: while this thread's event loop turns, it stamps the time into memory shared with the main
// thread every HEARTBEAT_MS. A stale stamp past a deadline means a guest is blocking the thread (a
// synchronous loop), as opposed to a merely late timer on a loaded machine (runner.mjs, isStuck()).
const HEARTBEAT_MS = 20;
let beat = null;
function startHeartbeat(buffer) {
  beat = new Float64Array(buffer);
  const stamp = () => { beat[0] = performance.timeOrigin + performance.now(); };
  stamp();
  setInterval(stamp, HEARTBEAT_MS).unref();
}

// The runner may start this worker ahead of need (a spare, so a restart does not pay the thread's boot
// time); it imports the module when told to, once.
let loadStarted = false;
parentPort.on('message', (m) => {
  if (m && m.op === 'invoke') invoke(m);
  else if (m && m.op === 'load' && !loadStarted) {
    loadStarted = true;
    startHeartbeat(m.heartbeat);
    load(m.path);
  }
});
