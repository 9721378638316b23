// mock_engine/hooks — interception chains of the reference engine (PROTOCOL §13; HOOK-*).
//
// One generic chain runner serves all 13 hooks. For one hook point it calls the plugins that list
// the hook in capabilities.intercept (HOOK-01), one at a time in registration order (HOOK-04), each
// with `plugin/intercept/<hook>` (HOOK-02) and ONE fresh context token shared by the whole chain
// (§13.1 rule 2, HOOK-11), bounded by that plugin's interception_timeout_ms (HOOK-06). Every answer
// is decoded with core/protocol's closed result type and then validated by the hook's own step
// before the next plugin sees the state (HOOK-09, HOOK-13):
//   * timeout, error answer, malformed result, full queue  -> `interception_timeout`, fail open
//   * crash / exit / not connected                          -> `interception_crash`, fail open
//   * a mutation that fails validation                      -> `invalid_modification`, skipped
//   * a short-circuit (block, handled, cancel)              -> the chain ends (§13.1 rule 6)
// Fail-open means: diagnose, keep the current state, call the next plugin (HOOK-07/08).
//
// The runner is also the engine's tool gate (Engine::ToolHooks): tool_before_call after policy and
// approval (HOOK-16…22) and tool_after_result before the termination is committed (HOOK-23…27).
// The other hooks are fired by the simulated runtime (mock_engine/runtime.h).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "core/protocol/hooks.h"
#include "mock_engine/engine.h"

namespace conform::engine {

// PROTOCOL §18 [impl]: a tool_after_result replacement above the configured tool-output byte limit
// is invalid_modification (HOOK-26). The reference engine's limit [chosen]: 256 KiB.
inline constexpr std::size_t kDefaultToolOutputByteLimit = 262'144;

// The rendering of a tool output the model sees (HOOK-27, PROTOCOL §13.2 [chosen]): `single` is its
// text; `named` is every stream in declaration order as "[<stream>]\n<text>", joined by "\n".
std::string renderModelContent(const json::Value& output);

class HookRunner final : public Engine::ToolHooks {
 public:
  // Installs itself as the engine's tool gate; the destructor removes it.
  explicit HookRunner(Engine& engine);
  ~HookRunner() override;
  HookRunner(const HookRunner&) = delete;
  HookRunner& operator=(const HookRunner&) = delete;

  // What one plugin's decoded answer did to the chain.
  struct Step {
    enum class Kind { Continue, Stop, Invalid, Malformed };
    Kind kind = Kind::Continue;
    std::string why;  // Invalid / Malformed: the diagnostic text
    static Step next() { return {}; }
    static Step stop() { return {Kind::Stop, {}}; }
    static Step invalid(std::string why) { return {Kind::Invalid, std::move(why)}; }
    static Step malformed(std::string why) { return {Kind::Malformed, std::move(why)}; }
  };
  // Builds the params object for the next plugin from the CURRENT (validated) state.
  using ParamsFn = std::function<std::string(const std::string& context_id)>;
  using ApplyFn = std::function<Step(const std::string& plugin, const json::Value& result)>;

  // Runs one chain; `done` is called exactly once, after the last plugin or a short-circuit (at
  // once when nobody subscribed).
  void run(protocol::Hook hook, const std::string& session, ParamsFn params, ApplyFn apply,
           std::function<void()> done);

  // run() with the result decoded into the hook's closed result type first (HOOK-13): a result
  // that does not decode is malformed and fails open.
  template <class R>
  void runTyped(protocol::Hook hook, const std::string& session, ParamsFn params,
                std::function<Step(const std::string& plugin, R& result)> apply,
                std::function<void()> done) {
    run(hook, session, std::move(params),
        [apply = std::move(apply)](const std::string& plugin, const json::Value& v) {
          auto r = json::decode<R>(v, "result");
          if (!r) return Step::malformed(r.error());
          return apply(plugin, *r);
        },
        std::move(done));
  }

  // Plugins that receive `hook` now, in registration order (HOOK-01, HOOK-04).
  std::vector<std::string> subscribers(protocol::Hook hook) const;

  // Records a diagnostic about `plugin` in `session` (hook_blocked, unsupported_capability, …).
  void diagnose(const std::string& session, const std::string& plugin, const std::string& kind,
                const std::string& message);

  // Every plugin call of every chain, in order: the e2e test and the driver (`hooks.trace`) read
  // the firing order from it. outcome: continue | stop | invalid | malformed | error | timeout |
  // crash | queue_full.
  struct TraceEntry {
    std::string hook, plugin, session, context_id, outcome;
  };
  const std::vector<TraceEntry>& trace() const { return trace_; }

  void setToolOutputByteLimit(std::size_t bytes) { tool_output_limit_ = bytes; }
  // Called whenever a tool call ends (the runtime waits for its tool calls on it).
  void setToolFinished(std::function<void(const ToolCallStatus&)> fn) { tool_finished_ = std::move(fn); }

  Engine& engine() { return engine_; }
  bool profile004() const { return engine_.config().protocol_version == "0.0.4"; }

  // Engine::ToolHooks
  void beforeCall(const ToolCallStatus& call, const ToolDeclaration& decl,
                  std::function<void(BeforeOutcome)> done) override;
  void afterResult(const ToolCallStatus& call, std::function<void(AfterOutcome)> done) override;
  void finished(const ToolCallStatus& call) override;

 private:
  struct Chain;
  void step(const std::shared_ptr<Chain>& c);
  std::chrono::milliseconds timeoutOf(const std::string& plugin) const;

  Engine& engine_;
  std::vector<TraceEntry> trace_;
  std::size_t tool_output_limit_ = kDefaultToolOutputByteLimit;
  std::function<void(const ToolCallStatus&)> tool_finished_;
};

// Serialises a core/protocol params struct (hook params are built with their toJSON, never by
// hand).
template <class T>
std::string toJsonText(const T& v) {
  json::Document d;
  json::Value x = toJSON(v, d.GetAllocator());
  return json::compact(x);
}

}  // namespace conform::engine
