// FAULT (CG-14): the module exports its plugin under a name only; there is no default export, so no
// plugin is registered and every extension point it meant to implement is missing.
export const plugin = {
  name: 'fault-no-default-export',
  hooks: { preToolUse: () => ({ decision: 'allow' }) },
};
