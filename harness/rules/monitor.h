// harness/rules — the rule monitors: the rule catalogue implemented ONCE, as state machines over
// trace events (ARCHITECTURE.md). check, check-engine, fuzz, replay and lint all feed them.
//
// Flow per trace event (MonitorSet::feed):
//   1. the event is classified once into an Observation (envelope decoded by core/wire/rpc.h,
//      borrowing the trace reader's parsed frame: no re-parse, no copy);
//   2. ConnectionState::resolve() attaches, to a response, the request it answers;
//   3. every monitor judges the observation, reading the shared ConnectionState;
//   4. ConnectionState::commit() records what the event changed (pending requests, handshake,
//      capabilities, declared tools, grants, shutdown, fatal frames).
// Monitors therefore stay small and never disagree about the connection's state.
//
// Soundness first: a false FAIL against a conforming implementation is the worst bug a conformance
// tool can have. A monitor reports only what the trace PROVES; when timing, an unobservable
// engine-side state (quota windows, token bookkeeping limits) or a bounded table leaves doubt, it
// stays silent. Each monitor's file says what it deliberately does not judge.
//
// Independence: monitors never call mock_engine/ or mock_plugin/ code.
//
// Memory: bounded by live protocol state, never by trace length (lint streams million-message
// traces). Every table has a cap (kMax* below); when a cap is hit the affected checks stop for that
// entry (silence, never a guess).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/json/json.h"
#include "core/protocol/methods.h"
#include "core/protocol/profile.h"
#include "core/protocol/tools.h"
#include "core/trace/trace.h"
#include "core/wire/rpc.h"
#include "reports/results.h"

namespace conform::rules {

using reports::Evidence;
using reports::Finding;
using trace::Dir;

// Pending requests tracked per direction (engine requests, plugin requests). R4 allows at most
// 1024 queued control frames per plugin (HOOK-15) and 32 producer handlers (PROD-34), so 65,536
// outstanding requests is far beyond any conforming connection; past it, matching stops.
inline constexpr std::size_t kMaxPending = 65'536;
// Recently answered ids remembered per direction, to tell "second response" (RPC-08) from
// "unknown id": 4,096 covers any realistic reordering window.
inline constexpr std::size_t kMaxAnsweredMemory = 4'096;
// Declared tools kept from the handshake (TOOL-08/12). Declarations beyond are not judged.
inline constexpr std::size_t kMaxTools = 4'096;
// Findings kept per rule ID; later ones are only counted (a 10^6-message trace with one systematic
// fault must not produce 10^6 findings).
inline constexpr std::size_t kMaxFindingsPerRule = 50;

// One request as remembered until its response.
struct RequestInfo {
  const protocol::MethodInfo* method = nullptr;  // nullptr: unknown to the profile
  std::string unknown_method;                    // its name when method == nullptr
  wire::RpcId id;
  std::uint64_t line = 0;
  std::int64_t t_us = 0;
  std::string context_id;                        // request grant carried (tools/call, intercept/*)
  std::string tool;                              // tools/call: the tool name
  std::string method_name() const { return method ? std::string(method->name) : unknown_method; }
};

enum class Match : std::uint8_t {
  None,            // not a response
  Matched,         // answers a pending request of the opposite direction
  WrongIdType,     // same value as a pending id but another JSON type ("1" vs 1) — RPC-08/17
  AlreadyAnswered, // the id was answered before
  Unknown,         // no such request (or tracking gave up: see ConnectionState::untracked)
};

// One trace event, classified once for every monitor.
struct Observation {
  const trace::TraceEvent* ev = nullptr;
  bool is_frame = false;                   // a protocol frame (p2e or e2p), any form
  bool decoded = false;                    // envelope decoded: msg valid
  wire::Message msg;                       // valid when decoded
  std::optional<wire::EnvelopeError> envelope_error;  // frame that parsed as JSON but failed §3
  const protocol::MethodInfo* method = nullptr;       // requests/notifications known to the profile
  // Responses: what they answer.
  Match match = Match::None;
  const RequestInfo* request = nullptr;    // Matched / WrongIdType: the request (valid during feed)

