// FAULT (CG-03): two plugins with the same name; createPluginHost throws on a duplicate name.
export default [
  { name: 'fault-duplicate', hooks: { preToolUse: () => ({ decision: 'allow' }) } },
  { name: 'fault-duplicate', hooks: { postToolUse: () => undefined } },
];
