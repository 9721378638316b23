// helpers/define-hook.mjs — plugins built with the defineHook helper (named "hook:<name>"), as an array
// export. Conforming: an allow-everything preToolUse and a no-op sessionEnd.
import { defineHook } from '../../../guest/cognipeer/sdk.mjs';

export default [
  defineHook('preToolUse', () => ({ decision: 'allow' }), { priority: 200 }),
  defineHook('sessionEnd', () => undefined),
];