  Dir dir() const { return ev->dir; }
  std::uint64_t line() const { return ev->line; }
  std::int64_t t() const { return ev->t_us; }
  bool fromPlugin() const { return ev->dir == Dir::PluginToEngine; }
  bool fromEngine() const { return ev->dir == Dir::EngineToPlugin; }
  const json::Value* params() const { return decoded ? msg.params : nullptr; }
  bool isMethod(std::string_view m) const {
    return decoded && (msg.isRequest() || msg.isNotification()) && msg.method == m;
  }
  // Responses: the answered method ("" when unmatched).
  std::string_view answeredMethod() const {
    return request && request->method ? request->method->name : std::string_view{};
  }
  Evidence evidence() const;               // this line with its (shortened) frame text
};

// Evidence of a response judged against its request: the request line with a label, then the
// response frame. Built only when a finding is reported (the conversion below): shortening a frame
// for evidence costs more than judging it, and nearly every judged response yields no finding.
class RequestEvidence {
 public:
  RequestEvidence(std::uint64_t request_line, std::string_view label, const Observation& o)
      : line_(request_line), label_(label), o_(&o) {}
  Evidence first() const { return Evidence{line_, std::string(label_)}; }
  Evidence second() const { return o_->evidence(); }
  std::uint64_t responseLine() const { return o_->line(); }
  operator std::vector<Evidence>() const { return {first(), second()}; }  // NOLINT: meant implicit

 private:
  std::uint64_t line_;
  std::string_view label_;  // must outlive this object (a literal or the caller's string)
  const Observation* o_;
};

// What the handshake established. Everything false/empty until the initialize result is accepted.
struct Handshake {
  std::uint64_t request_line = 0;   // plugin/initialize request (0: not seen)
  wire::RpcId request_id;
  bool engine_producer = false;     // engine capabilities.producer_messaging
  std::uint64_t result_line = 0;    // the response to initialize (0: none yet)
  bool ok = false;                  // success response with an acceptable result
  bool refused = false;             // error response / wrong version / malformed: engine must stop
  std::string refused_rule;         // the rule the refusal follows from (INIT-19, INIT-11, …)
  std::string plugin_name;
  bool subscribe_events = false, subscribe_bus = false, publish_bus = false;
  bool publish_session_events = false, producer = false;
  std::uint16_t intercept = 0;      // bit i: hook i of kHookNames
  bool producerEnabled() const { return ok && engine_producer && producer; }
};

struct DeclaredTool {
  std::string name;
  bool named = false;
  std::vector<std::string> streams;
  // TOOL-06: the argument whose value becomes `resource` (nullopt: the declaration says null).
  std::optional<std::string> primary_resource_param;
};

// The 13 hook names of PROTOCOL §5.2 (HOOK-03), bit order of Handshake::intercept.
inline constexpr std::array<std::string_view, 13> kHookNames = {
    "tool_before_call", "tool_after_result", "agent_before_start", "session_before_compact",
    "user_before_input", "model_before_request", "provider_before_headers",
    "provider_before_request", "provider_after_response", "message_end", "model_before_select",
    "session_before_fork", "session_before_revert"};
int hookIndex(std::string_view name);  // -1 when not one of the 13

// Shared connection state, fed before and after the monitors (see the file comment).
class ConnectionState {
 public:
  explicit ConnectionState(const protocol::Profile* profile) : profile_(profile) {}

  const protocol::Profile* profile() const { return profile_; }
  // The profile to judge by: the one given, else the one the handshake shows, else 0.0.6.
  const protocol::Profile& effectiveProfile() const;
  void setProfile(const protocol::Profile* p) { profile_ = p; }

  void resolve(Observation& o);
  void commit(const Observation& o);

  const Handshake& handshake() const { return hs_; }
  const DeclaredTool* findTool(std::string_view name) const;
  bool toolsTruncated() const { return tools_truncated_; }

  std::uint64_t shutdownLine() const { return shutdown_line_; }    // e2p plugin/shutdown
  std::uint64_t stdinEofLine() const { return stdin_eof_line_; }   // e2p eof
  // First fatal frame per direction (FRAME-04/11/13, RPC-01/03/04/05): the receiver must stop.
  std::uint64_t fatalLine(Dir d) const { return d == Dir::PluginToEngine ? fatal_p2e_ : fatal_e2p_; }
  // Frames the engine wrote since the initialize result was accepted (RECOV-03 needs "first").
  std::uint64_t engineFramesAfterHandshake() const { return e2p_after_hs_; }
  bool untracked(Dir requests_dir) const { return overflow_[idx(requests_dir)]; }
  std::size_t pendingCount(Dir requests_dir) const { return pending_[idx(requests_dir)].size(); }

 private:
  static int idx(Dir d) { return d == Dir::EngineToPlugin ? 0 : 1; }
  void handshakeResult(const Observation& o);

