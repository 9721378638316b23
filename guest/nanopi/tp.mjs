import { $init, generate } from '@bytecodealliance/jco-transpile/component';
import { readFileSync } from 'node:fs';
const t0 = performance.now();
await $init;
const t1 = performance.now();
const g = generate(readFileSync(process.argv[2]), { name: 'component', map: [], instantiation: { tag: 'sync' }, noTypescript: true, noNodejsCompat: false, base64Cutoff: 0 , noNamespacedExports: false, noComponentErrorWrapping: true, validLiftingOptimization: false, tracing: false, tlaCompat: false, multiMemory: false});
console.log('init', t1 - t0, 'gen', performance.now() - t1);
console.log(g.files.map(f => f[0]), g.imports, g.exports);
for (const [k, v] of g.files) if (k.endsWith('.js')) console.log(Buffer.from(v).toString());
