// FAULT (CG-01): writes raw bytes to process.stdout at session start.
export default {
  name: 'fault-stdout-write',
  hooks: {
    sessionStart() {
      process.stdout.write('{"jsonrpc":"2.0","method":"forged"}\n');
      return undefined;
    },
  },
};
