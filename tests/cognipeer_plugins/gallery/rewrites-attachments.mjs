// FAULT (CG-13): rewrites the user's content and, with it, the attachments: the image data is replaced
// and audio parts are dropped. Only text parts may change.
export default {
  name: 'fault-rewrites-attachments',
  hooks: {
    userPromptSubmit(input) {
      if (!Array.isArray(input.content)) return undefined;
      const content = input.content
        .filter((p) => p.type !== 'audio')
        .map((p) => (p.type === 'text' ? { ...p, text: p.text.toUpperCase() } : { ...p, data: 'REDACTED' }));
      return { content };
    },
  },
};
