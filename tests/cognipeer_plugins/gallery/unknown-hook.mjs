// FAULT (CG-06): declares a hook that is not one of the 13 (a misspelt "preToolCall"); it never fires.
export default {
  name: 'fault-unknown-hook',
  hooks: {
    preToolCall() { return { decision: 'deny', reason: 'would have blocked' }; },
    sessionEnd() {},
  },
};
