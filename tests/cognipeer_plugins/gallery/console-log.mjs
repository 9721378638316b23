// FAULT (CG-01): prints with console.log instead of ctx.logger. In-process that is noise on the host's
// stdout; for conform it is output a plugin must not produce.
export default {
  name: 'fault-console-log',
  hooks: {
    userPromptSubmit(input) {
      console.log('user said:', input.text);
      return undefined;
    },
  },
};
