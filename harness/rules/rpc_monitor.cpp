// harness/rules/rpc_monitor — RPC-*: envelopes (RPC-01/03/04/05 via core/wire/rpc.h), params as
// objects (RPC-11), strict params/result shapes (RPC-12 and the method's own rule, via
// Profile::validate), engine id discipline (RPC-06 unique integers, RPC-07 sequence), answers
// echoing ids with the same JSON type exactly once (RPC-08 plugin, RPC-17 engine), and
// unknown-method handling (RPC-13 engine → -32601, RPC-15 SDK → -32601).
//
// Not judged: unanswered requests at the end of a trace (shutdown, timeouts and kills legitimately
// abandon them, SHUT-09/TOOL-16), RPC-10 ordering (any order is allowed), responses to unknown ids
// when the trace does not start at the handshake (a slice cannot know earlier requests).
#include <map>

#include <fmt/format.h>

#include "harness/rules/monitor.h"

namespace conform::rules {
namespace {

// Engine request ids seen, as merged integer intervals: a conforming counter (RPC-07) keeps this at
// one interval whatever the trace length. Capped; past the cap RPC-06 is no longer judged.
class IdIntervals {
 public:
  static constexpr std::size_t kMaxIntervals = 65'536;
  // false when `v` was already present.
  bool insert(std::int64_t v) {
    auto it = m_.upper_bound(v);  // first interval starting after v
    if (it != m_.begin()) {
      auto prev = std::prev(it);
      if (v <= prev->second) return false;
      if (prev->second != INT64_MAX && v == prev->second + 1) {
        prev->second = v;
        if (it != m_.end() && it->first == v + 1) {
          prev->second = it->second;
          m_.erase(it);
        }
        return true;
      }
    }
    if (it != m_.end() && v != INT64_MAX && it->first == v + 1) {
      std::int64_t hi = it->second;
      m_.erase(it);
      m_.emplace(v, hi);
      return true;
    }
    if (m_.size() >= kMaxIntervals) {
      full_ = true;
      return true;
    }
    m_.emplace(v, v);
    return true;
  }
  bool full() const { return full_; }

 private:
  std::map<std::int64_t, std::int64_t> m_;
  bool full_ = false;
};

std::uint8_t sender(const Observation& o) {
  return o.fromPlugin() ? reports::kBindsPlugin : reports::kBindsEngine;
}

class RpcMonitor : public Monitor {
 public:
  std::string_view name() const override { return "RPC"; }

