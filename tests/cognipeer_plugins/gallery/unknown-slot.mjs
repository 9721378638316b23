// FAULT (CG-05): provides a strategy slot that does not exist (the 10 slots are fixed in 0.10.x).
export default {
  name: 'fault-unknown-slot',
  provides: { responseCacheStore: { get: async () => undefined, set: async () => {} } },
};
