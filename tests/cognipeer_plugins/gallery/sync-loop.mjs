// FAULT (CG-18): a synchronous busy loop in preModelCall far past its 300 ms timeoutMs; it can only be
// stopped from outside its thread (the runner terminates and re-imports the module).
export default {
  name: 'fault-sync-loop',
  timeoutMs: 300,
  hooks: {
    preModelCall() {
      const until = Date.now() + 60000;
      while (Date.now() < until) { /* spin */ }
      return undefined;
    },
  },
};
