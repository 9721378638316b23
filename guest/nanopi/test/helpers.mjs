// Shared pieces of the nanopi runner tests (node:test): where the test components are, and a small
// JSON-RPC client that drives runner.mjs over its stdio exactly as conform does.
//
// Components: $CONFORM_NANOPI_DIR (set by CTest: <build>/nanopi, from cmake/ConformNanopi.cmake), or,
// when the tests run on their own (`npm test`), built here from tests/nanopi_components with the same
// recipe into a cache folder keyed by a hash of the sources.
import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

export const GUEST = join(dirname(fileURLToPath(import.meta.url)), '..');
export const RUNNER = join(GUEST, 'runner.mjs');
const SRC = join(GUEST, '..', '..', 'tests', 'nanopi_components');

// Every test wait has a deadline; a request unanswered this long fails the test instead of hanging.
const REQUEST_DEADLINE_MS = 20_000;

let dirCache = null;
export function componentsDir() {
  if (dirCache) return dirCache;
  const env = process.env.CONFORM_NANOPI_DIR;
  if (env && existsSync(join(env, 'events_plugin.wasm'))) return (dirCache = env);
  const h = createHash('sha256');
  for (const f of readdirSync(SRC).sort()) h.update(f).update(readFileSync(join(SRC, f)));
  for (const f of ['build-component.mjs', 'wit/nanopi.wit', 'wit/test-worlds.wit']) h.update(readFileSync(join(GUEST, f)));
  const dir = join(tmpdir(), `conform-nanopi-components-${h.digest('hex').slice(0, 16)}`);
  const manifest = JSON.parse(readFileSync(join(SRC, 'manifest.json'), 'utf8'));
  if (!existsSync(join(dir, 'done'))) {
    // Built in a private folder, then renamed into place: test files run in parallel under `npm test`.
    const work = mkdtempSync(`${dir}.tmp-`);
    for (const c of manifest.components) {
      if (c.source.endsWith('.wat')) continue;
      execFileSync('clang-14', ['--target=wasm32', '-O2', '-nostdlib', '-ffreestanding', '-fno-builtin',
        '-Wl,--no-entry', '-Wl,--allow-undefined', ...c.defines.map((d) => `-D${d}`),
        '-o', join(work, `${c.name}.core.wasm`), join(SRC, c.source)], { stdio: 'inherit' });
    }
    execFileSync(process.execPath, [join(GUEST, 'build-component.mjs'), '--manifest', join(SRC, 'manifest.json'),
      '--core-dir', work, '--out-dir', work], { stdio: 'inherit' });
    writeFileSync(join(work, 'manifest.json'), JSON.stringify(manifest));
    writeFileSync(join(work, 'done'), '');
    try { renameSync(work, dir); } catch { rmSync(work, { recursive: true, force: true }); } // another won
  }
  return (dirCache = dir);
}
export const component = (name) => join(componentsDir(), `${name}.wasm`);
export const manifest = () => JSON.parse(readFileSync(join(SRC, 'manifest.json'), 'utf8'));

// A runner child process. onImport(name, args, id) → the value to answer, a Promise of it, or
// undefined to leave the request unanswered. Every stdout line is kept (to prove it is JSON-RPC).
export class Runner {
  constructor({ env = {}, onImport } = {}) {
    this.child = spawn(process.execPath, [RUNNER], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    this.lines = [];
    this.notifications = [];
    this.imports = [];
    this.stderr = '';
    this.nextId = 1;
    this.pending = new Map();
    this.onImport = onImport || ((name) => (name === 'host-log' ? null : ''));
    this.exited = new Promise((resolve) => this.child.on('exit', (code, sig) => resolve({ code, sig, at: performance.now() })));
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (d) => { this.stderr += d; });
    createInterface({ input: this.child.stdout }).on('line', (line) => this.onLine(line));
  }

  onLine(line) {
    this.lines.push(line);
    let m;
    try { m = JSON.parse(line); } catch { return; } // tests assert every line parses
    if (m.method === 'import') {
      this.imports.push(m);
      Promise.resolve(this.onImport(m.params.name, m.params.args, m.id)).then((value) => {
        if (value !== undefined) this.answer(m.id, value);
      });
    } else if (m.method !== undefined) {
      this.notifications.push(m);
    } else if (this.pending.has(m.id)) {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      clearTimeout(p.timer);
      p.resolve({ ...m, receivedAt: performance.now() });
    }
  }

  answer(id, value) { this.write({ jsonrpc: '2.0', id, result: { value } }); }
  write(obj) { this.child.stdin.write(`${typeof obj === 'string' ? obj : JSON.stringify(obj)}\n`); }

  // Sends a request; resolves to the whole response ({result} or {error}) plus sentAt/receivedAt.
  request(method, params = {}) {
    const id = this.nextId++;
    const sentAt = performance.now();
    const p = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${method} #${id} within ${REQUEST_DEADLINE_MS} ms; stderr: ${this.stderr}`)), REQUEST_DEADLINE_MS);
      this.pending.set(id, { resolve: (r) => resolve({ ...r, sentAt }), timer });
    });
    this.write({ jsonrpc: '2.0', id, method, params });
    return p;
  }

  async ok(method, params) {
    const r = await this.request(method, params);
    if (r.error) throw new Error(`${method} failed: ${JSON.stringify(r.error)}`);
    return r.result;
  }

  call(exp, args, budget_ms = 30_000) { return this.ok('call', { export: exp, args, budget_ms }); }

  async close() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.stdin.end();
      const t = setTimeout(() => this.child.kill('SIGKILL'), 3000);
      await this.exited;
      clearTimeout(t);
    }
    for (const p of this.pending.values()) clearTimeout(p.timer);
  }
}
