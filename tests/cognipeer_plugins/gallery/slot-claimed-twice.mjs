// FAULT (CG-05): two plugins of one module both claim the memoryStore strategy slot; exactly one may
// own it, the second claimant must be refused at construction.
const store = () => { const m = new Map(); return { get: async (k) => m.get(k), set: async (k, v) => { m.set(k, v); } }; };
export default [
  { name: 'fault-slot-owner-1', provides: { memoryStore: store() } },
  { name: 'fault-slot-owner-2', provides: { memoryStore: store() } },
];