  void observe(const Observation& o, const ConnectionState& s, FindingSink& out) override {
    if (!o.is_frame) return;
    if (o.envelope_error) {
      const wire::EnvelopeError& e = *o.envelope_error;
      if (e.kind == wire::EnvelopeErrorKind::NotObject) return;  // FRAME-11, frame_monitor
      out.report(e.rule, sender(o), "malformed JSON-RPC envelope (fatal to the receiver)",
                 "a closed JSON-RPC 2.0 envelope (PROTOCOL §3.1)", e.message, {o.evidence()});
      return;
    }
    if (!o.decoded) return;
    const wire::Message& m = o.msg;
    const protocol::Profile& prof = s.effectiveProfile();
    if (m.isRequest() || m.isNotification()) {
      if (!m.params || !m.params->IsObject()) {
        out.report("RPC-11", sender(o), fmt::format("`{}` was sent without an object `params`", m.method),
                   "params is an object ({} when empty)",
                   m.params ? json::typeName(*m.params) : "params absent", {o.evidence()});
      } else if (o.method && o.method->direction == direction(o)) {
        if (auto v = prof.validate(m.method, protocol::Part::Params, *m.params))
          out.report(v->rule_id.empty() ? "RPC-12" : v->rule_id, sender(o),
                     fmt::format("`{}` params do not match their shape", m.method),
                     fmt::format("{} (strict decoding, PROTOCOL §3.3)", o.method->params_type), v->str(),
                     {o.evidence()});
      }
      if (m.isRequest() && o.fromEngine()) engineId(o, s, out);
      return;
    }
    // Responses.
    bool plugin_answers = o.fromPlugin();
    const char* rule = plugin_answers ? "RPC-08" : "RPC-17";
    std::uint8_t who = plugin_answers ? reports::kBindsPlugin : reports::kBindsEngine;
    switch (o.match) {
      case Match::WrongIdType:
        out.report(rule, who, "the response id has another JSON type than the request id",
                   fmt::format("id {} (as sent at line {})", o.request->id.render(), o.request->line),
                   fmt::format("id {}", m.id.render()), {{o.request->line, "request"}, o.evidence()});
        return;
      case Match::AlreadyAnswered:
        out.report(rule, who, "a request was answered twice", "exactly one response per request",
                   fmt::format("a second response with id {}", m.id.render()), {o.evidence()});
        return;
      case Match::Unknown:
        // Only when the trace holds the whole connection and tracking never gave up.
        if (!s.handshake().request_line || s.untracked(plugin_answers ? Dir::EngineToPlugin : Dir::PluginToEngine))
          return;
        out.report(rule, who, "a response answers no outstanding request",
                   "responses only to requests, echoing their id",
                   fmt::format("response with id {} that matches no request", m.id.render()), {o.evidence()});
        return;
      case Match::Matched:
        break;
      default:
        return;
    }
    const RequestInfo& req = *o.request;
    if (!req.method || req.method->direction == direction(o)) {  // a request travels opposite
      // RPC-13 (engine) / RPC-15 (SDK): unknown requests get -32601.
      bool ok = m.kind == wire::MessageKind::Error && m.error.code == wire::kMethodNotFound;
      if (!ok)
        out.report(plugin_answers ? "RPC-15" : "RPC-13", plugin_answers ? reports::kBindsSdk : reports::kBindsEngine,
                   fmt::format("unknown method `{}` was not answered with -32601", req.method_name()),
                   "error response with code -32601",
                   m.kind == wire::MessageKind::Error ? fmt::format("error code {}", m.error.code)
                                                      : std::string("a success response"),
                   {{req.line, "request"}, o.evidence()});
      return;
    }
    if (m.kind == wire::MessageKind::Success && m.result) {
      if (auto v = prof.validate(req.method->name, protocol::Part::Result, *m.result))
        out.report(v->rule_id.empty() ? "RPC-12" : v->rule_id, who,
                   fmt::format("the `{}` result does not match its shape", req.method->name),
                   fmt::format("{} (strict decoding, PROTOCOL §3.3)", req.method->result_type), v->str(),
                   {{req.line, "request"}, o.evidence()});
    }
  }

 private:
  IdIntervals ids_;
  std::optional<std::int64_t> next_expected_;
  bool seq_reported_ = false;

  static protocol::Direction direction(const Observation& o) {
    return o.fromPlugin() ? protocol::Direction::PluginToEngine : protocol::Direction::EngineToPlugin;
  }

  void engineId(const Observation& o, const ConnectionState&, FindingSink& out) {
    const wire::RpcId& id = o.msg.id;
    if (!id.isInteger()) {
      out.report("RPC-06", reports::kBindsEngine, "an engine request id is not an integer",
                 "integer ids, unique within the connection", fmt::format("id {}", id.render()), {o.evidence()});
      return;
    }
    if (!ids_.full() && !ids_.insert(id.integer()))
      out.report("RPC-06", reports::kBindsEngine, "an engine request id was reused",
                 "integer ids, unique within the connection",
                 fmt::format("id {} used again", id.integer()), {o.evidence()});
    // RPC-07 [impl]: initialize = 1, then 2, 3, … from one counter.
    std::int64_t want = next_expected_.value_or(1);
    if (!seq_reported_ && id.integer() != want) {
      seq_reported_ = true;
      out.report("RPC-07", reports::kBindsEngine, "engine request ids do not follow 1, 2, 3, …",
                 fmt::format("id {}", want), fmt::format("id {}", id.integer()), {o.evidence()});
    }
    if (id.integer() != INT64_MAX) next_expected_ = id.integer() + 1;
  }
};

}  // namespace

std::unique_ptr<Monitor> makeRpcMonitor() { return std::make_unique<RpcMonitor>(); }

}  // namespace conform::rules