  const protocol::Profile* profile_;
  const protocol::Profile* seen_profile_ = nullptr;
  Handshake hs_;
  std::vector<DeclaredTool> tools_;
  bool tools_truncated_ = false;
  // [0]: requests the engine sent (answered p2e); [1]: requests the plugin sent.
  std::unordered_map<wire::RpcId, RequestInfo, wire::RpcIdHash> pending_[2];
  std::deque<wire::RpcId> answered_order_[2];
  std::unordered_set<wire::RpcId, wire::RpcIdHash> answered_[2];
  bool overflow_[2] = {false, false};
  std::uint64_t shutdown_line_ = 0, stdin_eof_line_ = 0, fatal_p2e_ = 0, fatal_e2p_ = 0;
  std::uint64_t e2p_after_hs_ = 0;
};

// Collects findings with a per-rule cap.
class FindingSink {
 public:
  void report(std::string_view rule, std::uint8_t binds, std::string message, std::string expected,
              std::string actual, std::vector<Evidence> evidence, bool advisory = false);
  // advisory: the breached clause is a SHOULD inside a MUST rule (e.g. FRAME-08 "writers should not
  // send CR"), so the finding is capped at SHOULD / NON-STRICT.
  std::vector<Finding>& findings() { return findings_; }
  // Findings dropped by kMaxFindingsPerRule, per rule.
  const std::unordered_map<std::string, std::size_t>& suppressed() const { return suppressed_; }
  // Rules pinned by the profile (reported as MUST even when Lvl is I or C).
  std::function<bool(std::string_view)> pinned;

 private:
  std::vector<Finding> findings_;
  std::unordered_map<std::string, std::size_t> per_rule_, suppressed_;
};

class Monitor {
 public:
  virtual ~Monitor() = default;
  virtual std::string_view name() const = 0;  // the area: "FRAME", "RPC", …
  virtual void observe(const Observation& o, const ConnectionState& s, FindingSink& out) = 0;
  // End of the trace: judge what only completeness can show.
  virtual void finish(const ConnectionState& s, FindingSink& out) { (void)s; (void)out; }
};

// Factories (one file per area).
std::unique_ptr<Monitor> makeFrameMonitor();
std::unique_ptr<Monitor> makeRpcMonitor();
std::unique_ptr<Monitor> makeLifecycleMonitor();  // INIT, PING, SHUT, RECOV
std::unique_ptr<Monitor> makeEmitMonitor();       // EMIT, QUOTA
std::unique_ptr<Monitor> makeDeliveryMonitor();   // EVT, BUS, TOOL, HOOK
std::unique_ptr<Monitor> makeProducerMonitor();   // PROD

// All monitors plus the shared state, fed in one pass.
class MonitorSet {
 public:
  explicit MonitorSet(const protocol::Profile* profile = nullptr);
  void feed(const trace::TraceEvent& ev);
  void finish();
  std::vector<Finding>& findings() { return sink_.findings(); }
  const FindingSink& sink() const { return sink_; }
  const ConnectionState& state() const { return state_; }

 private:
  ConnectionState state_;
  FindingSink sink_;
  std::vector<std::unique_ptr<Monitor>> monitors_;
  Observation obs_;
};

// Helpers shared by monitors.
std::string compactText(const json::Value& v);  // compact JSON of a value
// The length of compactText(v), computed without writing it, and how many numbers v holds
// (QUOTA-01/06 sizes: the tolerance is per number). Exact: the same escapes and number spellings
// as RapidJSON's Writer (a non-finite double ends the count where the Writer stops writing).
struct CompactSize {
  std::size_t bytes = 0;
  std::size_t numbers = 0;
};
CompactSize compactSize(const json::Value& v);
const json::Value* member(const json::Value* obj, std::string_view key);
std::string_view str(const json::Value* v);     // "" unless a string
// The first declaration problem of §6.3 step 6 (INIT-20/21, without the meta-schema check) in an
// initialize result's `tools`; nullopt when they pass or cannot be decoded (shape: rpc_monitor).
std::optional<protocol::DeclarationProblem> declarationProblem(const json::Value* init_result);
// INIT-21 [impl]: the first tool whose `parameters` fail the structural draft 2020-12 check
// (json::checkSchemaDocument), as "tools[i].parameters…: message"; nullopt when all pass.
std::optional<std::string> parametersSchemaProblem(const json::Value* init_result);

}  // namespace conform::rules
