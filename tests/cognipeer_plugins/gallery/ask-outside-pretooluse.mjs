// FAULT (CG-09): `ask` from userPromptSubmit; only preToolUse may ask (0.10.2 reads it as a deny).
export default {
  name: 'fault-ask-outside-pretooluse',
  hooks: {
    userPromptSubmit() { return { decision: 'ask', reason: 'a human should look at this prompt' }; },
  },
};
