// conforming.mjs — a Cognipeer 0.10 plugin that follows every rule conform checks (COGNIPEER.md,
// COGNIPEER-0.10.2.md): all 13 hooks, every contribution kind (tools, systemPrompt, toolDescriptions,
// wrapModel, guardrails) and one strategy slot (tokenCounter). It must pass
// `conform check --profile cognipeer-0.10` with 0 FAIL (tests/cognipeer/e2e_test.cpp).
//
// What it does is small but real: it trims the user's text (text parts only, attachments untouched —
// CG-13), masks `password=…` in tool output (CG-12), pins temperature, counts tokens, and reports through
// ctx.logger, never stdout (CG-01). Its state lives in ctx.store, never in the readonly ctx.state.
import { definePlugin } from '../../guest/cognipeer/sdk.mjs';

const MASK = /password=\S+/g;

export default definePlugin(() => ({
  name: 'conform-conforming',
  version: '1.0.0',
  failureMode: 'open',
  timeoutMs: 5000,
  inheritToSubagents: true,

  setup(ctx) {
    ctx.store.set('setupAt', ctx.runId);
  },
  dispose(ctx) {
    ctx.store.clear();
  },

  hooks: {
    // gates: each returns a valid output or undefined (= no change)
    sessionStart(input, ctx) {
      ctx.store.set('resumed', input.resumed === true);
      return { systemPromptAppend: 'Answer precisely.' };
    },
    userPromptSubmit(input) {
      if (!Array.isArray(input.content)) return { decision: 'allow' };
      // Rewrite text parts only; every other part is passed on as the very same value.
      const content = input.content.map((p) => (p && p.type === 'text' && typeof p.text === 'string' ? { ...p, text: p.text.trim() } : p));
      return { decision: 'allow', content };
    },
    preModelCall() {
      return { params: { temperature: 0 } };
    },
    postModelCall(input, ctx) {
      ctx.store.set('modelCalls', (ctx.store.get('modelCalls') ?? 0) + 1);
      return undefined;
    },
    preToolUse(input, ctx) {
      ctx.logger.debug('tool requested', input.toolName);
      return { decision: 'allow' };
    },
    postToolUse(input) {
      if (typeof input.output === 'string' && input.output.includes('password=')) {
        return { output: input.output.replace(MASK, 'password=[masked]') };
      }
      return undefined;
    },
    preCompact() {
      return { skip: false };
    },
    preFinalAnswer() {
      return undefined;
    },
    subagentStart(input) {
      return { decision: 'allow', task: input.task };
    },
    // observers: return nothing, never throw
    postCompact(input, ctx) {
      ctx.logger.info('compacted', input.tokensBefore, '->', input.tokensAfter);
    },
    subagentStop(input, ctx) {
      ctx.emit('subagentStop', { name: input.name });
    },
    notification(input, ctx) {
      ctx.logger.info('notification', input.kind);
    },
    sessionEnd(input, ctx) {
      ctx.logger.info('session ended', input.status, 'model calls', ctx.store.get('modelCalls') ?? 0);
    },
  },

  tools: [
    {
      name: 'conforming_word_count',
      description: 'Counts the words of a text.',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      func: ({ text }) => ({ words: String(text).split(/\s+/).filter(Boolean).length }),
    },
  ],
  systemPrompt: () => 'Prefer short answers.',
  toolDescriptions: { conforming_word_count: 'Counts the words of a text (whitespace-separated).' },
  wrapModel: (inner) => ({
    ...inner,
    async invoke(messages, options) {
      return inner.invoke(messages, { ...options, temperature: 0 });
    },
  }),
  guardrails: [
    { id: 'conforming-max-input', direction: 'input', check: (text) => ({ passed: String(text).length <= 100000 }) },
  ],
  provides: {
    tokenCounter: {
      count(text) {
        return Math.ceil(String(text ?? '').length / 4);
      },
    },
  },
}));
