#!/usr/bin/env node
// Wraps a core wasm module (or a WAT text module) into a WebAssembly component for one world of a WIT
// package, with jco's programmatic componentEmbed + componentNew (NANOPI-HOST.md §3, §5.1: the jco CLI's
// `embed -n WORLD` panics on this machine; the API works and gives identical bytes run to run).
//
//   node build-component.mjs --core X.wasm|X.wat --wit FILE.wit --world NAME -o OUT.wasm
//   node build-component.mjs --manifest tests/nanopi_components/manifest.json --core-dir DIR --out-dir DIR
//
// The second form builds every component of the manifest in one process (jco's wasm-tools load once:
// about 0.4 s, then milliseconds per component): for each entry, the core module is
// <core-dir>/<name>.core.wasm (compiled from C by cmake/ConformNanopi.cmake) or, for a .wat source, the
// WAT file next to the manifest; the WIT is guest/nanopi/wit/nanopi.wit ("wit": "nanopi") or
// wit/test-worlds.wit ("wit": "test"); the component goes to <out-dir>/<name>.wasm.
//
// Exit codes: 0 written, 1 the input was rejected (message names the file and jco's reason), 2 usage.
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

function usage(msg) {
  process.stderr.write(`build-component: ${msg}\n` +
    'usage: node build-component.mjs --core X.wasm|X.wat --wit FILE.wit --world NAME -o OUT.wasm\n');
  process.exit(2);
}

let opts;
try {
  opts = parseArgs({ options: {
    core: { type: 'string' }, wit: { type: 'string' }, world: { type: 'string' },
    out: { type: 'string', short: 'o' }, manifest: { type: 'string' },
    'core-dir': { type: 'string' }, 'out-dir': { type: 'string' } } }).values;
} catch (e) { usage(e.message); }
const batch = opts.manifest !== undefined;
for (const k of batch ? ['core-dir', 'out-dir'] : ['core', 'wit', 'world', 'out']) if (!opts[k]) usage(`missing --${k}`);

function fail(stage, file, e) {
  process.stderr.write(`build-component: ${stage} failed for ${file}: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
}

const tools = await import('@bytecodealliance/jco-transpile/wasm-tools');

async function build(corePath, witPath, world, outPath) {
  let core, witSource;
  try { core = readFileSync(corePath); } catch (e) { fail('read', corePath, e); }
  try { witSource = readFileSync(witPath, 'utf8'); } catch (e) { fail('read', witPath, e); }
  if (corePath.endsWith('.wat')) {
    try { core = await tools.parse(core.toString('utf8')); } catch (e) { fail('parse WAT', corePath, e); }
  }
  let embedded, component;
  try { embedded = await tools.componentEmbed({ binary: core, witSource, world }); }
  catch (e) { fail(`embed (world ${world})`, corePath, e); }
  try { component = await tools.componentNew(embedded, []); }
  catch (e) { fail(`component new (world ${world})`, corePath, e); }
  // Write then rename: a build interrupted half-way never leaves a truncated component behind.
  const tmp = `${outPath}.tmp${process.pid}`;
  try { writeFileSync(tmp, component); renameSync(tmp, outPath); } catch (e) { fail('write', outPath, e); }
}

if (!batch) {
  await build(opts.core, opts.wit, opts.world, opts.out);
} else {
  const here = dirname(fileURLToPath(import.meta.url));
  const srcDir = dirname(resolve(opts.manifest));
  let manifest;
  try { manifest = JSON.parse(readFileSync(opts.manifest, 'utf8')); } catch (e) { fail('read', opts.manifest, e); }
  if (!manifest || !Array.isArray(manifest.components)) fail('read', opts.manifest, 'no "components" array');
  const wits = { nanopi: join(here, 'wit', 'nanopi.wit'), test: join(here, 'wit', 'test-worlds.wit') };
  for (const c of manifest.components) {
    if (!wits[c.wit]) fail('read', opts.manifest, `component ${c.name}: "wit" must be nanopi or test`);
    const core = c.source.endsWith('.wat') ? join(srcDir, c.source) : join(opts['core-dir'], `${c.name}.core.wasm`);
    await build(core, wits[c.wit], c.world, join(opts['out-dir'], `${c.name}.wasm`));
  }
}
