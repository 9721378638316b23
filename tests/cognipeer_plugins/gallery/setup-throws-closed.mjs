// FAULT (CG-18): setup() throws under failureMode "closed": the invoke must throw (open would only skip
// the plugin's contributions).
export default {
  name: 'fault-setup-throws-closed',
  failureMode: 'closed',
  setup() { throw new Error('cannot open the audit database'); },
  tools: [{ name: 'audit_lookup', description: 'Looks up an audit entry.', func: () => 'entry' }],
  hooks: { preToolUse: () => ({ decision: 'allow' }) },
};
