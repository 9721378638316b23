// mock_engine/cognipeer/host — the reference Cognipeer 0.10 plugin host (issue 10).
//
// Cognipeer plugins are JavaScript objects the agent SDK calls in process. conform loads the plugin
// module in a thin Node guest runner (guest/cognipeer/runner.mjs, docs/guest-protocol.md) that only
// loads, calls, times and encodes; EVERY host rule lives here, in C++, taken from
// ../shared/spec/COGNIPEER-0.10.2.md (it wins over COGNIPEER.md where it is more precise):
//   * registration checks at construction (duplicate or empty name, a slot claimed twice: CG-05),
//     defaults (priority 100, failureMode open, timeoutMs 10000, inheritToSubagents true),
//     ordering by priority ascending then declaration order (CG-03 as reworded);
//   * gate chains R1–R6 with the per-hook merge rules, deny > ask > allow, the first deny ending the
//     chain, `ask` honoured only on preToolUse, an unknown decision an error under R5;
//   * the four observers run concurrently and never fail the run (R7);
//   * contributions, setup() failure semantics, the module-level capability report;
//   * a scripted agent loop (loop.cpp) firing every hook at its point, snapshot / resume.
//
// The host is sans-IO: it talks to the plugin through the Guest interface (one batch of invokes at a
// time; a batch of several is sent whole before any reply is awaited, which is what makes the
// observers concurrent). GuestClient (guest_client.h) implements Guest over the runner process;
// unit tests implement it with scripted replies.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "core/util/expected.h"

namespace conform::cognipeer {

// ---- the 13 hooks (COGNIPEER-0.10.2.md "The 13 hooks") -----------------------------------------
inline constexpr const char* kGateHooks[] = {"sessionStart",  "userPromptSubmit", "preModelCall",
                                            "postModelCall", "preToolUse",       "postToolUse",
                                            "preCompact",    "preFinalAnswer",   "subagentStart"};
inline constexpr const char* kObserverHooks[] = {"postCompact", "subagentStop", "notification", "sessionEnd"};
bool isGate(std::string_view hook);
bool isObserver(std::string_view hook);
bool isHook(std::string_view hook);

// ---- strategy slots (COGNIPEER-0.10.2.md "Strategy slots") -------------------------------------
inline constexpr const char* kWiredSlots[] = {"memoryStore", "tokenCounter", "costEstimator", "conversationStore",
                                              "checkpointStore"};
inline constexpr const char* kDeclaredSlots[] = {"summarizer", "approvalTransport", "skillSource", "promptSource",
                                                 "contextBuilder"};
bool isSlot(std::string_view slot);

// ---- defaults of AgentPlugin (COGNIPEER-0.10.2.md "Registration") ------------------------------
inline constexpr std::int64_t kDefaultPriority = 100;
inline constexpr std::uint64_t kDefaultTimeoutMs = 10000;  // R6: a timeout is an error
// pluginOptions.maxModelRetries default (postModelCall retry flag, "≤maxModelRetries").
inline constexpr int kMaxModelRetries = 2;
// A scripted run stops after this many model iterations (a bound so a looping script cannot hang).
inline constexpr int kMaxIterations = 32;
// Subagents nest at most this deep in a script (ctx.depth; a bound, not an SDK limit).
inline constexpr int kMaxDepth = 4;

// A plugin's declared shape, as the runner's `load` reports it (absent stays absent there; the
// defaults are applied here, which is C++ policy).
struct PluginShape {
  PluginShape() = default;
  PluginShape(const PluginShape& o) : PluginShape(o.clone()) {}  // deep copy of the Documents
  PluginShape(PluginShape&&) = default;
  PluginShape& operator=(const PluginShape& o) { return *this = o.clone(); }
  PluginShape& operator=(PluginShape&&) = default;
  int index = 0;  // declaration order in the module (the runner's `index`)
  std::string name;
  std::string version;
  std::int64_t priority = kDefaultPriority;
  bool closed = false;  // failureMode "closed"; default "open"
  std::uint64_t timeout_ms = kDefaultTimeoutMs;
  bool inherit_to_subagents = true;
  bool may_require_approval = false;
  std::vector<std::string> hooks;  // hook names the plugin declares as functions (possibly unknown names)
  std::vector<std::string> non_function_hooks;  // declared hook members that are not functions
  std::vector<std::string> provides;
  bool setup = false, dispose = false;
  // Contributions, verbatim from the runner.
  json::Document tools{rapidjson::kArrayType};  // [ {name, description?, …} | "name" ]
  json::Document system_prompt;                 // null = none; a string or {"$type":"function"}
  json::Document tool_descriptions;             // null = none; object name -> text
  bool wrap_model = false;
  json::Document guardrails;  // null = none
  bool hasHook(std::string_view h) const;
  PluginShape clone() const;  // deep copy (the Documents are move-only)
};

// Reads the runner's `load` result `{plugins:[shape…]}`. Errors name the JSON path.
Expected<std::vector<PluginShape>, std::string> parseShapes(const json::Value& load_result);

// ---- the guest, as the host sees it -------------------------------------------------------------
struct InvokeRequest {
  int plugin = 0;      // PluginShape::index
  std::string target;  // hook | setup | dispose | tool | systemPrompt | wrapModel | slot
  std::string name;    // hook / tool / slot.method name
  json::Document input;
  json::Document ctx;
  std::uint64_t timeout_ms = kDefaultTimeoutMs;
};

struct InvokeResult {
  enum class Outcome { Returned, Threw, Timeout, Failed } outcome = Outcome::Returned;
  json::Document value;  // Returned: the decoded value; {"$type":"undefined"} or null-type = undefined
  std::string error_name, error_message;  // Threw / Failed (Failed: the runner or the wire failed)
  double elapsed_ms = 0;
  // The runner re-encodes the input after the call; set when the handler changed it in place (an
  // in-process SDK would see that change: the host judges it, e.g. an attachment rewritten, CG-13).
  json::Document mutated_input;
  bool undefinedValue() const;
};

class Guest {
 public:
  virtual ~Guest() = default;
  // Sends every request of the batch, then awaits every reply; results in request order. A batch of
  // one is an ordinary call; observers use a batch of several (R7: concurrently).
  virtual std::vector<InvokeResult> invokeAll(std::vector<InvokeRequest> batch) = 0;
};

// ---- what the host records -----------------------------------------------------------------------
// One line of the hook log, the profile's central observable.
struct HookCall {
  std::string plugin;
  std::string hook;     // hook name, or "setup" / "systemPrompt" / …
  std::string input;    // compact JSON of the input the plugin saw
  std::string outcome;  // returned | threw | timeout | failed
  std::string output;   // compact JSON of the returned value (or the error message)
  std::string effect;   // what the host made of it: "", "deny", "ask", "error(open)", "deny(closed)", …
  std::string str() const;
};

// A thing the plugin did against the plugin contract, on the CG rule it touches (docs/cognipeer.md).
struct HostFinding {
  std::string rule;
  std::string plugin;  // the plugin's name
  std::string message;
};

// Result of one gate chain.
struct GateResult {
  std::string decision = "allow";  // allow | deny | ask
  std::string reason, denied_by;
  json::Document value;             // the chained input with every replace / merge applied
  json::Document collected{rapidjson::kObjectType};  // collect fields: name -> array
  std::optional<std::string> approval_prompt;
};

struct HostOptions {
  std::string agent_name = "conform-agent";
  std::string run_id = "run-1";
  bool smart = false;  // createSmartAgent instead of createAgent (loop.cpp)
};

class Host {
 public:
  // createPluginHost: registration checks; an error is a construction error (the SDK throws).
  static Expected<Host, std::string> create(std::vector<PluginShape> plugins, Guest& guest, HostOptions opt = {});

