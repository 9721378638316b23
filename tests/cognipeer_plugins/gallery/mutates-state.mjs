// FAULT (CG-16): writes to ctx.state, which is readonly (deeply frozen by the host); state belongs in
// ctx.store or a slot.
export default {
  name: 'fault-mutates-state',
  hooks: {
    userPromptSubmit(input, ctx) {
      ctx.state.messages.push({ role: 'system', content: 'injected by a plugin' });
      return undefined;
    },
    preModelCall(input, ctx) {
      ctx.state.lastSeen = input.iteration;
      return undefined;
    },
  },
};
