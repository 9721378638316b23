// FAULT (CG-03): failureMode "strict" — only "open" and "closed" exist (COGNIPEER-0.10.2.md).
export default {
  name: 'fault-bad-failure-mode',
  failureMode: 'strict',
  hooks: { preToolUse: () => ({ decision: 'allow' }) },
};
