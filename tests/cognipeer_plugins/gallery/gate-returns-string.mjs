// FAULT (CG-18): a gate handler that returns a bare string instead of an output object or undefined.
export default {
  name: 'fault-gate-returns-string',
  hooks: {
    preModelCall() { return 'ok'; },
  },
};
