// mock_engine/runtime — the simulated agent runtime that fires the interception hooks at their
// trigger points (PROTOCOL §13.2; HOOK-12, HOOK-28…53): runs with a scripted model, steering,
// delegated sessions, model selection with fallback, compaction, fork and revert. Everything is
// asynchronous (a hook answer may come later, on the virtual clock) and deterministic.
//
// One run, in order (the documented firing order, docs/reference-engine.md):
//   model_before_select   first use / changed selection (HOOK-49/51); block -> the run fails
//   user_before_input     root sessions only (HOOK-36); handled -> no run (HOOK-39)
//   run_started
//   agent_before_start    prompt edits compose in plugin order, injections (HOOK-29…32)
//   message_injected…, user_input_submitted, user_input_transformed (only for a real change, HOOK-40)
//   internal title agent  first root run; no hooks (HOOK-12)
//   per scripted turn (one model attempt each):
//     model_before_request, provider_before_headers, provider_before_request,
//     provider_after_response, [fallback: model_before_select], text/reasoning deltas,
//     message_end, model_turn_committed,
//     tool calls of the committed turn (tool_before_call / tools/call / tool_after_result in the
//     engine's tool path), a delegated child run (all hooks but user_before_input)
//   run_completed | run_failed
// Sessions: compact (session_before_compact, then the internal compaction agent: no hooks), fork
// (session_before_fork), revert (session_before_revert), model.select (a draft: no hook).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "core/protocol/hooks.h"
#include "core/util/expected.h"
#include "mock_engine/engine.h"
#include "mock_engine/hooks.h"
#include "mock_engine/producer.h"

