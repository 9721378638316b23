// mock_engine/nanopi/host — the reference nanopi 0.12 host for ONE component plugin, sans-IO.
//
// Everything nanopi decides lives here (NANOPI.md, NANOPI-HOST.md §2); the Node guest runner
// (guest/nanopi, docs/guest-protocol.md) only loads and calls. The host never does I/O itself:
//   inputs  — the runner's `load` report (LoadInfo), the result of each guest call (CallResult),
//             each host-import request of the guest (onImport), harness actions (deliver, callTool,
//             turn boundaries), and a Clock;
//   outputs — at most one guest call at a time (takeCall), import answers (in-band strings), log
//             lines, startup diagnostics, and the host's observations of the component (GuestFault,
//             each naming its NP rule).
// The busy flag is "a guest call has been taken and its result not yet given": a delivery in that
// window is dropped at once and counted (NP-20/21), never queued. HostSession (session.h) wires a
// Host to a GuestClient; unit tests wire it to a scripted fake.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock/clock.h"
#include "core/json/json.h"
#include "mock_engine/nanopi/config.h"

namespace conform::nanopi {

// NP-26 / NANOPI-HOST.md §2: EVENT_EPOCH_BUDGET_TICKS = 2 (2 s) for handle-event.
inline constexpr std::uint32_t kEventBudgetMs = 2000;
// NANOPI-HOST.md §2: EPOCH_BUDGET_TICKS = 30 (30 s) for tools and the load calls.
inline constexpr std::uint32_t kToolBudgetMs = 30000;
// NP-37 / §2 MAX_EVENTS_PER_PLUGIN.
inline constexpr std::size_t kMaxEvents = 32;
// §2 step 4: more than 64 commands is a hard load error.
inline constexpr std::size_t kMaxCommands = 64;
// NP-38: host-notify lines per plugin per turn.
inline constexpr std::size_t kNotifyPerTurn = 10;
// §2 notify.rs: a notification above 64 KiB is truncated.
inline constexpr std::size_t kNotifyMaxBytes = 64 * 1024;
// §1 host-set-context: 4 KiB.
inline constexpr std::size_t kContextMaxBytes = 4 * 1024;
// conform's choice (the facts give none): host-fs-read answers files up to 1 MiB, the store keeps
// at most 1 MiB per plugin, so a hostile guest cannot grow conform's memory without bound.
inline constexpr std::size_t kFsReadMaxBytes = 1u << 20;
inline constexpr std::size_t kStoreMaxBytes = 1u << 20;
// conform's loop guard for host-send-user-message (the facts say "loop guard" only): one message
// per plugin per turn.
inline constexpr std::size_t kSendMessagesPerTurn = 1;

// The nine root imports a nanopi host links (NANOPI-HOST.md §1).
const std::vector<std::string>& rootImports();

// What the runner's `load` reported (docs/guest-protocol.md).
struct LoadInfo {
  std::string world;                 // "" when the runner inferred none
  std::vector<std::string> exports, imports, unsupported_imports;
  bool instantiated = false;
};
Expected<LoadInfo, std::string> decodeLoadInfo(const json::Value& result);

// One guest call the host wants made.
struct GuestCall {
  enum class Purpose { ListTools, ListCommands, ListEvents, HandleEvent, ExecuteTool, ExecuteCommand };
  std::uint64_t seq = 0;
  Purpose purpose = Purpose::ListTools;
  std::string export_name;
  std::vector<std::string> args;
  std::uint32_t budget_ms = kToolBudgetMs;
  std::string event;  // HandleEvent: the event name
};
const char* toString(GuestCall::Purpose);

// Its result (the runner's `call` result, or a transport failure).
struct CallResult {
  enum class Outcome { Ok, Trap, Timeout, Failed };  // Failed: the runner could not run it (no answer, error)
  Outcome outcome = Outcome::Ok;
  std::optional<std::string> value;
  std::string message;
  bool rebuilt = false;
  double guest_ms = 0, elapsed_ms = 0;
};
Expected<CallResult, std::string> decodeCallResult(const json::Value& result);

// Something the component did that breaks a rule binding the guest (or that makes the host apply a
// hard error), named by its NP rule. The harness turns these into findings.
struct GuestFault {
  std::string rule;
  std::string message;   // one sentence
  std::string expected, actual;
};

struct Delivery {
  std::string event, payload;
  enum class Status { Delivered, Trapped, TimedOut, Failed, Dropped, NotSubscribed, HooksOff, NotLoaded } status;
  std::optional<std::string> returned;  // the discarded return value (NP-03), for the report only
  double elapsed_ms = 0;
};
const char* toString(Delivery::Status);

struct ImportCall {
  std::string name;
  std::vector<std::string> args;
  std::optional<std::string> answer;  // null for host-log
  std::string during;                 // the export running ("handle-event", …)
};

struct HostOptions {
  bool hooks_active = true;  // NP-32: --no-hooks turns delivery off
  // host-http-get is answered from this table, never from the network (url -> body).
  std::map<std::string, std::string> http_fixtures;
  // host-fs-read is confined to this folder ("" = the process's working directory).
  std::string cwd;
  // host-call-tool answers for allowed tools come from this table (tool -> result JSON text);
  // a tool without an entry gets {"content":"conform fixture result of NAME","is_error":false}.
  std::map<std::string, std::string> tool_fixtures;
};

class Host {
 public:
  enum class LoadState { NotLoaded, Loading, Loaded, Failed };

  Host(ExtensionConfig cfg, HostOptions opts, const clock::Clock& clk);

