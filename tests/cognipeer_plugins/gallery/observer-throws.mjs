// FAULT (CG-18): an observer (sessionEnd) that throws. The run must still complete — observers never
// fail the run whatever their failureMode (R7) — but the failure is the plugin's, reported on CG-18.
export default {
  name: 'fault-observer-throws',
  failureMode: 'closed',
  hooks: {
    sessionEnd() { throw new Error('metrics sink offline'); },
  },
};
