// FAULT (CG-19): remembers the persona a handoff switched to and stamps it into every later assistant
// message (postModelCall replaces the message), so the persona ends up in the transcript.
export default {
  name: 'fault-persona-in-transcript',
  hooks: {
    postModelCall(input, ctx) {
      const m = input.message;
      if (m && m.handoff && typeof m.handoff.persona === 'string') {
        ctx.store.set('persona', m.handoff.persona);
        return undefined;
      }
      const persona = ctx.store.get('persona');
      if (persona && m && typeof m.content === 'string') {
        return { message: { ...m, content: `[${persona}] ${m.content}` } };
      }
      return undefined;
    },
  },
};