  // ---- load (NANOPI-HOST.md §2) ----------------------------------------------------------------
  // Starts the load sequence from the runner's report. A hard error ends it at once (state Failed).
  void beginLoad(const LoadInfo& info);
  // The runner's `load` itself failed (not a component, compile error…): a hard load error.
  void loadFailed(const std::string& why);
  LoadState loadState() const { return state_; }
  const std::string& loadError() const { return load_error_; }
  const std::string& loadErrorRule() const { return load_error_rule_; }

  // ---- guest calls ----------------------------------------------------------------------------
  // The next call to make, taken out (the plugin is busy from now until onCallResult).
  std::optional<GuestCall> takeCall();
  bool busy() const { return in_flight_.has_value(); }
  bool hasCall() const { return !queue_.empty(); }
  void onCallResult(std::uint64_t seq, const CallResult& r);

  // ---- harness actions ------------------------------------------------------------------------
  // Emission of `event` with its payload. Returns the status now: Dropped (busy, NP-20), HooksOff
  // (NP-32), NotSubscribed (NP-05), NotLoaded, or Delivered meaning "a handle-event call is queued"
  // (its outcome lands in deliveries() when the result comes back).
  Delivery::Status deliver(const std::string& event, const std::string& payload);
  // A tool call from the agent: queues execute-tool unless busy (then false).
  bool callTool(const std::string& name, const std::string& args_json);
  // Turn boundaries: notify / send-message counters are per turn (NP-38).
  void startTurn();

  // ---- host imports ---------------------------------------------------------------------------
  // Answers one import of the guest (docs/guest-protocol.md `import`): the in-band string, or
  // nullopt for host-log (void). Never fails: every refusal is an "error: …" string.
  std::optional<std::string> onImport(const std::string& name, const std::vector<std::string>& args);

  // The session restarted a runner that stopped answering (session.h): logged, counted as a rebuild.
  void noteRunnerRestart(const std::string& why, bool counted = true);

  // ---- observations ---------------------------------------------------------------------------
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }
  const std::vector<std::string>& log() const { return log_; }
  const std::vector<GuestFault>& faults() const { return faults_; }
  const std::vector<Delivery>& deliveries() const { return deliveries_; }
  const std::vector<ImportCall>& imports() const { return imports_; }
  const std::vector<std::string>& notifications() const { return notices_; }  // shown lines
  const std::vector<std::string>& subscriptions() const { return subs_; }      // effective, fixed at load
  const std::vector<std::string>& requested() const { return requested_; }     // list-events as returned
  const std::optional<std::string>& listEventsValue() const { return list_events_value_; }  // its raw string
  const std::vector<std::string>& tools() const { return tools_; }
  std::uint64_t droppedEvents() const { return dropped_; }
  std::uint64_t rebuilds() const { return rebuilds_; }
  std::uint64_t listCalls(GuestCall::Purpose p) const;
  const std::string& context() const { return context_; }
  const std::vector<std::string>& userMessages() const { return user_messages_; }
  const std::optional<std::string>& lastToolResult() const { return last_tool_result_; }
  std::string name() const { return stem_; }
  const ExtensionConfig& config() const { return cfg_; }
  // The /tools-style report (NP-29, NP-30): "Watching events (N plugins)" with the effective
  // subscription row (no row for an empty intersection) and the "Plugin grants" row.
  std::string toolsReport() const;
  // The same as JSON: {plugin, loaded, subscriptions[], requested[], grants{…}, dropped_events,
  // rebuilds, deliveries, diagnostics[]}.
  json::Document reportJson() const;

 private:
  void hardError(std::string rule, std::string text);
  void enqueue(GuestCall::Purpose p, std::string exp, std::vector<std::string> args, std::uint32_t budget, std::string event = {});
  void nextLoadStep(GuestCall::Purpose after);
  void onListTools(const CallResult& r);
  void onListCommands(const CallResult& r);
  void onListEvents(const CallResult& r);
  void onHandleEvent(const GuestCall& c, const CallResult& r);
  void afterTrapOrTimeout(const GuestCall& c, const CallResult& r);
  void fault(std::string rule, std::string message, std::string expected = {}, std::string actual = {});
  void warn(std::string rule, std::string text);
  bool exported(const std::string& name) const;
  std::string refuse(const std::string& name, const std::string& why);
  std::string fsRead(const std::string& path);
  std::string httpGet(const std::string& url);

  ExtensionConfig cfg_;
  HostOptions opts_;
  const clock::Clock& clk_;
  std::string stem_;
  LoadState state_ = LoadState::NotLoaded;
  std::string load_error_, load_error_rule_;
  LoadInfo info_;
  std::deque<GuestCall> queue_;
  std::optional<GuestCall> in_flight_;
  std::uint64_t next_seq_ = 1;
  std::map<GuestCall::Purpose, std::uint64_t> calls_by_purpose_;
  std::map<std::uint64_t, std::size_t> delivery_of_call_;  // handle-event call seq -> deliveries_ index
  std::vector<std::string> tools_, commands_, requested_, subs_;
  std::vector<Diagnostic> diags_;
  std::vector<std::string> log_;
  std::vector<GuestFault> faults_;
  std::vector<Delivery> deliveries_;
  std::vector<ImportCall> imports_;
  std::vector<std::string> notices_, user_messages_;
  std::map<std::string, std::string> store_;
  std::size_t store_bytes_ = 0;
  std::string context_;
  std::optional<std::string> last_tool_result_;
  std::optional<std::string> list_events_value_;
  std::size_t notify_this_turn_ = 0, suppressed_this_turn_ = 0, sent_this_turn_ = 0;
  std::uint64_t dropped_ = 0, rebuilds_ = 0;
};

}  // namespace conform::nanopi
