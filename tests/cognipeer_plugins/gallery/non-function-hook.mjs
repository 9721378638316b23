// FAULT (CG-14): a hook member that is a string, not a function: declared but not implemented.
export default {
  name: 'fault-non-function-hook',
  hooks: {
    preToolUse: 'allow',
    sessionEnd() {},
  },
};
