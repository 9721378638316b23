// helpers.mjs — a tiny JSON-RPC client that drives runner.mjs as conform does (a child over stdio), for
// the node:test suites beside it. Every wait has a deadline (no test hangs on a silent runner).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';

export const RUNNER = fileURLToPath(new URL('../runner.mjs', import.meta.url));
export const fixture = (name) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
export const plugin = (name) => fileURLToPath(new URL(`../../../tests/cognipeer_plugins/${name}`, import.meta.url));

// How long a test waits for one answer before failing (generous for a loaded 2-core CI machine).
const ANSWER_DEADLINE_MS = 15000;

export class Runner {
  constructor() {
    this.child = spawn(process.execPath, [RUNNER], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.lines = [];        // every stdout line, raw
    this.messages = [];     // every parsed message
    this.notes = [];        // notifications
    this.waiters = new Map();
    this.answers = new Map();
    this.stderr = '';
    this.nextId = 1000; // above the small ids tests write by hand
    let buf = '';
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        this.lines.push(line);
        const m = JSON.parse(line); // a non-JSON stdout line fails the test loudly
        this.messages.push(m);
        if (m.method !== undefined && m.id === undefined) this.notes.push(m);
        else {
          this.answers.set(m.id, m);
          const w = this.waiters.get(m.id);
          if (w) { this.waiters.delete(m.id); w(m); }
        }
      }
    });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (d) => { this.stderr += d; });
    this.exited = once(this.child, 'exit');
  }

  sendRaw(line) { this.child.stdin.write(line + '\n'); }

  send(method, params, id = this.nextId++) {
    const msg = { jsonrpc: '2.0', id, method };
    if (params !== undefined) msg.params = params;
    this.sendRaw(JSON.stringify(msg));
    return id;
  }

  wait(id, deadline = ANSWER_DEADLINE_MS) {
    if (this.answers.has(id)) return Promise.resolve(this.answers.get(id));
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => { this.waiters.delete(id); reject(new Error(`no answer to ${JSON.stringify(id)} within ${deadline} ms; stderr: ${this.stderr}`)); }, deadline);
      this.waiters.set(id, (m) => { clearTimeout(t); resolve(m); });
    });
  }

  async request(method, params) { return this.wait(this.send(method, params)); }

  async load(path) {
    const m = await this.request('load', { path });
    if (m.error) throw new Error(`load failed: ${JSON.stringify(m.error)}`);
    return m.result;
  }

  invoke(p) {
    return this.request('invoke', { plugin: 0, ctx: { runId: 'run-1', agentName: 'a', hookName: p.name ?? null, state: {}, depth: 0 }, timeout_ms: 5000, ...p });
  }

  notesFor(id) { return this.notes.filter((n) => n.params && n.params.id === id); }

  async close() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.stdin.end();
      const t = setTimeout(() => this.child.kill('SIGKILL'), 3000);
      await this.exited;
      clearTimeout(t);
    }
  }
}
