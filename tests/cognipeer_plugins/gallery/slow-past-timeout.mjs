// FAULT (CG-18): declares timeoutMs 200 and then takes 2 s in preToolUse, ignoring ctx.signal; a
// timeout is an error (R6).
export default {
  name: 'fault-slow-past-timeout',
  timeoutMs: 200,
  hooks: {
    async preToolUse() {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      return { decision: 'allow' };
    },
  },
};