namespace conform::engine {

// PROTOCOL §18 [impl] limits.
inline constexpr std::size_t kMaxSystemPromptBytes = 131'072;  // HOOK-30
inline constexpr std::size_t kMaxCompactionTextBytes = 65'536;  // HOOK-35
// The scripted model's capability: the largest max_tokens it accepts (HOOK-43 model validation).
inline constexpr std::uint64_t kScriptedModelMaxTokens = 8192;

struct RunScript;

struct ScriptedToolCall {
  std::string tool;
  std::shared_ptr<json::Document> arguments;  // an object
};

// One model attempt's scripted answer.
struct ScriptedTurn {
  std::vector<std::string> deltas;  // streamed text deltas; the turn's text is their concatenation
  std::string reasoning;            // a reasoning part when non-empty
  std::vector<ScriptedToolCall> tool_calls;
  std::uint16_t status = 200;  // provider HTTP status of the first attempt; >= 400 fails it
  std::shared_ptr<RunScript> delegate;  // a delegated child run started after the tool calls
};

struct RunScript {
  std::string input;
  std::vector<ScriptedTurn> turns;  // the run ends after the last turn
};

// Decodes `{input, turns?: [{text?, deltas?, reasoning?, tool_calls?: [{tool, arguments?}],
// status?, delegate?: {input, turns?}}]}`. No turns = one turn answering "ok".
Expected<RunScript, std::string> parseRunScript(const json::Value& v);

struct RuntimeOptions {
  protocol::ModelSelection default_model{"scripted/model-a", std::nullopt};
  std::optional<protocol::ModelSelection> fallback_model =
      protocol::ModelSelection{"scripted/model-b", std::nullopt};
  std::string system_prompt = "You are the conform reference agent.";
};

struct RunRecord {
  std::string run_id, session_id;
  enum class State { Running, Completed, Failed, Handled, Blocked } state = State::Running;
  std::string reason;         // failed / handled / blocked
  std::string input;          // the committed input (after user_before_input)
  std::string system_prompt;  // after agent_before_start
  std::string final_text;
  protocol::ModelSelection model;  // the selection the run used last
  // What the scripted provider received, per attempt: the final normalized request after
  // model_before_request and provider_before_request (HOOK-44, HOOK-46).
  std::vector<std::shared_ptr<json::Document>> requests;
  std::vector<std::string> tool_calls;      // invocation ids
  std::vector<std::string> child_sessions;  // delegated sessions
  std::vector<std::string> steered;         // committed steering texts
  // PROD-43: producer messages this run took (claimed at a steering boundary or, for `queue`, as
  // the run's input), in claim order; consumed once the model request carrying them is prepared.
  std::vector<std::string> producer_messages;
  std::string origin = "driver";  // "driver" | "producer_queue" (a queue message started the run)
};
const char* toString(RunRecord::State);

struct SessionOpResult {
  std::string status;  // compacted | cancelled | forked | reverted | blocked | handled | steered
  std::string reason;
  std::string session_id;  // fork: the new session
  std::optional<std::string> instructions;
  std::vector<std::string> additions;  // compaction
  std::string checkpoint_id;
  std::string text;  // steering: the committed text
};

class Runtime {
 public:
  Runtime(Engine& engine, RuntimeOptions opts = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  HookRunner& hooks() { return hooks_; }

  // PROD-43 (PROTOCOL §14.2 [chosen]): producer messages delivered into runs. `steer` messages are
  // claimed at the active run's next steering boundary (the start of its next model attempt) or,
  // when the session is idle, by the next run's first attempt; `queue` messages wait until the
  // session is idle and then start a new run whose input is the body. A claim happens before the
  // request is prepared and before any hook (PROD-29); the messages are consumed once the model
  // request that carries them is prepared, and released back to waiting when the run ends first
  // (PROD-30). Producer input is not user input: it does not go through user_before_input.
  // Null detaches (the driver rebuilds the service on engine.restart).
  void setProducers(ProducerService* producers);
  // Every run of `session` in start order (runs started by queue messages included).
  std::vector<const RunRecord*> runsOf(const std::string& session) const;

  using RunDone = std::function<void(const RunRecord&)>;
  using OpDone = std::function<void(const SessionOpResult&)>;

  // Starts a root run (user_before_input applies). Error: unknown session, a run already active.
  Expected<std::string, std::string> startRun(const std::string& session, RunScript script,
                                              std::optional<protocol::ModelSelection> model,
                                              RunDone done = {});
  const RunRecord* run(const std::string& run_id) const;
  // Steering of the session's active run (HOOK-36): root sessions go through user_before_input.
  Expected<Ok, std::string> steer(const std::string& session, const std::string& text, OpDone done);
  // A draft selection for the next run: no hook (HOOK-49).
  Expected<Ok, std::string> selectModel(const std::string& session, protocol::ModelSelection sel);
  Expected<Ok, std::string> compact(const std::string& session,
                                    std::optional<std::string> instructions, OpDone done);
  Expected<Ok, std::string> fork(const std::string& session, std::uint64_t through_seq, OpDone done);
  Expected<Ok, std::string> revert(const std::string& session, std::uint64_t through_seq,
                                   std::optional<std::string> instructions, OpDone done);

  // How many model calls the internal agents (title, compaction) made: they never fire hooks
  // (HOOK-12), so tests compare this with the hook trace.
  std::uint64_t internalModelCalls() const { return internal_model_calls_; }
  bool delegated(const std::string& session) const;

 private:
  struct RunState;
  struct SessionState {
    bool delegated = false;
    std::string parent;
    std::optional<protocol::ModelSelection> last_used;  // the previous run's selection
    std::optional<protocol::ModelSelection> draft;      // model.select
    std::string active_run;                             // "" = idle
    bool titled = false;
  };
  SessionState* state(const std::string& session);
  Expected<std::string, std::string> begin(const std::string& session, RunScript script,
                                           std::optional<protocol::ModelSelection> model,
                                           RunDone done, const std::string& queue_message = "");
  void deliverQueued(const std::string& session);  // PROD-43: an idle session takes a queue message
  void postDeliverQueued(const std::string& session);
  void selectStep(const std::shared_ptr<RunState>& r);
  void inputStep(const std::shared_ptr<RunState>& r);
  void inputChain(const std::shared_ptr<RunState>& r, std::function<void()> started);
  void setupStep(const std::shared_ptr<RunState>& r);
  void attemptStep(const std::shared_ptr<RunState>& r);
  void headersStep(const std::shared_ptr<RunState>& r);
  void providerRequestStep(const std::shared_ptr<RunState>& r);
  void responseStep(const std::shared_ptr<RunState>& r);
  void streamStep(const std::shared_ptr<RunState>& r);
  void toolsStep(const std::shared_ptr<RunState>& r, std::size_t next);
  void delegateStep(const std::shared_ptr<RunState>& r);
  void finish(const std::shared_ptr<RunState>& r, RunRecord::State st, std::string reason);
  void append(const std::string& session, const std::string& json_text);
  protocol::ResolvedModelRef resolve(const protocol::ModelSelection& s) const;

  Engine& engine_;
  RuntimeOptions opts_;
  HookRunner hooks_;
  std::map<std::string, SessionState> sessions_;
  std::map<std::string, RunRecord> runs_;
  std::map<std::string, std::shared_ptr<RunState>> active_;  // run id -> state
  std::map<std::string, std::function<void(const ToolCallStatus&)>> waiting_tools_;
  std::uint64_t internal_model_calls_ = 0;
  ProducerService* producers_ = nullptr;
  std::vector<std::string> run_order_;  // run ids in start order (runsOf)
  // LIFE-12: callbacks parked in Engine::whenPluginsSettled check it (the runtime may go first).
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// JSON of a run record and of a session operation result (driver replies, tests).
std::string runJson(const RunRecord& r);
std::string sessionOpJson(const SessionOpResult& r);

}  // namespace conform::engine
