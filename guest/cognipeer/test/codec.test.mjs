// codec.test.mjs — the value encoding both ways (guest/cognipeer/README.md "Value encoding").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encode, decode, deepFreeze, MAX_DEPTH } from '../codec.mjs';

test('JSON values pass as themselves; -0 becomes 0', () => {
  const v = { a: [1, 'two', null, true, { b: 1.5 }], s: '' };
  assert.deepEqual(encode(v), v);
  assert.deepEqual(decode(v), v);
  assert.equal(Object.is(encode(-0), 0), true);
});

test('every non-JSON value has a marker, and decode inverts it', () => {
  const cases = [
    [undefined, { $type: 'undefined' }],
    [NaN, { $type: 'number', value: 'NaN' }],
    [Infinity, { $type: 'number', value: 'Infinity' }],
    [-Infinity, { $type: 'number', value: '-Infinity' }],
    [12345678901234567890n, { $type: 'bigint', value: '12345678901234567890' }],
    [new Date('2021-05-06T07:08:09.010Z'), { $type: 'date', value: '2021-05-06T07:08:09.010Z' }],
    [new Map([[1, 'a']]), { $type: 'map', entries: [[1, 'a']] }],
    [new Set(['x']), { $type: 'set', values: ['x'] }],
    [new Uint8Array([0, 1, 255]), { $type: 'bytes', base64: 'AAH/' }],
    [/ab+c/gi, { $type: 'regexp', source: 'ab+c', flags: 'gi' }],
  ];
  for (const [value, marker] of cases) {
    assert.deepEqual(encode(value), marker);
    assert.deepEqual(encode(decode(marker)), marker);
  }
  assert.deepEqual(decode({ $type: 'bigint', value: '-5' }), -5n);
  assert.ok(Number.isNaN(decode({ $type: 'number', value: 'NaN' })));
});

test('functions, errors and symbols are described (decoded as stubs)', () => {
  function myFn() { return 1; }
  assert.deepEqual(encode(myFn), { $type: 'function', name: 'myFn' });
  assert.deepEqual(encode(() => 1), { $type: 'function', name: '' });
  assert.deepEqual(encode(new TypeError('t')), { $type: 'error', name: 'TypeError', message: 't' });
  assert.deepEqual(encode(Symbol('s')), { $type: 'symbol', description: 's' });
  assert.deepEqual(encode(Symbol()), { $type: 'symbol', description: null });
  const f = decode({ $type: 'function', name: 'cb' });
  assert.equal(typeof f, 'function');
  assert.equal(f.name, 'cb');
  assert.equal(f(), undefined);
  const e = decode({ $type: 'error', name: 'RangeError', message: 'm' });
  assert.ok(e instanceof Error);
  assert.equal(e.name, 'RangeError');
  assert.equal(typeof decode({ $type: 'symbol', description: 'd' }), 'symbol');
});

test('$type members are escaped and unescaped at any depth of $', () => {
  const v = { $type: 'a', $$type: 'b', nested: [{ $$$type: 'c', type: 'd', $types: 'e' }] };
  const enc = encode(v);
  assert.deepEqual(enc, { $$type: 'a', $$$type: 'b', nested: [{ $$$$type: 'c', type: 'd', $types: 'e' }] });
  assert.deepEqual(decode(enc), v);
});

test('cycles: a reference to an ancestor becomes a JSON Pointer; shared non-cyclic objects are copied', () => {
  const root = { list: [{ name: 'x' }] };
  root.list[0].parent = root.list;
  root.me = root;
  const shared = { s: 1 };
  root.a = shared; root.b = shared;
  root['we/ird~key'] = { back: null };
  root['we/ird~key'].back = root['we/ird~key'];
  const enc = encode(root);
  assert.deepEqual(enc.list[0].parent, { $type: 'cycle', path: '/list' });
  assert.deepEqual(enc.me, { $type: 'cycle', path: '' });
  assert.deepEqual(enc.a, { s: 1 });
  assert.deepEqual(enc.b, { s: 1 });
  assert.deepEqual(enc['we/ird~key'].back, { $type: 'cycle', path: '/we~1ird~0key' });
  const dec = decode(enc);
  assert.equal(dec.me, dec);
  assert.equal(dec.list[0].parent, dec.list);
  assert.equal(dec['we/ird~key'].back, dec['we/ird~key']);
  assert.deepEqual(encode(dec), enc);
});

test('hostile values never throw out of encode', () => {
  const o = { get boom() { throw new Error('getter'); }, ok: 1 };
  assert.deepEqual(encode(o), { boom: { $type: 'error', name: 'Error', message: 'getter' }, ok: 1 });
  const p = new Proxy({}, { ownKeys() { throw new Error('keys'); } });
  assert.deepEqual(encode(p), { $type: 'error', name: 'Error', message: 'keys' });
  let deep = {};
  const top = deep;
  for (let i = 0; i < MAX_DEPTH + 50; i++) { deep.n = {}; deep = deep.n; }
  let e = encode(top);
  let depth = 0;
  while (e && e.n) { e = e.n; depth++; }
  assert.deepEqual(e, { $type: 'truncated' });
  assert.equal(depth, MAX_DEPTH);
  assert.deepEqual(encode(Promise.resolve(1)), { $type: 'promise' });
});

test('decode refuses unknown or malformed markers with a pointer', () => {
  assert.throws(() => decode({ a: [{ $type: 'wat' }] }), /unknown \$type "wat" at \/a\/0/);
  assert.throws(() => decode({ $type: 'bigint', value: 5 }), /string "value"/);
  assert.throws(() => decode({ $type: 'map', entries: [[1]] }), /\[key, value\]/);
  assert.throws(() => decode({ a: { $type: 'cycle', path: '/b' }, b: {} }), /does not name an ancestor/);
  assert.throws(() => decode({ a: { $type: 'cycle' } }), /string path/);
  assert.throws(() => decode({ $type: 'cycle', path: '' }), /cycle marker/);
});

test('deepFreeze freezes nested objects, arrays, maps', () => {
  const s = deepFreeze({ a: { b: [1, { c: 2 }] }, m: new Map([['k', { v: 1 }]]) });
  assert.ok(Object.isFrozen(s.a.b[1]));
  assert.ok(Object.isFrozen(s.m.get('k')));
  assert.throws(() => { 'use strict'; s.a.b.push(3); }, TypeError);
});
