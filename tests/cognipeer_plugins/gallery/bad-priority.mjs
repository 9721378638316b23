// FAULT (CG-03): a priority that is not a number; ordering is by numeric priority, then declaration.
export default {
  name: 'fault-bad-priority',
  priority: 'high',
  hooks: { userPromptSubmit: () => undefined },
};
