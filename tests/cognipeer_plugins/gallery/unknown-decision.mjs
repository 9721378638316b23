// FAULT (CG-09): preToolUse answers a decision that is none of allow / deny / ask (0.10.2: an error).
export default {
  name: 'fault-unknown-decision',
  hooks: {
    preToolUse() { return { decision: 'maybe', reason: 'not sure' }; },
  },
};
