// The guest side of the nanopi runner (docs/guest-protocol.md, guest/nanopi/README.md): one instance of
// one transpiled component, in a worker_thread so that the parent can stop a guest that never returns
// (V8 has no epoch interruption; NANOPI-HOST.md §4). Mechanism only: every host import is forwarded to
// the parent, which asks conform; this thread blocks in Atomics.wait until the answer is there.
//
// Messages parent → worker: {type:'call', seq, name, args}.
// Messages worker → parent: {type:'ready', instantiate_ms} | {type:'ready', error, stage},
//   {type:'import', name, args}, {type:'result', seq, outcome, value?, message?, guest_ms, rebuilt,
//   rebuild_ms?, rebuild_error?}.
import { parentPort, workerData, receiveMessageOnPort } from 'node:worker_threads';

const { jsUrl, modules, answerPort, signal } = workerData;
const flag = new Int32Array(signal); // [0]: 1 when the parent has posted an import answer on answerPort

// The nine root imports nanopi links (NANOPI-HOST.md §1); host-log is the only void one.
const HOST_IMPORTS = ['host-log', 'host-fs-read', 'host-http-get', 'host-store-get', 'host-store-set',
  'host-notify', 'host-set-context', 'host-call-tool', 'host-send-user-message'];

let importWaitMs = 0; // time blocked on the parent during the current call: not guest time

function hostCall(name, args) {
  const t0 = performance.now();
  Atomics.store(flag, 0, 0);
  parentPort.postMessage({ type: 'import', name, args });
  // The parent always answers: conform's value, or the in-band failure after its own 30 s deadline
  // (docs/guest-protocol.md "Every wait has a deadline"). The 1 s slices only re-check the flag.
  let msg;
  for (;;) {
    Atomics.wait(flag, 0, 0, 1000);
    if (Atomics.load(flag, 0) === 0) continue;
    msg = receiveMessageOnPort(answerPort);
    if (msg) break;
    Atomics.wait(flag, 0, 1, 1); // answer flagged but not yet visible on the port: poll briefly
    msg = receiveMessageOnPort(answerPort);
    if (msg) break;
  }
  importWaitMs += performance.now() - t0;
  return name === 'host-log' ? undefined : msg.message.value;
}

const importObject = {};
for (const name of HOST_IMPORTS) importObject[name] = { default: (...args) => hostCall(name, args) };

let instantiate;
let instance = null;

function build() {
  instance = instantiate((file) => modules[file], importObject);
}

function errorText(e) {
  if (e && typeof e === 'object' && 'message' in e) return `${e.name || 'Error'}: ${e.message}`;
  return String(e);
}

try {
  ({ instantiate } = await import(jsUrl));
} catch (e) {
  parentPort.postMessage({ type: 'ready', stage: 'import', error: errorText(e) });
  instantiate = null;
}
if (instantiate) {
  const t0 = performance.now();
  try {
    build();
    parentPort.postMessage({ type: 'ready', instantiate_ms: performance.now() - t0 });
  } catch (e) {
    parentPort.postMessage({ type: 'ready', stage: 'instantiate', error: errorText(e) });
  }
}

parentPort.on('message', (m) => {
  if (m.type !== 'call') return;
  importWaitMs = 0;
  const t0 = performance.now();
  let result;
  try {
    const fn = instance[m.name];
    const value = fn(...m.args);
    const guest_ms = performance.now() - t0 - importWaitMs;
    result = { outcome: 'ok', value: value === undefined ? null : value, guest_ms, rebuilt: false };
  } catch (e) {
    // A trapped instance cannot be re-entered (jco marks it trapped, like wasmtime): build a fresh
    // one now, before answering, without calling any export (NP-22; NANOPI-HOST.md §2 rebuild).
    const guest_ms = performance.now() - t0 - importWaitMs;
    result = { outcome: 'trap', message: errorText(e), guest_ms, rebuilt: true };
    const r0 = performance.now();
    try {
      build();
    } catch (e2) {
      result.rebuild_error = errorText(e2); // the parent then replaces this worker
    }
    result.rebuild_ms = performance.now() - r0;
  }
  parentPort.postMessage({ type: 'result', seq: m.seq, ...result });
});
