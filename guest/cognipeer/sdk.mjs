// sdk.mjs — conform's own minimal stand-ins for the two helpers real Cognipeer plugins import from the
// SDK package (COGNIPEER-0.10.2.md "Registration": definePlugin(factory), defineHook(name, fn, opts),
// named `hook:<name>`). Only our test plugins (tests/cognipeer_plugins/) import this file; with
// `--host real` the real package is resolved from the plugin's folder instead.

/** definePlugin(x): a plugin object, or a factory the runner calls with no arguments. */
export function definePlugin(x) {
  return x;
}

/** defineHook(name, fn, opts): a one-hook plugin named "hook:<name>". */
export function defineHook(name, fn, opts = {}) {
  return { ...opts, name: `hook:${name}`, hooks: { [name]: fn } };
}
