// FAULT (CG-03): an empty name; createPluginHost throws on it.
export default {
  name: '',
  hooks: { preToolUse: () => ({ decision: 'allow' }) },
};
