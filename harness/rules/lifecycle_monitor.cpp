// harness/rules/lifecycle_monitor — INIT-*, PING-*, SHUT-*, RECOV-*: the connection's life from the
// first frame to the last, in both directions.
//
//   INIT-01 first engine frame is plugin/initialize      INIT-07 nothing but shutdown before the result
//   INIT-02 params version = profile                     INIT-10 result version = profile
//   INIT-15 one initialize per process                   INIT-20 declared tool names snake_case, unique
//   INIT-11/12/17/19/20 after refusing a result the engine sends nothing but shutdown
//   PING-02 no ping before the handshake [impl]          SHUT-05 nothing after plugin/shutdown [impl]
//   SHUT-08 the plugin exits by itself within the default grace after shutdown / stdin EOF
//   RECOV-01 recovery/start is a notification            RECOV-02 exactly once per producer connection
//   RECOV-03 first frame after the handshake, only when both sides opted in
//   RECOV-10 repeating the identical outcome succeeds; a different one is rejected
//   RECOV-17 completion before start → -32048; on a non-producer connection → -32040
//   SHUT-02 the engine closes stdin after plugin/shutdown (a kill with stdin still open breaks it)
//   INIT-21 [impl] declaration problems of §6.3 step 6 (description, permission_name, primary
//           resource parameter) — reported against the plugin; the engine must then refuse it
//   SDK-05 a 0.0.6 SDK reports publish_session_events:false (advisory: only SDK plugins are bound)
//   INIT-25 SDKs report resources:false (advisory, only SDKs are bound); the engine never sends a
//           resource method (any e2p `plugin/resources…` method is a FAIL against the engine)
//   INIT-21 [impl] every tool's `parameters` is a usable draft 2020-12 schema (the structural check
//           json::checkSchemaDocument; a meta-schema is not shipped, DEPENDENCIES.md)
//   RECOV-10 [advisory, plugin] a completion whose outcome differs from one the engine already
//           accepted (sent after that one): the plugin changed its mind, which the engine must refuse
//   RECOV-06 [advisory, plugin] on a producer-enabled connection that the engine shut down, the
//           plugin never sent plugin/recovery/complete although it answered engine requests written
//           after recovery/start (it was reading). Advisory: RECOV-07 sets no deadline, so the trace
//           shows a connection that ended unrecovered, not a broken promise.
// Shapes (INIT-02/09/16/17, PING-01, SHUT-01, RECOV-05) are judged by rpc_monitor through
// Profile::validate, once.
#include <fmt/format.h>

#include "core/protocol/limits.h"
#include "core/protocol/validate.h"
#include "harness/rules/monitor.h"

namespace conform::rules {
namespace {

namespace m = protocol::method;
constexpr std::int64_t kUs = 1000;  // µs per ms
constexpr std::int64_t kToleranceUs = 250 * kUs;  // RULES.md: timing tolerance ±250 ms
constexpr std::string_view kResourcePrefix = "plugin/resource";  // INIT-25: deferred resource methods

class LifecycleMonitor : public Monitor {
 public:
  std::string_view name() const override { return "INIT"; }

  void observe(const Observation& o, const ConnectionState& s, FindingSink& out) override {
    const Handshake& hs = s.handshake();
    if (o.ev->kind == trace::Kind::Exit) exitEvent(o, s, out);
    if (o.ev->kind == trace::Kind::Eof && o.fromEngine() && !end_line_) {
      end_line_ = o.line();
      end_t_ = o.t();
    }
    if (!o.is_frame) return;
    if (o.fromEngine()) engineFrame(o, s, out);
    if (!o.decoded) return;

    // The initialize result (judged before ConnectionState commits it).
    if (o.match == Match::Matched && o.answeredMethod() == m::kInitialize && !hs.result_line &&
        o.msg.kind == wire::MessageKind::Success)
      initResult(o, s, out);
    if (o.isMethod(m::kRecoveryStart) && o.fromEngine()) recoveryStart(o, s, out);
    if (o.isMethod(m::kRecoveryComplete) && o.fromPlugin() && o.msg.isRequest())
      rememberCompletion(o);
    if (o.match == Match::Matched && o.fromPlugin() && recovery_start_line_ && o.request->line > recovery_start_line_)
      answered_after_start_ = true;
    if (o.match == Match::Matched && o.fromEngine() && o.answeredMethod() == m::kRecoveryComplete)
      completionAnswer(o, s, out);
  }

