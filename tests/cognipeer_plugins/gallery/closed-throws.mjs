// FAULT (CG-18): a fail-closed plugin whose preToolUse throws. Under closed mode the error must become a
// deny with the documented reason; the host reports the failing plugin on CG-18.
export default {
  name: 'fault-closed-throws',
  failureMode: 'closed',
  hooks: {
    preToolUse() { throw new Error('policy backend unreachable'); },
  },
};