  // Plugins in chain order (priority ascending, then declaration order).
  const std::vector<PluginShape>& ordered() const { return order_; }

  // One gate chain over every plugin that has `hook` (R1–R6). `input` is the hook input.
  GateResult runGate(const std::string& hook, const json::Value& input, int depth = 0);
  // The observers of `hook`, concurrently; nothing they do changes the run (R7).
  void runObservers(const std::string& hook, const json::Value& input, int depth = 0);

  // setup() of every plugin that has one, once (on the first invoke). A closed plugin's failure is
  // returned as an error (the invoke throws); an open plugin's failure skips its contributions.
  Expected<Ok, std::string> ensureSetup();
  // Contributions after setup (COGNIPEER-0.10.2.md "Contribution kinds").
  json::Document contributions(const json::Value& agent_tools);

  // The module-level pluginCapabilities() table: {hookContractVersion:1, hooks{13}, slots{10},
  // features{7}} — hand-maintained, not per agent, no contributions category.
  static json::Document capabilities();

  // The scripted agent loop (loop.cpp). `script` is docs/cognipeer.md's run script. Returns the run
  // outcome {status, messages, modelCalls, toolHistory, ctx, final, …}; an error is a script error.
  Expected<json::Document, std::string> run(const json::Value& script);
  // Approval answer for a parked run (`ask`), then the run continues. resume() of a snapshot.
  Expected<json::Document, std::string> snapshot() const;
  Expected<json::Document, std::string> resume(const json::Value& snapshot, const json::Value& script);

  const std::vector<HookCall>& log() const { return log_; }
  std::string logText() const;
  const std::vector<HostFinding>& findings() const { return findings_; }
  void clearLog() { log_.clear(); }
  const json::Document& state() const { return state_; }

  Host(Host&&) = default;
  Host& operator=(Host&&) = delete;

 private:
  Host(Guest& g, HostOptions o) : guest_(&g), opt_(std::move(o)) {}
  json::Document makeCtx(const PluginShape& p, const std::string& hook, int depth) const;
  void finding(std::string rule, const std::string& plugin, std::string message);
  // loop.cpp
  Expected<json::Document, std::string> runLoop(const json::Value& script, bool resumed, int depth,
                                                const std::vector<PluginShape>* only);

  Guest* guest_;
  HostOptions opt_;
  std::vector<PluginShape> order_;
  std::vector<HookCall> log_;
  std::vector<HostFinding> findings_;
  bool setup_done_ = false;
  std::vector<std::string> setup_failed_;  // open plugins whose setup threw: contributions skipped
  json::Document state_{rapidjson::kObjectType};  // agent state (messages, ctx, toolHistory, __plugin*)
  int depth_filter_ = 0;  // > 0 while a subagent runs: only inheritToSubagents plugins fire
};

}  // namespace conform::cognipeer