  void finish(const ConnectionState& s, FindingSink& out) override {
    // RECOV-02: a producer-enabled connection on which the engine wrote frames after the handshake
    // but never recovery/start (a connection cut right after the handshake proves nothing).
    if (s.handshake().producerEnabled() && !recovery_start_line_ && s.engineFramesAfterHandshake() > 0)
      out.report("RECOV-02", reports::kBindsEngine,
                 "plugin/recovery/start was never written on a producer-enabled connection",
                 "exactly one plugin/recovery/start right after the handshake", "none",
                 {{s.handshake().result_line, "handshake result"}});
    if (s.handshake().producerEnabled() && recovery_start_line_ && !completion_sent_ && answered_after_start_ &&
        s.shutdownLine())
      out.report("RECOV-06", reports::kBindsPlugin, "the plugin never completed recovery on this connection",
                 "plugin/recovery/complete {outcome} once restoration is done",
                 "no plugin/recovery/complete before the engine shut the connection down although the plugin "
                 "kept answering requests",
                 {{recovery_start_line_, "recovery/start"}, {s.shutdownLine(), "shutdown"}}, /*advisory=*/true);
  }

 private:
  bool first_e2p_seen_ = false;
  bool init_seen_ = false;
  bool init07_reported_ = false, refused_reported_ = false, shut05_reported_ = false;
  bool first_after_hs_checked_ = false;
  std::uint64_t recovery_start_line_ = 0;
  bool shut02_reported_ = false;
  std::int64_t shutdown_t_ = 0;  // time of plugin/shutdown (SHUT-02)
  std::uint64_t end_line_ = 0;  // plugin/shutdown or stdin EOF (SHUT-08)
  std::int64_t end_t_ = 0;
  // RECOV-10: the canonical outcome of pending completions by request id (bounded) and the first
  // accepted outcome.
  std::unordered_map<wire::RpcId, std::string, wire::RpcIdHash> completions_;
  std::optional<std::string> accepted_outcome_;
  std::uint64_t accepted_line_ = 0;
  // RECOV-06: a completion request was sent; an engine request written after recovery/start was
  // answered by the plugin (it was reading its input).
  bool completion_sent_ = false, answered_after_start_ = false;

