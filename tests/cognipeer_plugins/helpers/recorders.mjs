// helpers/recorders.mjs — two recording plugins, A then B, at the same priority: the chain order of
// CG-03 (equal priorities → declaration order). Each appends its mark to the prompt text it receives, so
// the hook log shows B seeing A's output. Every hook is declared and records into ctx.store; nothing is
// printed. Conforming (breaks: null).
const HOOKS = ['sessionStart', 'userPromptSubmit', 'preModelCall', 'postModelCall', 'preToolUse', 'postToolUse',
  'preCompact', 'postCompact', 'preFinalAnswer', 'subagentStart', 'subagentStop', 'notification', 'sessionEnd'];

function recorder(mark) {
  const hooks = {};
  for (const h of HOOKS) {
    hooks[h] = (input, ctx) => {
      const seen = ctx.store.get('seen') ?? [];
      seen.push(h);
      ctx.store.set('seen', seen);
      return undefined;
    };
  }
  hooks.userPromptSubmit = (input, ctx) => {
    ctx.store.set('seen', [...(ctx.store.get('seen') ?? []), 'userPromptSubmit']);
    return typeof input.text === 'string' ? { text: `${input.text} [${mark}]` } : undefined;
  };
  return { name: `conform-recorder-${mark}`, priority: 50, hooks };
}

export default [recorder('A'), recorder('B')];
