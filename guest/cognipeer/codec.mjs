// codec.mjs — the explicit encoding of JavaScript values that JSON cannot carry (docs/guest-protocol.md,
// "Values JSON cannot carry"). Both directions: encode() turns a guest value into plain JSON for the wire,
// decode() turns what conform sends back into JavaScript values. Nothing is ever dropped silently: a value
// without a JSON form becomes a {"$type": …} marker, and a literal member named "$type" (or "$$type", …)
// gains one more "$" so a marker can never be forged by data.
//
// Shared by the runner (main thread) and the worker; no dependencies beyond Node's core.

// Depth beyond which a value is cut off as {"$type":"truncated"}: deeper than any real hook payload, and
// keeps a pathological self-nesting getter chain from overflowing the stack (guest-protocol.md: the runner
// never crashes on guest values).
export const MAX_DEPTH = 200;

const ESCAPED_KEY = /^\$+type$/;
const UNESCAPE_KEY = /^\$\$+type$/;

function pointerToken(key) {
  return String(key).replace(/~/g, '~0').replace(/\//g, '~1');
}

function pointerOf(path) {
  return path.length === 0 ? '' : '/' + path.map(pointerToken).join('/');
}

function isError(v) {
  return v instanceof Error || Object.prototype.toString.call(v) === '[object Error]';
}

function safeGet(obj, key) {
  try {
    return { ok: true, value: obj[key] };
  } catch (e) {
    return { ok: false, error: e };
  }
}

function errorMarker(e) {
  let name = 'Error';
  let message = '';
  try { name = String(e && e.name !== undefined ? e.name : 'Error'); } catch { /* hostile getter */ }
  try { message = String(e && e.message !== undefined ? e.message : e); } catch { /* hostile getter */ }
  return { $type: 'error', name, message };
}

/**
 * encode(value) -> a JSON-safe value. Markers:
 *   undefined            {"$type":"undefined"}
 *   function             {"$type":"function","name":"…"}
 *   Error                {"$type":"error","name","message"}
 *   cycle                {"$type":"cycle","path":"<JSON Pointer of the ancestor, '' = root>"}
 *   bigint               {"$type":"bigint","value":"123"}
 *   NaN / ±Infinity      {"$type":"number","value":"NaN"|"Infinity"|"-Infinity"}
 *   symbol               {"$type":"symbol","description":"…"|null}
 *   Date                 {"$type":"date","value":"ISO-8601"|null}
 *   Map / Set            {"$type":"map","entries":[[k,v]…]} / {"$type":"set","values":[…]}
 *   bytes (typed array, Buffer, ArrayBuffer)  {"$type":"bytes","base64":"…"}
 *   RegExp               {"$type":"regexp","source","flags"}
 *   Promise              {"$type":"promise"}
 *   too deep             {"$type":"truncated"}
 *   a getter that threw  {"$type":"error",…} in the member's place
 */
export function encode(value) {
  const ancestors = new Map(); // object -> path (array of keys)
  const path = [];

  function enc(v, depth) {
    switch (typeof v) {
      case 'undefined': return { $type: 'undefined' };
      case 'string': case 'boolean': return v;
      case 'number':
        if (Number.isFinite(v)) return Object.is(v, -0) ? 0 : v;
        return { $type: 'number', value: Number.isNaN(v) ? 'NaN' : (v > 0 ? 'Infinity' : '-Infinity') };
      case 'bigint': return { $type: 'bigint', value: v.toString() };
      case 'symbol': return { $type: 'symbol', description: v.description === undefined ? null : v.description };
      case 'function': {
        const n = safeGet(v, 'name');
        return { $type: 'function', name: n.ok && typeof n.value === 'string' ? n.value : '' };
      }
      default: break;
    }
    if (v === null) return null;
    if (ancestors.has(v)) return { $type: 'cycle', path: pointerOf(ancestors.get(v)) };
    if (depth >= MAX_DEPTH) return { $type: 'truncated' };
    if (isError(v)) return errorMarker(v);
    if (v instanceof Date) {
      const t = v.getTime();
      return { $type: 'date', value: Number.isNaN(t) ? null : v.toISOString() };
    }
    if (v instanceof RegExp) return { $type: 'regexp', source: v.source, flags: v.flags };
    if (typeof Promise !== 'undefined' && v instanceof Promise) return { $type: 'promise' };
    if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
      return { $type: 'bytes', base64: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') };
    }
    if (v instanceof ArrayBuffer) return { $type: 'bytes', base64: Buffer.from(v).toString('base64') };

    ancestors.set(v, path.slice());
    try {
      if (Array.isArray(v)) {
        const out = new Array(v.length);
        for (let i = 0; i < v.length; i++) {
          path.push(i);
          const got = safeGet(v, i);
          out[i] = got.ok ? enc(got.value, depth + 1) : errorMarker(got.error);
          path.pop();
        }
        return out;
      }
      if (v instanceof Map) {
        const entries = [];
        let i = 0;
        for (const [k, val] of v) {
          path.push('entries', i, 0);
          const ek = enc(k, depth + 2);
          path.pop();
          path.push(1);
          const ev = enc(val, depth + 2);
          path.pop(); path.pop(); path.pop();
          entries.push([ek, ev]);
          i++;
        }
        return { $type: 'map', entries };
      }
      if (v instanceof Set) {
        const values = [];
        let i = 0;
        for (const val of v) {
          path.push('values', i);
          values.push(enc(val, depth + 2));
          path.pop(); path.pop();
          i++;
        }
        return { $type: 'set', values };
      }
      const out = {};
      let keys;
      try { keys = Object.keys(v); } catch (e) { return errorMarker(e); }
      for (const k of keys) {
        path.push(k);
        const got = safeGet(v, k);
        const outKey = ESCAPED_KEY.test(k) ? '$' + k : k;
        out[outKey] = got.ok ? enc(got.value, depth + 1) : errorMarker(got.error);
        path.pop();
      }
      return out;
    } finally {
      ancestors.delete(v);
    }
  }

  return enc(value, 0);
}

export class DecodeError extends Error {
  constructor(message, pointer) {
    super(`${message} at ${pointer === '' ? '(root)' : pointer}`);
    this.name = 'DecodeError';
    this.pointer = pointer;
  }
}

function stubFunction(name) {
  // A function conform described by name only: callable, does nothing, returns undefined.
  const f = function () { return undefined; };
  try { Object.defineProperty(f, 'name', { value: typeof name === 'string' ? name : '' }); } catch { /* ok */ }
  return f;
}

function resolvePointer(root, pointer) {
  if (pointer === '') return root;
  if (typeof pointer !== 'string' || pointer[0] !== '/') return undefined;
  let cur = root;
  for (const raw of pointer.slice(1).split('/')) {
    const tok = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (cur === null || typeof cur !== 'object') return undefined;
    if (cur instanceof Map) {
      // Only the path shape encode() produces into Maps: /entries/<i>/<0|1>.
      if (tok !== 'entries') return undefined;
      cur = [...cur.entries()];
      continue;
    }
    if (cur instanceof Set) {
      if (tok !== 'values') return undefined;
      cur = [...cur.values()];
      continue;
    }
    cur = cur[tok];
  }
  return cur;
}

/**
 * decode(json) -> a JavaScript value; the inverse of encode(). Throws DecodeError (with a JSON Pointer)
 * on an unknown or malformed marker; the runner answers that with -32602.
 */
export function decode(json) {
  const pending = []; // cycle markers resolved once the whole tree exists: [holder, key, pointer, at]
  function dec(v, at) {
    if (v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) {
      const out = new Array(v.length);
      for (let i = 0; i < v.length; i++) out[i] = decAt(v[i], at, i, out);
      return out;
    }
    if (Object.prototype.hasOwnProperty.call(v, '$type')) return decMarker(v, at);
    const out = {};
    for (const k of Object.keys(v)) {
      const key = UNESCAPE_KEY.test(k) ? k.slice(1) : k;
      out[key] = decAt(v[k], at, k, out);
    }
    return out;
  }
  function decAt(child, at, key, holder) {
    const here = at + '/' + pointerToken(key);
    if (child !== null && typeof child === 'object' && !Array.isArray(child) && child.$type === 'cycle') {
      if (typeof child.path !== 'string') throw new DecodeError('cycle marker without a string path', here);
      pending.push([holder, key, child.path, here]);
      return undefined;
    }
    return dec(child, here);
  }
  function decMarker(m, at) {
    const t = m.$type;
    const str = (field) => {
      if (typeof m[field] !== 'string') throw new DecodeError(`"${t}" marker needs a string "${field}"`, at);
      return m[field];
    };
    switch (t) {
      case 'undefined': return undefined;
      case 'function': return stubFunction(m.name);
      case 'error': {
        const e = new Error(typeof m.message === 'string' ? m.message : '');
        if (typeof m.name === 'string') e.name = m.name;
        return e;
      }
      case 'bigint': {
        const s = str('value');
        if (!/^-?[0-9]+$/.test(s)) throw new DecodeError('bigint marker value is not an integer', at);
        return BigInt(s);
      }
      case 'number': {
        const s = str('value');
        if (s === 'NaN') return NaN;
        if (s === 'Infinity') return Infinity;
        if (s === '-Infinity') return -Infinity;
        throw new DecodeError('number marker value must be NaN, Infinity or -Infinity', at);
      }
      case 'symbol': return Symbol(typeof m.description === 'string' ? m.description : undefined);
      case 'date': return m.value === null ? new Date(NaN) : new Date(str('value'));
      case 'regexp': {
        try { return new RegExp(str('source'), typeof m.flags === 'string' ? m.flags : ''); } catch (e) {
          if (e instanceof DecodeError) throw e;
          throw new DecodeError(`regexp marker: ${e.message}`, at);
        }
      }
      case 'bytes': return new Uint8Array(Buffer.from(str('base64'), 'base64'));
      case 'map': {
        if (!Array.isArray(m.entries)) throw new DecodeError('map marker needs an "entries" array', at);
        const out = new Map();
        m.entries.forEach((e, i) => {
          if (!Array.isArray(e) || e.length !== 2) throw new DecodeError('map entry must be [key, value]', `${at}/entries/${i}`);
          out.set(dec(e[0], `${at}/entries/${i}/0`), dec(e[1], `${at}/entries/${i}/1`));
        });
        return out;
      }
      case 'set': {
        if (!Array.isArray(m.values)) throw new DecodeError('set marker needs a "values" array', at);
        return new Set(m.values.map((x, i) => dec(x, `${at}/values/${i}`)));
      }
      case 'promise': return Promise.resolve(undefined);
      case 'truncated': return undefined;
      case 'cycle': throw new DecodeError('a cycle marker can be rebuilt only as an object member or array element', at);
      default: throw new DecodeError(`unknown $type ${JSON.stringify(t)}`, at);
    }
  }
  const root = dec(json, '');
  for (const [holder, key, pointer, here] of pending) {
    // A cycle points at an ancestor of the marker: its pointer must be a prefix of the marker's own.
    const isAncestor = pointer === '' || here === pointer || here.startsWith(pointer + '/');
    const target = isAncestor ? resolvePointer(root, pointer) : undefined;
    if (target === null || typeof target !== 'object') {
      throw new DecodeError(`cycle path ${JSON.stringify(pointer)} does not name an ancestor object`, here);
    }
    holder[key] = target;
  }
  return root;
}

/** deepFreeze(v) — ctx.state is readonly (COGNIPEER-0.10.2.md "state (readonly)"). */
export function deepFreeze(v, seen = new Set()) {
  if (v === null || (typeof v !== 'object' && typeof v !== 'function') || seen.has(v)) return v;
  seen.add(v);
  if (v instanceof Map) for (const [k, x] of v) { deepFreeze(k, seen); deepFreeze(x, seen); }
  if (v instanceof Set) for (const x of v) deepFreeze(x, seen);
  for (const k of Object.keys(v)) deepFreeze(v[k], seen);
  if (!ArrayBuffer.isView(v)) Object.freeze(v); // typed arrays with elements cannot be frozen
  return v;
}