  void engineFrame(const Observation& o, const ConnectionState& s, FindingSink& out) {
    const Handshake& hs = s.handshake();
    bool is_init = o.isMethod(m::kInitialize) && o.msg.isRequest();
    bool is_shutdown = o.isMethod(m::kShutdown);
    if (!first_e2p_seen_) {
      first_e2p_seen_ = true;
      if (!is_init)
        out.report("INIT-01", reports::kBindsEngine, "the engine's first frame is not plugin/initialize",
                   "a plugin/initialize request", o.decoded ? std::string(o.msg.method) : "not a request",
                   {o.evidence()});
    }
    if (is_init) {
      if (init_seen_) {
        out.report("INIT-15", reports::kBindsEngine, "plugin/initialize was sent a second time",
                   "one plugin/initialize per process", "another plugin/initialize",
                   {{hs.request_line, "first"}, o.evidence()});
      } else {
        init_seen_ = true;
        std::string_view v = str(member(o.msg.params, "protocol_version"));
        if (v != s.effectiveProfile().version())
          out.report("INIT-02", reports::kBindsEngine, "the engine offers another protocol version",
                     fmt::format("protocol_version \"{}\"", s.effectiveProfile().version()),
                     fmt::format("\"{}\"", v), {o.evidence()});
      }
      return;
    }
    // INIT-07: before the result is accepted only plugin/shutdown may be written.
    if (hs.request_line && !hs.result_line && !is_shutdown && !init07_reported_) {
      init07_reported_ = true;
      out.report("INIT-07", reports::kBindsEngine, "the engine wrote a frame before the initialize result",
                 "nothing but plugin/shutdown before the handshake completes",
                 o.decoded ? fmt::format("`{}`", o.msg.method) : "a frame",
                 {{hs.request_line, "initialize"}, o.evidence()});
    }
    // After refusing the plugin the engine ends the connection.
    if (hs.refused && !is_shutdown && !refused_reported_) {
      refused_reported_ = true;
      out.report(hs.refused_rule, reports::kBindsEngine,
                 "the engine kept talking to a plugin whose handshake result it must refuse",
                 "the connection ends (only plugin/shutdown may follow)",
                 o.decoded ? fmt::format("`{}`", o.msg.method) : "a frame",
                 {{hs.result_line, "refused result"}, o.evidence()});
    }
    if (o.decoded && (o.msg.isRequest() || o.msg.isNotification()) &&
        o.msg.method.substr(0, kResourcePrefix.size()) == kResourcePrefix)
      out.report("INIT-25", reports::kBindsEngine, "the engine sent a resource method",
                 "no resource methods (deferred, whatever `resources` says)", fmt::format("`{}`", o.msg.method),
                 {o.evidence()});
    if (o.isMethod(m::kPing) && !hs.ok)
      out.report("PING-02", reports::kBindsEngine, "plugin/ping was sent before the handshake completed",
                 "pings only to connected plugins", "a ping", {o.evidence()});
    if (s.shutdownLine() && !shut05_reported_) {
      shut05_reported_ = true;
      out.report("SHUT-05", reports::kBindsEngine, "the engine wrote after plugin/shutdown",
                 "nothing after plugin/shutdown", o.decoded ? fmt::format("`{}`", o.msg.method) : "a frame",
                 {{s.shutdownLine(), "shutdown"}, o.evidence()});
    }
    if (is_shutdown && !shutdown_t_) shutdown_t_ = o.t() ? o.t() : 1;
    if (is_shutdown && !end_line_) {
      end_line_ = o.line();
      end_t_ = o.t();
    }
    // RECOV-03: on a producer-enabled connection the first frame after the handshake is recovery/start.
    if (hs.ok && !first_after_hs_checked_) {
      first_after_hs_checked_ = true;
      if (hs.producerEnabled() && !o.isMethod(m::kRecoveryStart) && !is_shutdown)
        out.report("RECOV-03", reports::kBindsEngine,
                   "the first frame after the handshake is not plugin/recovery/start",
                   "plugin/recovery/start first on a producer-enabled connection",
                   o.decoded ? fmt::format("`{}`", o.msg.method) : "a frame", {o.evidence()});
    }
  }

