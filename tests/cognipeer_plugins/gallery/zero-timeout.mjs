// FAULT (CG-03): timeoutMs 0 — not a positive number of milliseconds; registration refuses it.
export default {
  name: 'fault-zero-timeout',
  timeoutMs: 0,
  hooks: { preToolUse: () => ({ decision: 'allow' }) },
};
