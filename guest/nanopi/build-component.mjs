#!/usr/bin/env node
// Wraps a core wasm module (or a WAT text module) into a WebAssembly component for one world of a WIT
// package, with jco's programmatic componentEmbed + componentNew (NANOPI-HOST.md §3, §5.1: the jco CLI's
// `embed -n WORLD` panics on this machine; the API works and gives identical bytes run to run).
//
//   node build-component.mjs --core X.wasm|X.wat --wit FILE.wit --world NAME -o OUT.wasm
//
// Exit codes: 0 written, 1 the input was rejected (message names the file and jco's reason), 2 usage.
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { parseArgs } from 'node:util';

function usage(msg) {
  process.stderr.write(`build-component: ${msg}\n` +
    'usage: node build-component.mjs --core X.wasm|X.wat --wit FILE.wit --world NAME -o OUT.wasm\n');
  process.exit(2);
}

let opts;
try {
  opts = parseArgs({ options: {
    core: { type: 'string' }, wit: { type: 'string' }, world: { type: 'string' },
    out: { type: 'string', short: 'o' } } }).values;
} catch (e) { usage(e.message); }
for (const k of ['core', 'wit', 'world', 'out']) if (!opts[k]) usage(`missing --${k}`);

function fail(stage, file, e) {
  process.stderr.write(`build-component: ${stage} failed for ${file}: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
}

let core, witSource;
try { core = readFileSync(opts.core); } catch (e) { fail('read', opts.core, e); }
try { witSource = readFileSync(opts.wit, 'utf8'); } catch (e) { fail('read', opts.wit, e); }

const tools = await import('@bytecodealliance/jco-transpile/wasm-tools');
if (opts.core.endsWith('.wat')) {
  try { core = await tools.parse(core.toString('utf8')); } catch (e) { fail('parse WAT', opts.core, e); }
}
let embedded, component;
try { embedded = await tools.componentEmbed({ binary: core, witSource, world: opts.world }); }
catch (e) { fail(`embed (world ${opts.world})`, opts.core, e); }
try { component = await tools.componentNew(embedded, []); }
catch (e) { fail(`component new (world ${opts.world})`, opts.core, e); }
// Write then rename: a build interrupted half-way never leaves a truncated component behind.
const tmp = `${opts.out}.tmp${process.pid}`;
try { writeFileSync(tmp, component); renameSync(tmp, opts.out); } catch (e) { fail('write', opts.out, e); }