  void initResult(const Observation& o, const ConnectionState& s, FindingSink& out) {
    const json::Value* r = o.msg.result;
    const json::Value* v = member(r, "protocol_version");
    if (v && v->IsString() && str(v) != s.effectiveProfile().version())
      out.report("INIT-10", reports::kBindsPlugin, "the plugin reports another protocol version",
                 fmt::format("\"{}\"", s.effectiveProfile().version()), fmt::format("\"{}\"", str(v)),
                 {o.evidence()});
    const json::Value* caps = member(r, "capabilities");
    if (s.effectiveProfile().id() == protocol::Profile::Id::V006) {
      const json::Value* pse = member(caps, "publish_session_events");
      if (pse && pse->IsBool() && pse->GetBool())
        out.report("SDK-05", reports::kBindsSdk, "the plugin reports publish_session_events:true",
                   "a 0.0.6 SDK always reports false (session publishing is gone, EMIT-16)",
                   "publish_session_events:true", {o.evidence()}, /*advisory=*/true);
    }
    if (const json::Value* res = member(caps, "resources"); res && res->IsBool() && res->GetBool())
      out.report("INIT-25", reports::kBindsSdk, "the plugin reports resources:true",
                 "SDKs report resources:false (resource methods are deferred)", "resources:true", {o.evidence()},
                 /*advisory=*/true);
    if (auto bad = parametersSchemaProblem(r)) {
      out.report("INIT-21", reports::kBindsPlugin, "a tool's parameters are not a usable JSON Schema",
                 "parameters passing draft 2020-12 meta-validation (§6.3 step 6)", *bad, {o.evidence()});
      // TOOL-01 (M, binds the plugin): a declaration's `parameters` is a JSON Schema.
      out.report("TOOL-01", reports::kBindsPlugin, "a tool declaration's parameters are not a JSON Schema",
                 "parameters (JSON Schema)", *bad, {o.evidence()});
    }
    if (auto problem = declarationProblem(r); problem && problem->rule_id != "INIT-20")
      out.report(problem->rule_id, reports::kBindsPlugin, "a tool declaration fails the engine's declaration checks",
                 "non-empty description, snake_case permission_name, primary_resource_param in "
                 "parameters.properties (§6.3 step 6)",
                 fmt::format("{}: {}", problem->path, problem->message), {o.evidence()});
    if (const json::Value* tools = member(r, "tools"); tools && tools->IsArray()) {
      std::unordered_set<std::string_view> names;
      for (const json::Value& t : tools->GetArray()) {
        std::string_view n = str(member(&t, "name"));
        if (!protocol::isSnakeCase(n) || !names.insert(n).second) {
          out.report("INIT-20", reports::kBindsPlugin, "a declared tool name is not snake_case or repeats",
                     "unique snake_case tool names", fmt::format("\"{}\"", n), {o.evidence()});
          break;
        }
      }
    }
  }

  void recoveryStart(const Observation& o, const ConnectionState& s, FindingSink& out) {
    const Handshake& hs = s.handshake();
    if (o.msg.isRequest())
      out.report("RECOV-01", reports::kBindsEngine, "plugin/recovery/start carries an id",
                 "a notification (no id, no response)", fmt::format("id {}", o.msg.id.render()), {o.evidence()});
    if (recovery_start_line_) {
      out.report("RECOV-02", reports::kBindsEngine, "plugin/recovery/start was written again",
                 "exactly once per connection", "a second recovery/start",
                 {{recovery_start_line_, "first"}, o.evidence()});
      return;
    }
    recovery_start_line_ = o.line();
    if (hs.ok && !hs.producerEnabled())
      out.report("RECOV-03", reports::kBindsEngine,
                 "plugin/recovery/start on a connection that is not producer-enabled",
                 "sent only when both sides opted into producer messaging",
                 fmt::format("engine producer_messaging={}, plugin producer_messaging={}", hs.engine_producer,
                             hs.producer),
                 {{hs.result_line, "handshake result"}, o.evidence()});
  }

  void rememberCompletion(const Observation& o) {
    completion_sent_ = true;
    if (completions_.size() >= 1024) return;  // bounded: R4 serves ≤ 32 producer requests at once
    const json::Value* outcome = member(o.msg.params, "outcome");
    completions_[o.msg.id] = outcome ? json::canonical(*outcome) : std::string();
  }

