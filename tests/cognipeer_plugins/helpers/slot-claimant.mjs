// helpers/slot-claimant.mjs — one plugin that owns the memoryStore strategy slot (CG-05). Alone it is
// conforming; registered next to another memoryStore owner it must be refused at construction.
const memory = new Map();

export default {
  name: 'conform-slot-claimant',
  provides: {
    memoryStore: {
      async get(key) { return memory.get(key); },
      async set(key, value) { memory.set(key, value); },
      async delete(key) { memory.delete(key); },
    },
  },
  hooks: {
    sessionEnd() { /* observer: nothing to do */ },
  },
};