  void completionAnswer(const Observation& o, const ConnectionState& s, FindingSink& out) {
    auto it = completions_.find(o.msg.id);
    if (it == completions_.end()) return;
    std::string outcome = std::move(it->second);
    completions_.erase(it);
    const Handshake& hs = s.handshake();
    bool success = o.msg.kind == wire::MessageKind::Success;
    std::int32_t code = success ? 0 : o.msg.error.code;
    const RequestEvidence ev(o.request->line, "recovery/complete", o);
    if (hs.ok && !hs.producerEnabled()) {
      if (code != wire::kProducerUnavailable)
        out.report("RECOV-17", reports::kBindsEngine, "completion on a connection that is not producer-enabled",
                   "error -32040", success ? "success" : fmt::format("error {}", code), ev);
      return;
    }
    if (!hs.producerEnabled()) return;
    if (!recovery_start_line_ || recovery_start_line_ > o.request->line) {
      if (code != wire::kRecoveryConflict)
        out.report("RECOV-17", reports::kBindsEngine, "completion before plugin/recovery/start was accepted",
                   "error -32048", success ? "success" : fmt::format("error {}", code), ev);
      return;
    }
    if (outcome.empty()) return;
    if (!accepted_outcome_) {
      if (success) {
        accepted_outcome_ = outcome;
        accepted_line_ = o.request->line;
      }
      return;
    }
    bool same = *accepted_outcome_ == outcome;
    if (!same && o.request->line > accepted_line_)
      out.report("RECOV-10", reports::kBindsPlugin,
                 "the plugin completed recovery again with a different outcome (the engine must refuse it)",
                 fmt::format("the accepted outcome {} again, or nothing", *accepted_outcome_),
                 fmt::format("outcome {}", outcome), {{accepted_line_, "accepted completion"}, ev.first(), ev.second()},
                 /*advisory=*/true);
    // Only -32048 contradicts RECOV-10: -32041 (overload) and -32042 (stale) are legitimate at any
    // time and say nothing about the outcome.
    if (same && code == wire::kRecoveryConflict)
      out.report("RECOV-10", reports::kBindsEngine, "repeating the identical recovery outcome was rejected",
                 "success {} for the same outcome", fmt::format("error {}", code), ev);
    if (!same && success)
      out.report("RECOV-10", reports::kBindsEngine, "a different recovery outcome was accepted",
                 fmt::format("error -32048 (first outcome was {})", *accepted_outcome_), "success", ev);
  }

  // SHUT-08: killed by a signal at least the default grace after shutdown/stdin EOF means the plugin
  // did not exit by itself. A configured grace can only be longer than what we assume here when
  // the kill came later, so an earlier kill (shorter grace) is never held against the plugin.
  void exitEvent(const Observation& o, const ConnectionState& s, FindingSink& out) {
    // SHUT-02: after plugin/shutdown the engine closes stdin, then waits the grace. A kill while
    // stdin was never closed breaks step 2. Within kToleranceUs of the notification the tap may
    // have seen the exit before the close (both happen at once in a zero-grace configuration).
    if (s.shutdownLine() && o.ev->signal && !s.stdinEofLine() && !shut02_reported_ &&
        o.t() - shutdown_t_ > kToleranceUs) {
      shut02_reported_ = true;
      out.report("SHUT-02", reports::kBindsEngine, "the plugin was killed but its stdin was never closed",
                 "plugin/shutdown, then stdin closed (EOF), then the grace period",
                 fmt::format("killed by {} with stdin still open", o.ev->signal_name.empty() ? "a signal" : o.ev->signal_name),
                 {{s.shutdownLine(), "shutdown"}, o.evidence()});
    }
    if (!end_line_ || !o.ev->signal) return;
    std::int64_t waited = o.t() - end_t_;
    if (waited >= static_cast<std::int64_t>(protocol::limits::kShutdownGraceMsDefault) * kUs)
      out.report("SHUT-08", reports::kBindsPlugin, "the plugin did not exit after shutdown / stdin EOF",
                 fmt::format("exit within shutdown_grace_ms ({} ms by default)", protocol::limits::kShutdownGraceMsDefault),
                 fmt::format("killed by {} {} ms later", o.ev->signal_name.empty() ? "a signal" : o.ev->signal_name,
                             waited / kUs),
                 {{end_line_, "shutdown / EOF"}, o.evidence()});
  }
};

}  // namespace

std::unique_ptr<Monitor> makeLifecycleMonitor() { return std::make_unique<LifecycleMonitor>(); }

}  // namespace conform::rules
